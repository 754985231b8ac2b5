"""The read-only ``grep`` tool: search file contents under a folder.

Protected paths (the engine's policy and state) are skipped, and naming one
is refused, so a read-only judge cannot read them through a search either. An
agent with a read scope (chat strangers) searches only inside it, and skips
the secret-bearing files there (``.env``).
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import Any

from interlock.agent.tools import ToolContext, ToolError
from interlock.models.tooling import ToolSpec

GREP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "minLength": 1,
                    "description": "A Python regular expression."},
        "path": {"type": "string", "default": ".",
                 "description": "A file or folder to search (default: the working folder)."},
        "glob": {"type": "string", "description": "Only files whose name matches, e.g. *.py."},
        "ignore_case": {"type": "boolean", "default": False},
        "max_matches": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                       ".mypy_cache", ".ruff_cache", ".pytest_cache"})
MAX_FILE_BYTES = 2_000_000
MAX_LINE_CHARS = 2_000
"""Longer lines are matched and shown cut: a regex on a megabyte line is slow."""


def _files(root: Path, glob: str | None, protected: Any) -> Any:
    if root.is_file():
        yield root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS
                         and protected.check_path(os.path.join(folder, d), folder) is None)
        for name in sorted(names):
            if glob is None or fnmatch.fnmatch(name, glob):
                yield Path(folder) / name


def grep(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    from interlock.agent.builtin_tools import allowed_patterns, refuse_read

    protected = ctx.agent.protected
    where = args.get("path", ".")
    reason = protected.check_path(where, ctx.cwd)
    if reason is not None:
        raise ToolError(f"refused by the engine: {reason}")
    refuse_read(ctx, where)
    scope = ctx.agent.options.read_scope
    allowed = allowed_patterns(ctx) if scope is not None else []
    root = Path(ctx.cwd) / os.path.expanduser(where)
    if not root.exists():
        raise ToolError(f"no such file or folder: {where}")
    try:
        regex = re.compile(args["pattern"], re.IGNORECASE if args.get("ignore_case") else 0)
    except re.error as exc:
        raise ToolError(f"invalid pattern: {exc}") from None
    cap = int(args.get("max_matches", 100))
    budget = ctx.agent.options.output_cap
    matches: list[str] = []
    used = 0
    truncated = False
    for path in _files(root, args.get("glob"), protected):
        # A symlink may point into a protected folder.
        if protected.check_path(str(path), ctx.cwd) is not None or (
                scope is not None and scope.check(str(path), ctx.cwd, allowed) is not None):
            continue
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        rel = os.path.relpath(path, ctx.cwd)
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            line = line[:MAX_LINE_CHARS]
            if not regex.search(line):
                continue
            entry = f"{rel}:{number}: {line}"
            if len(matches) >= cap or used + len(entry) > budget:
                truncated = True
                break
            matches.append(entry)
            used += len(entry)
        if truncated:
            break
    return {"pattern": args["pattern"], "matches": matches, "truncated": truncated}


def grep_tool() -> ToolSpec:
    return ToolSpec("grep", "Search file contents with a regular expression "
                            "(lines as path:line: text).", GREP_SCHEMA, grep, read_only=True)
