"""A status line with the git branch and how many files changed.

- ``ctx.ui.status``: "git main +2" under the chat prompt.
- ``ctx.ui.shortcut``: ctrl+g reads it again now.
- ``ctx.events``: after a tool that may have changed files, a hook publishes
  ``git.changed``; the listener (on the bus's own thread, so ``git`` never runs
  on the agent's loop) reads the status and publishes ``git.status`` for any
  other extension that wants it. The last one is kept in ``ctx.state``.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

CHANGING_TOOLS = "terminal|write_file|edit_file"


def read_status(cwd: str) -> dict[str, Any] | None:
    """{branch, changed} of the repository at ``cwd``, or None outside one."""
    try:
        out = subprocess.run(["git", "status", "--porcelain=v1", "--branch"], cwd=cwd,
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    lines = out.stdout.splitlines()
    head = lines[0].removeprefix("## ") if lines else ""
    branch = head.split("...", 1)[0].removeprefix("No commits yet on ")
    return {"branch": branch, "changed": len(lines) - 1}


def render(status: dict[str, Any] | None) -> str | None:
    if status is None:
        return None
    changed = status["changed"]
    return f"git {status['branch']}" + (f" +{changed}" if changed else " clean")


def register(ctx: Any) -> None:
    cwd = {"path": str(Path.cwd())}

    def refresh() -> None:
        status = read_status(cwd["path"])
        ctx.ui.status(render(status))
        if status is not None:
            ctx.state.set("last", status)
            ctx.events.publish("git.status", status)

    @ctx.events.subscribe("git.changed")
    def on_changed(message: Any) -> None:
        cwd["path"] = message.data.get("cwd") or cwd["path"]
        refresh()

    @ctx.on("after_tool_call", matcher=CHANGING_TOOLS, name="changed")
    def changed(event: Any) -> None:
        ctx.events.publish("git.changed", {"cwd": event.cwd, "tool": event.tool_name})

    @ctx.on("session_start", name="start")
    def start(event: Any) -> None:
        ctx.events.publish("git.changed", {"cwd": event.cwd})

    async def refresh_now() -> None:
        await asyncio.to_thread(refresh)

    ctx.ui.shortcut("ctrl+g", refresh_now, help="read the git status again")
    ctx.events.publish("git.changed", {})  # the first reading, before any session starts
