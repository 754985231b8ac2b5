"""destructive-guard: blocks commands that would wreck the machine or the repo."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from interlock._decisions import Decision, block
from interlock.events import Event
from interlock.policies import destructive
from interlock.policies.sandbox import TERMINAL_TOOLS
from interlock.policies.shell import require_parser

_options: dict[str, Any] = {}


def configure(options: dict[str, Any]) -> None:
    """Options: home, protected_branches (globs), tools (terminal tool names)."""
    require_parser()  # a missing parser is a clear load error, not a blocked call later
    _options.clear()
    _options.update(options)


def current_branch(cwd: str) -> str | None:
    """The branch checked out in ``cwd`` (None when unknown: then it counts as protected)."""
    if not cwd:
        return None
    try:
        proc = subprocess.run(["git", "-C", cwd, "symbolic-ref", "--quiet", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def handle(event: Event) -> Decision | None:
    tools = _options.get("tools", TERMINAL_TOOLS)
    if getattr(event, "tool_name", None) not in tools:
        return None
    command = event.args.get("command")  # type: ignore[attr-defined]
    if not isinstance(command, str) or not command.strip():
        return None
    finding = destructive.check(
        command, home=_options.get("home") or os.path.expanduser("~"), cwd=event.cwd,
        protected_branches=_options.get("protected_branches", destructive.PROTECTED_BRANCHES),
        current_branch=current_branch)
    if finding is None:
        return None
    return block(f"destructive command blocked ({finding})",
                 hint="run a narrower command, or ask the user to run it themselves")
