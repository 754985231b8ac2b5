"""destructive-guard: blocks commands that would wreck the machine or the repo."""

from __future__ import annotations

import os
from typing import Any

from interlock._decisions import Decision, block
from interlock.events import Event
from interlock.policies import destructive
from interlock.policies.sandbox import TERMINAL_TOOLS

_options: dict[str, Any] = {}


def configure(options: dict[str, Any]) -> None:
    """Options: home, protected_branches (globs), tools (terminal tool names)."""
    _options.clear()
    _options.update(options)


def handle(event: Event) -> Decision | None:
    tools = _options.get("tools", TERMINAL_TOOLS)
    if getattr(event, "tool_name", None) not in tools:
        return None
    command = event.args.get("command")  # type: ignore[attr-defined]
    if not isinstance(command, str) or not command.strip():
        return None
    finding = destructive.check(
        command, home=_options.get("home") or os.path.expanduser("~"), cwd=event.cwd,
        protected_branches=_options.get("protected_branches", destructive.PROTECTED_BRANCHES))
    if finding is None:
        return None
    return block(f"destructive command blocked ({finding})",
                 hint="run a narrower command, or ask the user to run it themselves")
