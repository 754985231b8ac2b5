"""Secret redaction as a modifier: tool args, tool results, stored results,
outbound messages and outgoing model messages lose their secrets before they
go anywhere. The detection itself is :mod:`interlock.engine.redact` (one module for
every place Interlock redacts).
"""

from __future__ import annotations

from typing import Any

from interlock.engine.decisions import Decision, modify
from interlock.engine.redact import redact, redact_data
from interlock.events import Event

# event -> the payload field this policy rewrites
FIELDS: dict[str, str] = {
    "before_tool_call": "args",
    "after_tool_call": "result",
    "tool_result_persist": "result",
    "before_message_send": "content",
    "before_llm_call": "messages",
}


def redacted(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else redact_data(value)


def check(event: Event) -> Decision | None:
    """``modify`` with the redacted field when it held a secret, else None."""
    name = FIELDS.get(event.name)
    if name is None:
        return None
    value = getattr(event, name)
    clean = redacted(value)
    if clean == value:
        return None
    return modify(**{name: clean})
