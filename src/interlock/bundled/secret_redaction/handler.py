"""secret-redaction: secrets never leave in tool args, results or messages."""

from __future__ import annotations

from typing import Any

from interlock.engine.decisions import Decision
from interlock.events import Event
from interlock.policies import redaction


def configure(options: dict[str, Any]) -> None:
    """No options: detection is interlock.engine.redact's, shared with audit and logs."""


def handle(event: Event) -> Decision | None:
    return redaction.check(event)
