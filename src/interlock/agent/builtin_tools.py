"""Built-in tools: terminal, read_file, write_file, edit_file, list_dir, todo.

Each has a JSON Schema (validated before and after hooks). Writing tools and
the terminal refuse the engine's protected paths themselves; hooks cannot
lift that. The terminal runs under the OS sandbox (:mod:`interlock.agent.sandbox`);
the file tools resolve real paths and check the file they actually opened, so
a symlink swapped in meanwhile cannot redirect a write. The read tools refuse
the state dir's secrets and process environments, and stay inside the agent's
read scope when it has one (:mod:`interlock.agent.scope`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

from interlock.agent.tools import ToolContext, ToolError
from interlock.models.tooling import ToolSpec


def _resolve(ctx: ToolContext, path: str) -> Path:
    return Path(ctx.cwd) / os.path.expanduser(path)


def _refuse_protected(ctx: ToolContext, path: str) -> None:
    reason = ctx.agent.protected.check_path(path, ctx.cwd)
    if reason is not None:
        raise ToolError(f"refused by the engine: {reason}; the agent may not change its own "
                        "policy or state")


def allowed_patterns(ctx: ToolContext) -> list[str]:
    """Patterns of the allow rules that name this tool with a pattern: what widens
    a read scope (docs/agent.md, Confined readers)."""
    policy = ctx.agent.policy
    rules = [*(policy.live() if policy.live is not None else ()), *policy.rules]
    return [r.pattern for r in rules if r.action == "allow" and not r.any_argument
            and r.matches_tool(ctx.tool_name)]


def refuse_read(ctx: ToolContext, path: str) -> None:
    """Raise when the agent may not read ``path``."""
    reason = ctx.agent.protected.check_read(path, ctx.cwd)
    scope = ctx.agent.options.read_scope
    if reason is None and scope is not None:
        reason = scope.check(path, ctx.cwd, allowed_patterns(ctx))
    if reason is not None:
        raise ToolError(f"refused by the engine: {reason}")


def _opened_path(fd: int, fallback: Path) -> str:
    """Where an open file really is (Linux: its /proc/self/fd link)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(fallback)


def _open_checked(ctx: ToolContext, path: str, *, create: bool) -> tuple[int, bool]:
    """A descriptor of ``path`` opened for reading and writing, once the file it
    actually opened is known not to be protected; (fd, created). The last part
    is never followed as a symlink, and nothing is truncated before the check."""
    _refuse_protected(ctx, path)
    target = Path(os.path.realpath(_resolve(ctx, path)))
    flags = os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    created = False
    try:
        if create:
            try:
                fd = os.open(target, flags | os.O_CREAT | os.O_EXCL, 0o666)
                created = True
            except FileExistsError:
                fd = os.open(target, flags)
        else:
            fd = os.open(target, flags)
    except FileNotFoundError:
        raise ToolError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory") from None
    real = _opened_path(fd, target)
    reason = ctx.agent.protected.check_path(real, "/")
    if reason is not None:
        os.close(fd)
        if created:
            Path(real).unlink(missing_ok=True)
        raise ToolError(f"refused by the engine: {path!r} led to {reason}; the agent may not "
                        "change its own policy or state")
    return fd, created


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
        with ctx.agent.sandbox.wrap(["bash", "-c", script], ctx.cwd) as argv:
            proc, text = await _run_capped(argv, ctx.cwd, timeout, cap)
        new_cwd = _moved_to(marker_path, ctx.cwd)
    finally:
        Path(marker_path).unlink(missing_ok=True)  # noqa: ASYNC240 - a tiny local file
    if ctx.agent.sandbox.active:
        _refuse_denied_write(ctx, text, proc.returncode, [ctx.cwd, new_cwd or ctx.cwd])
    if new_cwd is not None:
        await ctx.set_cwd(new_cwd)
    return {"exit_code": proc.returncode, "output": text}


def _refuse_denied_write(ctx: ToolContext, output: str, code: int | None,
                         cwds: list[str]) -> None:
    """A clear tool error when the sandbox stopped a write to a protected path
    (relative paths in the output are read from where the command started and
    where it ended)."""
    from interlock.agent.sandbox import READ_ONLY_ERRORS, denied_paths

    roots = ctx.agent.protected.roots
    for path in denied_paths(output):
        root = next((r for cwd in cwds
                     if (r := ctx.agent.protected.root_of(path, cwd, roots)) is not None), None)
        if root is not None:
            raise ToolError(
                f"refused by the sandbox: the command tried to change {path!r}, inside the "
                f"protected path {str(root)!r}, which is read-only for the agent's tools "
                f"(exit code {code}). Output:\n{output[-2000:]}")
    if any(marker in output for marker in READ_ONLY_ERRORS):
        for root in roots:
            if str(root) in output:
                raise ToolError(
                    f"refused by the sandbox: the command tried to change the protected path "
                    f"{str(root)!r}, which is read-only for the agent's tools "
                    f"(exit code {code}). Output:\n{output[-2000:]}")


async def _run_capped(argv: list[str], cwd: str, limit: float, cap: int
                      ) -> tuple[asyncio.subprocess.Process, str]:
    """Run ``argv`` in its own process group; its output, capped."""
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)  # its own process group: a timeout kills all of it
    assert proc.stdout is not None
    reader = asyncio.ensure_future(_read_capped(proc.stdout, cap))
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), limit)
    except TimeoutError:
        _kill_group(proc.pid)
        await proc.wait()
        reader.cancel()
        raise ToolError(f"command timed out after {limit:g}s and was killed") from None
    except asyncio.CancelledError:
        _kill_group(proc.pid)
        raise
    out, total = await reader
    text = out.decode(errors="replace")
    if total > cap:
        text += f"\n... [truncated {total - cap} bytes]"
    return proc, text


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
    refuse_read(ctx, args["path"])
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


def _write_fd(fd: int, text: str) -> None:
    data = text.encode("utf-8")
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    _refuse_protected(ctx, args["path"])
    path = _resolve(ctx, args["path"])
    # Folders are made where the parent really is, once that is known not to be
    # protected (a symlinked parent could lead into the policy folder).
    _refuse_protected(ctx, os.path.realpath(path.parent))
    Path(os.path.realpath(path.parent)).mkdir(parents=True, exist_ok=True)
    fd, created = _open_checked(ctx, args["path"], create=True)
    try:
        _write_fd(fd, args["content"])
    finally:
        os.close(fd)
    ctx.changed_file(str(path), "created" if created else "modified")
    return {"path": args["path"], "bytes": len(args["content"].encode()),
            "created": created}


def edit_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    fd, _created = _open_checked(ctx, args["path"], create=False)
    try:
        with os.fdopen(os.dup(fd), "rb") as handle:
            text = handle.read().decode("utf-8")
        count = text.count(args["old"])
        if count != 1:
            raise ToolError(f"'old' occurs {count} times in {args['path']}; it must occur "
                            "exactly once (include more surrounding text)")
        _write_fd(fd, text.replace(args["old"], args["new"], 1))
    finally:
        os.close(fd)
    ctx.changed_file(str(_resolve(ctx, args["path"])), "modified")
    return {"path": args["path"], "replaced": 1}


def list_dir(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    refuse_read(ctx, args.get("path", "."))
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
