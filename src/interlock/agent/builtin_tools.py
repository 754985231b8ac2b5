"""Built-in tools: terminal, read_file, write_file, edit_file, list_dir, todo.

Each has a JSON Schema (validated before and after hooks). Writing tools and
the terminal refuse the engine's protected paths themselves; hooks cannot
lift that.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

from interlock.agent.tools import ToolContext, ToolError
from interlock.tooling import ToolSpec


def _resolve(ctx: ToolContext, path: str) -> Path:
    return Path(ctx.cwd) / os.path.expanduser(path)


def _refuse_protected(ctx: ToolContext, path: str) -> None:
    reason = ctx.agent.protected.check_path(path, ctx.cwd)
    if reason is not None:
        raise ToolError(f"refused by the engine: {reason}; the agent may not change its own "
                        "policy or state")


def _cap(text: str, cap: int) -> tuple[str, bool]:
    if len(text) <= cap:
        return text, False
    return text[:cap] + f"\n... [truncated {len(text) - cap} characters]", True


# -- terminal -----------------------------------------------------------------
TERMINAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "minLength": 1, "description": "A bash command line."},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600,
                    "description": "Seconds before the command is killed (default 60)."},
    },
    "required": ["command"],
    "additionalProperties": False,
}


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, int]:
    """Read everything, keep at most ``cap`` bytes; returns (kept, total)."""
    kept = bytearray()
    total = 0
    while chunk := await stream.read(65536):
        total += len(chunk)
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
    return bytes(kept), total


async def terminal(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    command: str = args["command"]
    reason = ctx.agent.protected.check_command(command, ctx.cwd)
    if reason is not None:
        raise ToolError(f"refused by the engine: {reason}")
    timeout = float(args.get("timeout", 60))
    cap = ctx.agent.options.output_cap
    with tempfile.NamedTemporaryFile("r", prefix="interlock-cwd-", delete=False) as marker:
        marker_path = marker.name
    # The final directory is written to a side file, so a `cd` in the command
    # moves the agent (cwd_changed) without parsing the command.
    script = f'{command}\n__interlock_rc=$?\npwd > "{marker_path}"\nexit $__interlock_rc\n'
    try:
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", script, cwd=ctx.cwd, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)  # its own process group: a timeout kills all of it
        assert proc.stdout is not None
        reader = asyncio.ensure_future(_read_capped(proc.stdout, cap))
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout)
        except TimeoutError:
            _kill_group(proc.pid)
            await proc.wait()
            reader.cancel()
            raise ToolError(f"command timed out after {timeout:g}s and was killed") from None
        except asyncio.CancelledError:
            _kill_group(proc.pid)
            raise
        out, total = await reader
        text = out.decode(errors="replace")
        if total > cap:
            text += f"\n... [truncated {total - cap} bytes]"
        new_cwd = _moved_to(marker_path, ctx.cwd)
    finally:
        Path(marker_path).unlink(missing_ok=True)  # noqa: ASYNC240 - a tiny local file
    if new_cwd is not None:
        await ctx.set_cwd(new_cwd)
    return {"exit_code": proc.returncode, "output": text}


def _moved_to(marker_path: str, cwd: str) -> str | None:
    """The directory the command ended in, when it is not where it started."""
    new_cwd = Path(marker_path).read_text().strip()
    if new_cwd and os.path.realpath(new_cwd) != os.path.realpath(cwd):
        return new_cwd
    return None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- files --------------------------------------------------------------------
READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 1},
                   "offset": {"type": "integer", "minimum": 0,
                              "description": "First line, 0-based."},
                   "limit": {"type": "integer", "minimum": 1,
                             "description": "Lines to read."}},
    "required": ["path"], "additionalProperties": False,
}
WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 1}, "content": {"type": "string"}},
    "required": ["path", "content"], "additionalProperties": False,
}
EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 1},
                   "old": {"type": "string", "minLength": 1,
                           "description": "Exact text to replace; must occur once."},
                   "new": {"type": "string"}},
    "required": ["path", "old", "new"], "additionalProperties": False,
}
LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "default": "."}},
    "additionalProperties": False,
}


def read_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    path = _resolve(ctx, args["path"])
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    except FileNotFoundError:
        raise ToolError(f"no such file: {args['path']}") from None
    except IsADirectoryError:
        raise ToolError(f"{args['path']} is a directory; use list_dir") from None
    start = args.get("offset", 0)
    end = start + args["limit"] if "limit" in args else None
    text, truncated = _cap("".join(lines[start:end]), ctx.agent.options.output_cap)
    return {"path": args["path"], "content": text, "lines": len(lines), "truncated": truncated}


def write_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    _refuse_protected(ctx, args["path"])
    path = _resolve(ctx, args["path"])
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(args["content"], encoding="utf-8")
    ctx.changed_file(str(path), "modified" if existed else "created")
    return {"path": args["path"], "bytes": len(args["content"].encode()),
            "created": not existed}


def edit_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    _refuse_protected(ctx, args["path"])
    path = _resolve(ctx, args["path"])
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ToolError(f"no such file: {args['path']}") from None
    count = text.count(args["old"])
    if count != 1:
        raise ToolError(f"'old' occurs {count} times in {args['path']}; it must occur exactly "
                        "once (include more surrounding text)")
    path.write_text(text.replace(args["old"], args["new"], 1), encoding="utf-8")
    ctx.changed_file(str(path), "modified")
    return {"path": args["path"], "replaced": 1}


def list_dir(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    path = _resolve(ctx, args.get("path", "."))
    try:
        entries = sorted(path.iterdir(), key=lambda p: p.name)
    except FileNotFoundError:
        raise ToolError(f"no such directory: {args.get('path', '.')}") from None
    except NotADirectoryError:
        raise ToolError(f"{args.get('path')} is a file; use read_file") from None
    return {"path": args.get("path", "."),
            "entries": [p.name + ("/" if p.is_dir() else "") for p in entries[:1000]],
            "truncated": len(entries) > 1000}


# -- todo ---------------------------------------------------------------------
TODO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"action": {"enum": ["add", "complete", "list"]},
                   "title": {"type": "string", "minLength": 1},
                   "id": {"type": "string"}},
    "required": ["action"],
    "allOf": [{"if": {"properties": {"action": {"const": "add"}}},
               "then": {"required": ["title"]}},
              {"if": {"properties": {"action": {"const": "complete"}}},
               "then": {"required": ["id"]}}],
    "additionalProperties": False,
}


async def todo(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    agent = ctx.agent
    todos = agent.session.todos
    if args["action"] == "add":
        task_id = f"t{len(todos) + 1}"
        outcome = await agent.gate("task_created", task_id=task_id, title=args["title"])
        if outcome.blocked:
            raise ToolError(f"task not created: {agent.reason_for_model(outcome)}")
        todos.append({"id": task_id, "title": args["title"], "done": False})
        return {"created": task_id, "todos": todos}
    if args["action"] == "complete":
        item = next((t for t in todos if t["id"] == args["id"]), None)
        if item is None:
            raise ToolError(f"no task {args['id']!r}; ids: {[t['id'] for t in todos]}")
        outcome = await agent.gate("task_completed", task_id=item["id"], title=item["title"])
        if outcome.blocked:
            raise ToolError(f"task not completed: {agent.reason_for_model(outcome)}")
        item["done"] = True
        return {"completed": item["id"], "todos": todos}
    return {"todos": todos}


def builtin_tools() -> list[ToolSpec]:
    from interlock.agent.grep import grep_tool

    return [
        ToolSpec("terminal", "Run a bash command in the working directory.", TERMINAL_SCHEMA,
                 terminal),
        ToolSpec("read_file", "Read a text file.", READ_SCHEMA, read_file, read_only=True),
        ToolSpec("write_file", "Create or overwrite a text file.", WRITE_SCHEMA, write_file,
                 writes_files=True),
        ToolSpec("edit_file", "Replace one exact occurrence of text in a file.", EDIT_SCHEMA,
                 edit_file, writes_files=True),
        ToolSpec("list_dir", "List a directory.", LIST_SCHEMA, list_dir, read_only=True),
        grep_tool(),
        ToolSpec("todo", "Keep a task list: add, complete, list.", TODO_SCHEMA, todo),
    ]
