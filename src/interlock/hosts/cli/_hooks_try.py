"""`interlock hooks test`: the payload it fires (read, or shown as an example) and
which configured hooks did not run on it, and why."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_EXAMPLE_ARGS = {"terminal": {"command": "ls -la"}, "read_file": {"path": "README.md"},
                 "write_file": {"path": "notes.txt", "content": "hello"},
                 "edit_file": {"path": "notes.txt", "old": "hello", "new": "hi"}}


def example_payload(event: str, tool: str | None = None) -> dict[str, Any]:
    """Every field of ``event``'s payload with an example value (required fields) or
    its default, as `hooks test --payload-file` reads it."""
    from interlock.config.doctor import sample_event
    from interlock.engine.catalog import BY_NAME
    from interlock.engine.errors import ConfigError

    spec = BY_NAME.get(event)
    if spec is None:
        from difflib import get_close_matches

        near = get_close_matches(event, list(BY_NAME), n=1)
        raise ConfigError(f"unknown event {event!r}", field="EVENT",
                          fix=f"did you mean {near[0]!r}?" if near
                          else "see `interlock events` for the names")
    sample = sample_event(event, tool=tool).to_dict()
    out: dict[str, Any] = {}
    for f in spec.fields:
        out[f.name] = sample.get(f.name) if f.required else f.default
        if f.name == "args" and isinstance(out.get("tool_name"), str):
            out["args"] = dict(_EXAMPLE_ARGS.get(out["tool_name"], {}))
    return out


def read_payload(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (``-``: standard input), or a ConfigError naming it."""
    from interlock.engine.errors import ConfigError

    where = "<stdin>" if str(path) == "-" else str(path)
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        payload = json.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read a JSON payload: {exc}", file=where,
                          fix="write one JSON object of payload fields; "
                              "`interlock hooks test EVENT --example` prints one") from None
    if not isinstance(payload, dict):
        raise ConfigError("the payload must be a JSON object", file=where,
                          fix="`interlock hooks test EVENT --example` prints one to start from")
    return payload


def not_run(host: Any, event: Any, ran: set[str]) -> list[tuple[str, str]]:
    """(hook, why) for each configured hook that did not run on ``event``."""
    spec = event.spec
    subject = getattr(event, spec.subject) if spec.subject is not None else None
    if subject is not None and spec.name == "command":
        subject = f"command:{subject}"
    live = {h.qualified_name: h for h in host.engine.hooks}
    out = []
    for e in host.registry.hooks:
        name = e.qualified_name
        if name in ran:
            continue
        hook = live.get(name)
        if spec.name not in e.declared.events:
            why = f"listens to {', '.join(e.declared.events)}, not {spec.name}"
        elif e.shadowed_by:
            why = f"shadowed by {e.shadowed_by}"
        elif not e.enabled:
            why = f"disabled (interlock hooks enable {name})"
        elif not e.eligible:
            why = f"not eligible here: {e.why}"
        elif e.needs_approval and not e.approved:
            why = f"not approved (interlock hooks approve {name})"
        elif hook is not None and hook.matcher is not None \
                and not hook.matcher.matches(event, subject):
            why = f"matcher {hook.matcher.text!r} does not match {subject!r}"
        else:
            why = "not reached: an earlier hook decided the event"
        out.append((name, why))
    return out
