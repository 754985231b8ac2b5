"""What every bridge shares: the evaluated result, the reply, tool names.

Standard library only; this is on the bridge's fast path.
"""

from __future__ import annotations

import json

from interlock.executors.toolnames import to_ours
from interlock.hosts.bridge._errors import BridgeError as BridgeError  # re-exported

# typing and dataclasses are not imported at run time: together they cost the
# bridge ~10 ms at start-up (dataclasses pulls in inspect and ast).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any


DECISIONS = frozenset({"none", "approve", "ask", "retry", "respond", "skip", "block", "stop",
                       "modify"})
"""Every decision an outcome can carry (``Verdict``; ``modify`` for a bare rewrite)."""


class Reply:
    """What a bridge writes back to its host."""

    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, stdout: str = "", stderr: str = "", code: int = 0) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.code = code

    def __repr__(self) -> str:
        return f"Reply(stdout={self.stdout!r}, stderr={self.stderr!r}, code={self.code})"


class Result:
    """An outcome, as ``Outcome.to_dict(event)`` gives it (local or over the socket)."""

    __slots__ = ("changes", "context", "decision", "event", "hint", "hook", "reason", "value")

    def __init__(self, event: str, decision: str = "none", reason: str | None = None,
                 hint: str | None = None, hook: str | None = None,
                 changes: dict[str, Any] | None = None, value: Any = None,
                 context: tuple[tuple[str, str], ...] = ()) -> None:
        self.event = event
        self.decision = decision
        self.reason = reason
        self.hint = hint
        self.hook = hook
        self.changes: dict[str, Any] = changes or {}
        self.value = value
        self.context = context

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """The outcome the server (or the in-process engine) gave; BridgeError unless
        every field the bridge acts on is present and of its type.

        An answer the bridge does not fully understand is a deny, never "no
        opinion": a missing or unknown decision (``"deny"``, ``"BLOCK"``) would
        otherwise fall through every branch of a host's ``answer`` to "allow".
        """
        try:
            decision = data["decision"]
            if not isinstance(decision, str) or decision not in DECISIONS:
                raise TypeError(f"unknown decision {decision!r} (known: "
                                f"{', '.join(sorted(DECISIONS))})")
            event = data["event"]
            if not isinstance(event, str) or not event:
                raise TypeError(f"event {event!r} is not an event name")
            texts = {k: data.get(k) for k in ("reason", "hint", "hook")}
            for key, value in texts.items():
                if value is not None and not isinstance(value, str):
                    raise TypeError(f"{key} is not a string")
            context = data.get("context") or ()
            if not isinstance(context, list | tuple):
                raise TypeError("context is not a list")
            ctx = []
            for item in context:
                if not (isinstance(item.get("hook"), str) and isinstance(item.get("text"), str)):
                    raise TypeError("a context item lacks its hook or text")
                ctx.append((item["hook"], item["text"]))
            changes = data.get("changes") or {}
            if not isinstance(changes, dict):
                raise TypeError("changes is not an object")
            return cls(event=event, decision=decision, reason=texts["reason"],
                       hint=texts["hint"], hook=texts["hook"], changes=changes,
                       value=data.get("value"), context=tuple(ctx))
        except KeyError as exc:
            raise BridgeError(f"the server's answer is malformed: it has no {exc} field; "
                              "denied rather than guessed") from None
        except (TypeError, AttributeError) as exc:
            raise BridgeError(f"the server's answer is malformed: {exc}; "
                              "denied rather than guessed") from None

    @property
    def ends(self) -> bool:
        return self.decision in ("block", "stop", "skip")

    def block_text(self) -> str:
        """The reason a host shows for a block (never empty: Codex requires text)."""
        if self.decision == "respond":
            text = "answered by policy without running: " + json.dumps(self.value, default=str)
        else:
            text = self.reason or f"{self.decision} by policy"
        if self.hint:
            text += f" (hint: {self.hint})"
        who = f" [{self.hook}]" if self.hook else ""
        return f"Interlock{who}: {text}"

    def context_text(self, cap: int = 10_000) -> str:
        # Same delimiters as Outcome.context_text(); rebuilt here so the
        # bridge's fast path does not import the engine.
        parts = []
        for hook, text in self.context:
            if len(text) > cap:
                text = text[:cap] + f"... [truncated {len(text) - cap} characters]"
            parts.append(f'<hook-context hook="{hook}">\n{text}\n</hook-context>')
        return "\n".join(parts)


def logs_off_stderr() -> None:
    """Send the engine's log lines to the state dir's ``bridge.log``, never to stderr.

    Hosts read a hook's stderr as its reason (Claude's and Codex's exit 2), so a
    warning logged while hooks load ("approving 1 hook(s) because of
    --accept-hooks ...") would reach the model as policy. In process only: the
    fast path imports no logging. Nor does a call in which nothing imports it
    (Interlock's loggers import it at their first line): the handler goes on
    then, right after logging is imported, before anything can log.
    """
    import sys

    if "logging" in sys.modules:
        _log_to_file(sys.modules["logging"])
    else:
        from interlock.engine.after_import import after_import

        after_import("logging", _log_to_file)


def _log_to_file(_logging: ModuleType) -> None:
    import logging  # imported already

    from interlock.store.paths import state_dir

    handler: logging.Handler
    try:
        path = state_dir() / "bridge.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    except OSError:
        handler = logging.NullHandler()
    handler.set_name("interlock-bridge-log")
    # On the handler, not the loggers: a record propagated up from a child
    # logger (a hook library's "interlock.x", asyncio's) skips its parents'
    # filters, never the handler's (docs/reliability.md, Redaction).
    from interlock.engine.logs import LOG_FILTER

    handler.addFilter(LOG_FILTER)
    # asyncio's own lines too: a check cut off while its subprocess was still
    # being created can outlive the loop, and asyncio says so when it goes.
    for name in ("interlock", "asyncio"):
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if h.get_name() == "interlock-bridge-log"]:
            logger.removeHandler(old)  # called again in the same process: replace, not stack
            old.close()
        logger.addHandler(handler)
        logger.propagate = False


def redact_reasons(record: dict[str, Any]) -> None:
    """Block reasons and hints headed for a model lose their secrets
    (docs/reliability.md, Redaction).

    Done where the outcome is made (the server, or the in-process path), so the
    bridge's fast path never imports the redaction patterns.
    """
    from interlock.engine.redact import redact

    for key in ("reason", "hint"):
        if isinstance(record.get(key), str):
            record[key] = redact(record[key])


def unapplied(result: Result, fields: tuple[str, ...]) -> str | None:
    """A deny reason when policy changed fields this host cannot apply."""
    extra = sorted(set(result.changes) - set(fields))
    if not extra:
        return None
    return (f"Interlock: policy changed {', '.join(extra)}, which this agent's hooks cannot "
            f"apply; denied rather than run unchanged")


def merge_covers(old: Any, new: Any) -> bool:
    """True when merging ``new`` into ``old`` equals ``new`` (hosts that merge args)."""
    return isinstance(old, dict) and isinstance(new, dict) and set(old) <= set(new)


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def as_text(value: Any) -> str:
    """A tool result as the text a host shows the model in its place (never empty)."""
    text = value if isinstance(value, str) else dumps(value)
    return text or "[tool output removed by policy]"


def tool_name(system: str, name: Any) -> str:
    """Interlock's name for the host's tool, so one matcher such as ``terminal``
    covers every agent's shell; arguments keep the host's shape."""
    return to_ours(system, str(name or ""))


def common_fields(payload: dict[str, Any], platform: str) -> dict[str, Any]:
    out: dict[str, Any] = {"platform": platform}
    for ours, theirs in (("session_id", "session_id"), ("cwd", "cwd"),
                         ("transcript_path", "transcript_path"), ("turn_id", "turn_id")):
        value = payload.get(theirs)
        if isinstance(value, str):
            out[ours] = value
    return out


def as_args(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):  # Cursor sends MCP tool_input as a JSON string
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"input": value}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {} if value is None else {"input": value}
