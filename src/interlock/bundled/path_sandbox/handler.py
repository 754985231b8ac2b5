"""path-sandbox: file tools and terminal commands stay inside the allowed roots."""

from __future__ import annotations

from typing import Any

from interlock.engine.decisions import Decision, block
from interlock.events import Event
from interlock.policies.sandbox import PATH_KEYS, TERMINAL_TOOLS, Sandbox, file_paths
from interlock.shell.analyse import require_parser

_options: dict[str, Any] = {}
_sandbox: Sandbox | None = None


def configure(options: dict[str, Any]) -> None:
    """Options: allow, deny (roots), defaults, deny_names, allow_names, home,
    deny_other_homes, tools (terminal tool names), path_keys."""
    global _sandbox
    require_parser()  # a missing parser is a clear load error, not a blocked call later
    _options.clear()
    _options.update(options)
    _sandbox = Sandbox.from_options(options)


def handle(event: Event) -> Decision | None:
    sandbox = _sandbox if _sandbox is not None else Sandbox.from_options(_options)
    args = getattr(event, "args", None) or {}
    tool = getattr(event, "tool_name", "")
    if tool in _options.get("tools", TERMINAL_TOOLS):
        command = args.get("command")
        why = sandbox.check_command(command, event.cwd) if isinstance(command, str) else None
    else:
        why = None
        for path in file_paths(args, _options.get("path_keys", PATH_KEYS)):
            why = sandbox.check_path(path, event.cwd)
            if why:
                break
    if why is None:
        return None
    return block(f"path sandbox: {why}", hint="stay inside the project's allowed folders")
