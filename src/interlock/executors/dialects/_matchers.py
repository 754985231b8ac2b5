"""Matchers written in a host's tool names, and matchers no tool can match.

A hook copied from Claude settings keeps ``matcher = "Bash"`` with ``dialect =
"claude"``; the events it sees name the tool ``terminal``. :func:`for_dialect`
widens such a matcher with Interlock's name of every tool the host's names it
matches, from the one table in :mod:`interlock.executors.toolnames`. :func:`check`
refuses a plain name list that no tool can match when a known name is close
(``Bash`` without a dialect, ``termnal``), so a matcher never silently matches
nothing.
"""

from __future__ import annotations

import re
from typing import Any

from interlock.engine.hooks import compile_matcher
from interlock.executors.toolnames import HOST_TOOLS, OURS, aliases

BUILTIN = frozenset({"terminal", "read_file", "write_file", "edit_file", "list_dir", "grep",
                     "todo", "delegate"})
"""Interlock's own agent's tools (interlock.agent)."""

_NAME_LIST = re.compile(r"^[A-Za-z0-9_.-]+(?:\|[A-Za-z0-9_.-]+)*$")
_SYSTEM_LABEL = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI",
                 "cursor": "Cursor", "hermes": "Hermes", "moltis": "Moltis"}


def _host_names(system: str, ours: str) -> list[str]:
    names = aliases(system, ours)
    if system == "codex" and ours in ("edit_file", "write_file"):
        names.append("apply_patch")  # every Codex edit reaches its hooks as apply_patch
    return names


def for_dialect(dialect: str | None, matcher: Any) -> Any:
    """``matcher`` widened so the host's tool names in it match Interlock's names too."""
    if dialect is None or dialect not in HOST_TOOLS:
        return matcher
    if isinstance(matcher, dict) and isinstance(matcher.get("subject"), str):
        return {**matcher, "subject": for_dialect(dialect, matcher["subject"])}
    if not isinstance(matcher, str):
        return matcher
    try:
        pattern = compile_matcher(matcher)
    except Exception:
        return matcher  # validation reports it
    if pattern is None:
        return matcher
    extra = [ours for ours in sorted(OURS | BUILTIN)
             if pattern.fullmatch(ours) is None
             and any(pattern.fullmatch(h) for h in _host_names(dialect, ours))]
    if not extra:
        return matcher
    return f"(?:{matcher})|" + "|".join(extra)


def check(dialect: str | None, matcher: Any,
          events: tuple[str, ...]) -> tuple[str, str] | None:
    """Why ``matcher`` can match no tool and the fix (a did-you-mean); None when it can."""
    from interlock.engine.catalog import BY_NAME

    if isinstance(matcher, dict):
        matcher = matcher.get("subject")
    if not isinstance(matcher, str) or not _NAME_LIST.match(matcher):
        return None  # a regex or a glob: it may match tools nobody listed
    if not any(BY_NAME[e].subject == "tool_name" for e in events if e in BY_NAME):
        return None
    ours = OURS | BUILTIN
    host = set(HOST_TOOLS.get(dialect, {})) if dialect else set()
    known = ours | host
    names = matcher.split("|")
    if any(name in known or name.startswith("mcp_") for name in names):
        return None  # it can match (other names may be another host's, on purpose)
    for name in names:
        for system, table in HOST_TOOLS.items():
            if name in table:
                label = _SYSTEM_LABEL.get(system, system)
                return (f"{name!r} is {label}'s name for a tool Interlock calls "
                        f"{table[name]!r}; it never matches here",
                        f"matcher = {table[name]!r}, or dialect = {system!r} for a "
                        f"{label} script")
        import difflib  # only for a matcher that matches nothing

        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        if close:
            return f"no tool is called {name!r}", f"did you mean {close[0]!r}?"
    return None
