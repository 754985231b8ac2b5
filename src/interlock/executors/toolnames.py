"""What each host agent calls Interlock's tools and their arguments: ONE table.

The dialects read it one way (a script written for Claude Code sees ``Edit``
with ``file_path``, ``old_string``, ``new_string`` where we say ``edit_file``
with ``path``, ``old``, ``new``), the bridges, ``hooks import`` and dialect
matchers the other way (a host's ``run_shell_command`` call, or a ``Bash``
matcher, is our ``terminal``), so one matcher covers every agent's shell
(docs/one-policy.md). Several host names may map to one of ours; the first
one listed is the name we send to that host.

MCP tools are ``mcp__<server>__<tool>`` in Interlock, Claude Code and Codex;
Gemini CLI calls them ``mcp_<server>_<tool>`` and says which part is which in
``mcp_context`` (:func:`gemini_mcp_name`).

Standard library only, and no imports at all: the bridge's fast path reads it.
"""

from __future__ import annotations

_PATH = {"file_path": "path"}
_EDIT = {"file_path": "path", "old_string": "old", "new_string": "new"}

TOOLS: dict[str, dict[str, tuple[str, dict[str, str]]]] = {
    "claude": {
        "Bash": ("terminal", {}), "PowerShell": ("terminal", {}),
        "Read": ("read_file", _PATH), "Write": ("write_file", _PATH),
        "Edit": ("edit_file", _EDIT), "MultiEdit": ("edit_file", _PATH),
        "NotebookEdit": ("edit_file", {"notebook_path": "path"}),
        "Grep": ("grep", {}), "Glob": ("glob", {}), "LS": ("list_dir", {}),
        "TodoWrite": ("todo", {}), "Agent": ("delegate", {}), "Task": ("delegate", {}),
        "WebFetch": ("web_fetch", {}), "WebSearch": ("web_search", {}),
    },
    "codex": {
        # Codex sends every edit as apply_patch; its matchers also accept Write and Edit.
        "Bash": ("terminal", {}), "shell": ("terminal", {}), "local_shell": ("terminal", {}),
        "apply_patch": ("edit_file", {}), "Edit": ("edit_file", {}),
        "Write": ("write_file", {}),
    },
    "gemini": {
        "run_shell_command": ("terminal", {}),
        "read_file": ("read_file", _PATH),
        "read_many_files": ("read_file", {}),
        "write_file": ("write_file", _PATH), "replace": ("edit_file", _EDIT),
        "grep_search": ("grep", {"dir_path": "path", "include_pattern": "glob"}),
        "glob": ("glob", {"dir_path": "path"}),
        "list_directory": ("list_dir", {"dir_path": "path"}),
        "google_web_search": ("web_search", {}), "web_fetch": ("web_fetch", {}),
        "write_todos": ("todo", {}), "invoke_agent": ("delegate", {}),
    },
    "cursor": {
        "Shell": ("terminal", {}), "Read": ("read_file", {}), "Write": ("write_file", {}),
        "Edit": ("edit_file", {}), "StrReplace": ("edit_file", {}), "Grep": ("grep", {}),
        "Glob": ("glob", {}),
    },
    "hermes": {
        # execute_code runs a Python script that can do anything a shell can.
        "terminal": ("terminal", {}), "execute_code": ("terminal", {}),
        "read_file": ("read_file", {}), "write_file": ("write_file", {}),
        "patch": ("edit_file", {"old_string": "old", "new_string": "new"}),
        "search_files": ("grep", {}), "delegate_task": ("delegate", {}), "todo": ("todo", {}),
        "web_search": ("web_search", {}), "web_extract": ("web_fetch", {}),
    },
    "moltis": {"exec": ("terminal", {})},
}
"""System -> (the host's tool name -> (Interlock's tool, the host's argument -> ours))."""

HOST_TOOLS: dict[str, dict[str, str]] = {
    system: {theirs: ours for theirs, (ours, _args) in table.items()}
    for system, table in TOOLS.items()}
"""System -> (the host's tool name -> Interlock's)."""

OURS = frozenset(ours for table in HOST_TOOLS.values() for ours in table.values())
"""Every Interlock tool name some host has a name for."""


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


def aliases(system: str, ours: str) -> list[str]:
    """Every name a host has for one of Interlock's tools (a matcher may use any)."""
    return [theirs for theirs, mine in HOST_TOOLS.get(system, {}).items() if mine == ours]


def args_to_host(system: str, ours: str, args: dict[str, object]) -> dict[str, object]:
    """``args`` of our tool ``ours`` with the host's argument names.

    Only our names are renamed, and only where the host's name is not there
    already (a call that came in through a bridge keeps the host's shape).
    """
    theirs = to_host(system, ours)
    renames = TOOLS.get(system, {}).get(theirs, (ours, {}))[1]
    if not renames:
        return args
    back = {mine: host for host, mine in renames.items()}
    return {(back[k] if k in back and back[k] not in args else k): v for k, v in args.items()}


def args_to_ours(system: str, ours: str, sent: dict[str, object],
                 answer: dict[str, object]) -> dict[str, object]:
    """A host-shaped rewrite ``answer`` of the arguments ``sent`` (ours), in our names.

    The inverse of :func:`args_to_host` for the same call: a key is renamed
    back only if ``args_to_host`` renamed it on the way out.
    """
    theirs = to_host(system, ours)
    renames = TOOLS.get(system, {}).get(theirs, (ours, {}))[1]
    back = {host: mine for host, mine in renames.items() if mine in sent and host not in sent}
    return {back.get(k, k): v for k, v in answer.items()}


def mcp_name_part(name: str) -> str:
    """A server's or tool's name as Claude Code and Codex put it in
    ``mcp__<server>__<tool>``: each character other than an ASCII letter, digit,
    ``_`` or ``-`` becomes ``_`` (``my.docs`` -> ``my_docs``), so one policy names
    an MCP tool alike whichever agent, or the MCP proxy, calls it (docs/mcp.md)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in name)


def gemini_mcp_name(name: str, context: object) -> str:
    """Interlock's ``mcp__server__tool`` for Gemini's ``mcp_server_tool`` + ``mcp_context``."""
    if isinstance(context, dict):
        server, tool = context.get("server_name"), context.get("tool_name")
        if isinstance(server, str) and isinstance(tool, str) and server and tool:
            return f"mcp__{mcp_name_part(server)}__{mcp_name_part(tool)}"
    return name


def to_suggestions(system: str, updates: object) -> list[dict[str, object]]:
    """Interlock's ``permission_updates`` in Claude's PermissionUpdate shape."""
    return [{"type": "addRules", "behavior": str(u.get("action") or "allow"),
             "destination": "session",
             "rules": [{"toolName": to_host(system, str(u.get("tool") or "")),
                        "ruleContent": str(u.get("pattern") or "*")}]}
            for u in (updates if isinstance(updates, list) else ()) if isinstance(u, dict)]


def to_updates(system: str, suggestions: object) -> list[dict[str, object]]:
    """Claude's permission suggestions (``addRules`` entries) as Interlock's
    ``permission_updates`` ({tool, pattern, action}); other kinds are skipped."""
    out: list[dict[str, object]] = []
    for item in suggestions if isinstance(suggestions, list) else ():
        if not (isinstance(item, dict) and item.get("type") == "addRules"):
            continue
        for rule in item.get("rules") or ():
            if isinstance(rule, dict) and rule.get("toolName"):
                out.append({"tool": to_ours(system, str(rule["toolName"])),
                            "pattern": str(rule.get("ruleContent") or "*"),
                            "action": str(item.get("behavior") or "allow")})
    return out
