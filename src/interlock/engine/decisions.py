"""Decisions: the values hooks return, built by small constructors.

``None`` means "no opinion", and only that. Every other answer is a
:class:`Decision`; ``context`` rides along with any of them.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec


class Verdict(enum.StrEnum):
    NONE = "none"
    APPROVE = "approve"
    ASK = "ask"
    RETRY = "retry"
    RESPOND = "respond"
    SKIP = "skip"
    BLOCK = "block"
    STOP = "stop"
    MODIFY = "modify"


# The merge order (docs/engine.md, Phases of a gate event):
#   stop > block > skip > respond > ask > approve > none
# retry is accepted only by llm_error / tool_error, which accept none of
# respond/ask/approve, so its place between respond and ask never decides
# anything; it is written down so the order is total. modify is not ranked:
# its changes are applied in the modify phase and carried in the outcome.
RANK: dict[Verdict, int] = {
    Verdict.NONE: 0,
    Verdict.MODIFY: 0,
    Verdict.APPROVE: 1,
    Verdict.ASK: 2,
    Verdict.RETRY: 3,
    Verdict.RESPOND: 4,
    Verdict.SKIP: 5,
    Verdict.BLOCK: 6,
    Verdict.STOP: 7,
}
ENDING = frozenset({Verdict.SKIP, Verdict.BLOCK, Verdict.STOP})
"""Decisions that end the event at once."""


class Decision(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One hook's answer."""

    verdict: Verdict
    """What the hook decided."""
    reason: str | None = None
    """Why; for block it is shown to the model (redacted), for stop to the user."""
    hint: str | None = None
    """For block: what the model could do instead."""
    changes: dict[str, Any] | None = None
    """For modify: field name -> new whole value."""
    value: Any = None
    """For respond: the value that replaces the action's result."""
    context: str | None = None
    """Text to add to the conversation (where depends on the event)."""

    def to_wire(self) -> dict[str, Any]:
        """The native wire contract v1 answer shape."""
        out: dict[str, Any] = {}
        if self.verdict is not Verdict.NONE:
            out["decision"] = self.verdict.value
        if self.reason is not None:
            out["reason"] = self.reason
        if self.hint is not None:
            out["hint"] = self.hint
        if self.changes is not None:
            out["changes"] = self.changes
        if self.verdict is Verdict.RESPOND:
            out["value"] = self.value
        if self.context is not None:
            out["context"] = self.context
        return out


# The helpers below run inside hooks on every dispatch: read the members once
# (an enum class attribute lookup costs ~65 ns on Python 3.11).
_BLOCK, _MODIFY, _APPROVE, _ASK = Verdict.BLOCK, Verdict.MODIFY, Verdict.APPROVE, Verdict.ASK
_RESPOND, _SKIP, _STOP = Verdict.RESPOND, Verdict.SKIP, Verdict.STOP
_RETRY, _NONE = Verdict.RETRY, Verdict.NONE


def block(reason: str = "", hint: str | None = None, *, context: str | None = None) -> Decision:
    """Stop the action; the reason goes back to the model (or the sender)."""
    return Decision(verdict=_BLOCK, reason=reason, hint=hint, context=context)


def modify(*, context: str | None = None, **fields: Any) -> Decision:
    """Replace the named payload fields whole. Only modifier hooks may return it."""
    return Decision(verdict=_MODIFY, changes=fields, context=context)


def approve(reason: str | None = None, *, context: str | None = None) -> Decision:
    """Allow without asking a person (skips permission_request)."""
    return Decision(verdict=_APPROVE, reason=reason, context=context)


def ask(reason: str | None = None, *, context: str | None = None) -> Decision:
    """Send the action to a person; where none can answer, it is a block."""
    return Decision(verdict=_ASK, reason=reason, context=context)


def respond(value: Any, *, context: str | None = None) -> Decision:
    """Answer in the action's place (a tool result, a reply) without running it."""
    return Decision(verdict=_RESPOND, value=value, context=context)


def skip(reason: str | None = None) -> Decision:
    """Drop the event's subject silently (e.g. ignore an inbound message)."""
    return Decision(verdict=_SKIP, reason=reason)


def stop(reason: str) -> Decision:
    """End the run; the reason goes to the user. Accepted by every gate event."""
    return Decision(verdict=_STOP, reason=reason)


def retry(instructions: str | None = None, *, context: str | None = None) -> Decision:
    """Try the failed call again (llm_error, tool_error), through the gates again."""
    return Decision(verdict=_RETRY, reason=instructions, context=context)


def context(text: str) -> Decision:
    """No opinion on the action, but add this text to the conversation."""
    return Decision(verdict=_NONE, context=text)


def decode_wire(answer: Any) -> Decision | None:
    """Decode a native wire-contract answer object; raises ValueError if malformed."""
    if not isinstance(answer, dict):
        raise ValueError(f"answer must be a JSON object, got {type(answer).__name__}")
    version = answer.get("contract_version", 1)
    if not isinstance(version, int) or version > 1:
        raise ValueError(f"answer has contract_version {version!r}; this engine speaks 1")
    unknown = set(answer) - {"decision", "reason", "hint", "changes", "value", "context",
                             "contract_version"}
    if unknown:
        raise ValueError(f"unknown answer field(s) {sorted(unknown, key=str)}")
    ctx = answer.get("context")
    if ctx is not None and not isinstance(ctx, str):
        raise ValueError("'context' must be a string")
    raw = answer.get("decision")
    if raw is None:
        if len(set(answer) - {"contract_version", "context"}) != 0:
            raise ValueError("an answer with fields needs a 'decision'")
        return None if ctx is None else context(ctx)
    try:
        verdict = Verdict(raw)
    except ValueError:
        raise ValueError(f"unknown decision {raw!r}") from None
    reason = answer.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ValueError("'reason' must be a string")
    hint = answer.get("hint")
    if hint is not None and not isinstance(hint, str):
        raise ValueError("'hint' must be a string")
    changes = answer.get("changes")
    if verdict is Verdict.MODIFY:
        if not isinstance(changes, dict) or not changes:
            raise ValueError("'modify' needs a non-empty 'changes' object")
    elif changes is not None:
        raise ValueError("'changes' goes only with decision 'modify'")
    if verdict is Verdict.RESPOND and "value" not in answer:
        raise ValueError("'respond' needs a 'value'")
    return Decision(verdict=verdict, reason=reason, hint=hint, changes=changes,
                    value=answer.get("value"), context=ctx)
