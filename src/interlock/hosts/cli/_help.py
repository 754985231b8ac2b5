"""`interlock --help` without the CLI framework.

Importing typer (and the click it carries) costs most of a `--help`'s start, and
the top-level help needs nothing from it: the commands' one-line summaries are
listed here, the command tree takes its short help from this same table, and a
test holds the two equal (tests/hosts/cli/test_cli_help.py). Only this module and
``os``/``sys`` load for it.
"""

from __future__ import annotations

import os
import sys

ABOUT = "Lifecycle hooks for LLM agents: watch, rewrite or stop what agents do."

SUMMARIES: dict[str, str] = {
    # Single commands first, then command groups: the order the tree lists them.
    "audit": "Show audit records (one per hook per dispatch), oldest first.",
    "chat": "Chat with the agent.",
    "demo": "Run the reference agent on a scripted session with three policy hooks, offline.",
    "events": "List the events hooks can answer, with their payloads and decisions.",
    "init": "Write a commented .interlock/config.toml: two safe starter hooks and the "
            "bundled destructive-command guard.",
    "replay": "Re-run every recorded gate event through the current hooks, without running "
              "any tool or model, and report each decision that would now differ.",
    "run": "Run PROMPT through the agent.",
    "status": "Summarise the store: unresolved dead letters, open breakers, hook activity, "
              "and its health; exit 1 when it is unhealthy.",
    "bridge": "Bridges for Claude Code, Codex, Gemini CLI, Cursor, Hermes, Moltis.",
    "deadletter": "List, show and resolve dead letters (every hook failure, recorded).",
    "ext": "Install and manage extensions (hooks, tools, commands, providers).",
    "hooks": "See, test, trust and import the configured hooks.",
    "mcp": "Gate MCP servers with the project's policy.",
    "policy": "Policies served from a git repository (docs/fleet.md).",
    "serve": "Serve the hooks over HTTP and a Unix socket.",
    "store": "Check, export and repair the audit and dead-letter store.",
}
"""Each top-level command's one-line summary, as the command list shows it."""

OPTIONS: dict[str, str] = {
    "--version": "Print the version and exit.",
    "--install-completion": "Install completion for the current shell.",
    "--show-completion": "Show completion for the current shell, to copy it or customize "
                         "the installation.",
    "-h, --help": "Show this message and exit.",
}
"""The top-level options and their help, as the tree declares them."""


def _width() -> int:
    """The text width the command tree's own help uses: the terminal's, at most 80,
    less a margin of 2, and never under 50."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        cols = int(columns)
    else:
        try:
            cols = os.get_terminal_size(sys.stdout.fileno()).columns
        except (OSError, ValueError):
            cols = 80
    return max(min(cols, 80) - 2, 50)


def _fold(text: str, width: int) -> list[str]:
    """Words of ``text`` in lines of at most ``width`` (a longer word gets a line)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


def _table(rows: dict[str, str], width: int) -> list[str]:
    """Two columns: names padded to the longest, summaries folded beside them."""
    left = max(len(name) for name in rows) + 2
    out = []
    for name, text in rows.items():
        folded = _fold(text, max(width - 2 - left, 20))
        out.append(f"  {name.ljust(left)}{folded[0] if folded else ''}".rstrip())
        out.extend(" " * (2 + left) + line for line in folded[1:])
    return out


def render(width: int | None = None) -> str:
    width = _width() if width is None else width
    lines = ["Usage: interlock [OPTIONS] COMMAND [ARGS]...", ""]
    lines += ["  " + line for line in _fold(ABOUT, width - 2)]
    lines += ["", "Options:", *_table(OPTIONS, width), "", "Commands:",
              *_table(SUMMARIES, width)]
    return "\n".join(lines) + "\n"


def print_help() -> int:
    sys.stdout.write(render())
    return 0
