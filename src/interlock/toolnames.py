"""What each host agent calls Interlock's built-in tools: ONE table.

The dialects read it one way (a script written for Claude Code sees ``Bash``
where we say ``terminal``), the bridges and ``hooks import`` the other way (a
host's ``run_shell_command`` call, or a ``Bash`` matcher, is our
``terminal``), so one matcher covers every agent's shell (DESIGN.md, Tool
names). Several host names may map to one of ours; the first one listed is
the name we send to that host.
"""

from __future__ import annotations

HOST_TOOLS: dict[str, dict[str, str]] = {
    "claude": {"Bash": "terminal", "Read": "read_file", "Write": "write_file",
               "Edit": "edit_file", "MultiEdit": "edit_file", "WebFetch": "web_fetch",
               "WebSearch": "web_search"},
    "codex": {"Bash": "terminal", "shell": "terminal", "local_shell": "terminal"},
    "gemini": {"run_shell_command": "terminal", "read_file": "read_file",
               "write_file": "write_file", "replace": "edit_file", "web_fetch": "web_fetch"},
    "cursor": {"Shell": "terminal", "Read": "read_file", "Write": "write_file",
               "Edit": "edit_file", "StrReplace": "edit_file"},
    "hermes": {},
    "moltis": {"exec": "terminal"},
}
"""System -> (the host's tool name -> Interlock's)."""


def to_ours(system: str, name: str) -> str:
    """Interlock's name for a host's tool name (unknown names unchanged)."""
    return HOST_TOOLS.get(system, {}).get(name, name)


def to_host(system: str, ours: str) -> str:
    """The name a host uses for one of Interlock's tools (unknown names unchanged)."""
    for theirs, mine in HOST_TOOLS.get(system, {}).items():
        if mine == ours:
            return theirs
    return ours


def host_names(system: str) -> dict[str, str]:
    """Interlock's tool name -> the name a host uses (its first listed name)."""
    out: dict[str, str] = {}
    for theirs, ours in HOST_TOOLS.get(system, {}).items():
        out.setdefault(ours, theirs)
    return out
