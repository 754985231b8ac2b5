"""session-memory: saves the conversation when /new or /reset clears it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interlock.events import Event
from interlock.policies.session_memory import SessionMemory

_memory = SessionMemory()


def configure(options: dict[str, Any]) -> None:
    """Options: directory (default $INTERLOCK_HOME/memory), max_messages."""
    global _memory
    kwargs: dict[str, Any] = {}
    if "directory" in options:
        kwargs["directory"] = Path(options["directory"])
    if "max_messages" in options:
        kwargs["max_messages"] = int(options["max_messages"])
    _memory = SessionMemory(**kwargs)


def handle(event: Event) -> None:
    _memory.save(event)
