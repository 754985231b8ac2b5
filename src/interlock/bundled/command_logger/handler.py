"""command-logger: every slash command as a JSON line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interlock.events import Event
from interlock.policies.command_logger import CommandLogger

_logger = CommandLogger()


def configure(options: dict[str, Any]) -> None:
    """Options: path (default $INTERLOCK_HOME/logs/commands.jsonl)."""
    global _logger
    _logger = CommandLogger(Path(options["path"])) if "path" in options else CommandLogger()


def handle(event: Event) -> None:
    _logger.record(event)
