"""git-checkpoint: snapshot the working tree before a tool writes files."""

from __future__ import annotations

from typing import Any

from interlock.events import Event
from interlock.policies.checkpoint import WRITING_TOOLS, Checkpointer

_checkpointer = Checkpointer()


def configure(options: dict[str, Any]) -> None:
    """Options: tools (names of file-writing tools)."""
    global _checkpointer
    _checkpointer = Checkpointer(tools=tuple(options.get("tools", WRITING_TOOLS)))


def handle(event: Event) -> None:
    _checkpointer.check(event)
