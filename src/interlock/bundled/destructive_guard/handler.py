"""destructive-guard: blocks commands that would wreck the machine or the repo."""

from __future__ import annotations

import os
from typing import Any

from interlock.engine.decisions import Decision, block
from interlock.engine.errors import ConfigError
from interlock.events import Event
from interlock.policies import destructive
from interlock.policies.git_head import current_branch
from interlock.policies.guard_model import GuardOptions, OptionError
from interlock.policies.sandbox import TERMINAL_TOOLS
from interlock.shell.analyse import require_parser

__all__ = ["configure", "current_branch", "handle"]

_options: dict[str, Any] = {}
_guard: GuardOptions | None = None


def configure(options: dict[str, Any]) -> None:
    """Options: see HOOK.md (home, protected_branches, tools, one switch per category,
    find_name_filter, sql_delete_without_where, when_unsure)."""
    global _guard
    require_parser()  # a missing parser is a clear load error, not a blocked call later
    try:
        guard = GuardOptions.from_mapping(options, home=os.path.expanduser("~"),
                                          current_branch=current_branch, ignore=("tools",))
    except OptionError as exc:
        raise ConfigError(f"destructive-guard: {exc}", field="options",
                          fix="see docs/guard.md for the guard's options") from None
    _options.clear()
    _options.update(options)
    _guard = guard


def handle(event: Event) -> Decision | None:
    tools = _options.get("tools", TERMINAL_TOOLS)
    if getattr(event, "tool_name", None) not in tools:
        return None
    command = event.args.get("command")  # type: ignore[attr-defined]
    if not isinstance(command, str) or not command.strip():
        return None
    guard = _guard or GuardOptions(home=os.path.expanduser("~"), current_branch=current_branch)
    finding = destructive.check_cached(command, event.cwd, guard)
    if finding is None:
        return None
    return block(f"destructive command blocked ({finding}); to allow it, set the "
                 f"destructive-guard option {finding.option}",
                 hint="run a narrower command, or ask the user to run it themselves")
