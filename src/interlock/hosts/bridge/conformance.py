"""The dialect conformance table: what each agent gets for each Interlock decision.

Generated, never written by hand: every host event comes from the catalog's
alias columns and the bridge module's own tables (``UNMAPPED_OBSERVE``,
``UNMAPPED_GATE``, ``NO_EFFECT``, ``DENY_IGNORED``), and every cell is the
bridge's real answer to that decision (``answer()`` run on a synthetic
result), classified:

- **supported**: the host's own field for the decision;
- **expressed as ...**: another field the host applies with the same effect
  (a Codex result rewrite as a block whose reason is the new result);
- **denied**: the host cannot apply it and honours a deny, so the call does
  not go on unchanged;
- **refused at install**: the host ignores every answer there, so
  ``bridge install`` refuses a policy that would rewrite it;
- **no effect**: the host reads nothing there (observe events).

docs/dialects.md holds :func:`markdown`'s output; a test keeps them equal.
"""

from __future__ import annotations

import json
from typing import Any

from interlock.engine.catalog import SPECS, Kind, names_in
from interlock.engine.decisions import Verdict
from interlock.hosts.bridge import HOSTS, host
from interlock.hosts.bridge._common import Reply, Result

# The fields through which each host applies a decision natively; anything else
# a bridge writes for that decision is "expressed as".
_NATIVE: dict[str, dict[str, set[str]]] = {
    "claude": {"block": {"permissionDecision", "decision", "behavior"},
               "ask": {"permissionDecision"}, "approve": {"permissionDecision", "behavior"},
               "stop": {"continue"}, "context": {"additionalContext"},
               "args": {"updatedInput"}, "result": {"updatedToolOutput"},
               "initial_message": {"initialUserMessage"}, "watch_paths": {"watchPaths"}},
    "codex": {"block": {"permissionDecision", "decision", "behavior", "continue"},
              "approve": {"permissionDecision", "behavior"}, "stop": {"continue"},
              "context": {"additionalContext"}, "args": {"updatedInput"}},
    "gemini": {"block": {"decision"}, "ask": {"decision"}, "stop": {"continue"},
               "context": {"additionalContext"}, "args": {"tool_input"}},
    "cursor": {"block": {"permission", "continue", "followup_message"},
               "ask": {"permission"}, "approve": {"permission"}},
    "hermes": {"block": {"decision"}, "context": {"context"}},
    "moltis": {"block": {"exit 1"}, "args": {"data"}, "result": {"data"},
               "text": {"data"}, "content": {"data"}},
}

_SAMPLE: dict[str, Any] = {"args": {"command": "ls"}, "result": "[redacted]",
                           "text": "hi", "content": "hi", "initial_message": "hi",
                           "watch_paths": ["a"], "messages": [], "params": {},
                           "system_prompt": "s", "instructions": "i", "summary": "s",
                           "tool_calls": [], "task": "t", "permission_updates": [],
                           "model": "m", "error": "e", "tools": ["read_file"]}


def _keys(reply: Reply) -> set[str]:
    out: set[str] = set()
    try:
        body = json.loads(reply.stdout) if reply.stdout.strip() else {}
    except ValueError:
        return out

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                out.add(k)
                walk(v)

    walk(body)
    if reply.code:
        out.add(f"exit {reply.code}")
    return out


def _shape(reply: Reply) -> str:
    text = reply.stdout.strip()
    if len(text) > 70:
        text = text[:67] + "..."
    code = f"exit {reply.code}"
    return f"`{text}` {code}" if text else code


def _rewrite(mod: Any, host_event: str, event: str, field: str) -> Reply:
    result = Result(event, "modify", changes={field: _SAMPLE.get(field, "x")})
    reply: Reply = mod.answer(host_event, {"tool_input": {"command": "ls"}}, result)
    return reply


def applies(system: str, host_event: str, event: str, field: str) -> bool:
    """Whether ``system``'s bridge hands a rewrite of ``field`` back on ``host_event``
    (rather than a deny saying it cannot: interlock.hosts.bridge._common.unapplied)."""
    reply = _rewrite(host(system), host_event, event, field)
    return "cannot apply" not in reply.stdout + reply.stderr


def _cell(system: str, mod: Any, host_event: str, event: str, what: str) -> str:
    native = _NATIVE.get(system, {})
    ignored = host_event in getattr(mod, "DENY_IGNORED", ())
    if what in _SAMPLE:
        reply = _rewrite(mod, host_event, event, what)
        if not applies(system, host_event, event, what):
            return "refused at install" if ignored else f"denied: {_shape(reply)}"
        wanted = native.get(what, set())
    elif what == "context":
        later = getattr(mod, "CONTEXT_CARRIED", {}).get(host_event)
        if later is not None:
            return f"carried to the {later} answer of the same call"
        reply = mod.answer(host_event, {}, Result(event, "none", context=(("h", "note"),)))
        read = getattr(mod, "CONTEXT_READ", None)
        if "note" not in reply.stdout or (read is not None and host_event not in read):
            return "dropped (the host has no channel for it)"
        wanted = native.get("context", set())
    else:
        result = Result(event, what, reason="why", value="v" if what == "respond" else None)
        reply = mod.answer(host_event, {"tool_input": {"command": "ls"}}, result)
        if ignored:
            return ("expressed as context" if '"context"' in reply.stdout
                    else "no effect (the host ignores it here)")
        wanted = native.get("block" if what in ("respond", "skip") else what, set())
    if not reply.stdout.strip() and not reply.code:
        return "no effect"
    if _keys(reply) & wanted:
        return f"supported: {_shape(reply)}"
    return f"expressed as {_shape(reply)}"


def _decisions(spec: Any) -> list[str]:
    out = [v.value for v in sorted(spec.accepts, key=lambda v: v.value)
           if v not in (Verdict.MODIFY, Verdict.RETRY)]
    out.append("stop")
    out += list(spec.mutable) if Verdict.MODIFY in spec.accepts else []
    if spec.context:
        out.append("context")
    return out


def rows(system: str) -> list[tuple[str, str, str, str]]:
    """(host event, Interlock event, decision or field, status) for one host."""
    mod = host(system)
    out: list[tuple[str, str, str, str]] = []
    for spec in SPECS:
        for host_event in names_in(system, spec):
            if spec.kind is Kind.OBSERVE:
                out.append((host_event, spec.name, "(observe)", "no effect"))
                continue
            for what in _decisions(spec):
                label = f"modify {what}" if what in spec.mutable else what
                out.append((host_event, spec.name, label,
                            _cell(system, mod, host_event, spec.name, what)))
    for host_event in sorted(mod.UNMAPPED_OBSERVE):
        out.append((host_event, "none", "(any)", "no effect"))
    for host_event in sorted(mod.UNMAPPED_GATE):
        out.append((host_event, "none", "(any)", "denied: " + _shape(mod.deny(host_event, "x"))))
    return out


def markdown() -> str:
    """The conformance section of docs/dialects.md."""
    lines = ["## Conformance", "",
             "Generated by `interlock.hosts.bridge.conformance` from the catalog and each bridge's",
             "tables; `tests/executors/dialects/test_dialect_conformance.py` keeps this "
             "section equal to it.",
             "Each cell is the bridge's real answer: **supported** (the host's own field),",
             "**expressed as** (another field the host applies to the same effect),",
             "**denied** (the host cannot apply it but honours a deny), **refused at",
             "install** (the host ignores every answer there: `bridge install` refuses a",
             "policy that rewrites it), **no effect** (the host reads nothing there)."]
    for system in HOSTS:
        lines += ["", f"### {system}", "", "| host event | Interlock event | decision | status |",
                  "|---|---|---|---|"]
        for host_event, event, what, status in rows(system):
            cell = status.replace("|", "\\|")
            lines.append(f"| {host_event} | {event} | {what} | {cell} |")
    return "\n".join(lines)
