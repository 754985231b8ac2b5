"""The project's bridge server, started by the first call (interlock.hosts.bridge._autostart).

``python -I -m interlock.hosts.bridge._daemon --project ROOT --socket PATH [--lock-fd N]``

``--lock-fd``: the start lock the starting call holds (interlock.hosts.bridge._autostart),
handed over and closed once this listens.

It holds what every in-process bridge call would load: the host every
command assembles (interlock.hosts.assembly: the project's config, the same approvals
and consent, the extensions), recording into the store, and watching its
files, so an edit, an approval or a revocation shows in the next answer as
in ``interlock serve`` (docs/serve.md, Which project, and live reload). A
config with no good revision or no hooks does not start (the bridge starts
it only after answering in process, which such a config denies).

It speaks the one request the bridge sends (``POST /v1/bridge/{agent}`` with
``X-Interlock-Reply: host``, HTTP/1.1 over its Unix socket) and answers with
the host-ready reply (interlock.hosts.bridge._reply). Who may ask: the socket is
0600 in the private folder, and every connection's peer uid is checked
(SO_PEERCRED, as ``interlock serve`` does) before a byte is read; the
request must name this server's project.

It exits after ``$INTERLOCK_BRIDGE_IDLE`` seconds (default 600) without a
request, when its socket file is removed or replaced, when its project
folder is gone, and on SIGTERM; its socket goes with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

IDLE_ENV = "INTERLOCK_BRIDGE_IDLE"
IDLE_S = 600.0
MAX_BODY = 8 << 20
MAX_HEAD = 64 << 10
STARTUP_S = 120
"""Seconds a starting server may take to listen (loading the hooks) before it exits."""


class Daemon:
    def __init__(self, host: Any, root: str, sock_path: str, idle: float,
                 lock: int | None = None) -> None:
        self.host = host
        self.lock = lock
        """The start lock the starting call handed over: held until this listens."""
        self.root = root
        self.sock_path = sock_path
        self.idle = idle
        self.last = time.monotonic()
        self.busy = 0
        self.stop = asyncio.Event()
        self.inode: tuple[int, int] | None = None
        self.stamps: dict[Path, Any] = {}
        store = host.registry.recording.store if host.registry.recording is not None else None
        self.settled = store.settled if store is not None else None

    def bind(self) -> socket.socket:
        from interlock.hosts.server.paths import ensure_private_dir

        ensure_private_dir(Path(self.sock_path).parent)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(self.sock_path)  # the caller holds the lock and removed any dead socket
        finally:
            os.umask(old)
        os.chmod(self.sock_path, 0o600)
        info = os.lstat(self.sock_path)
        self.inode = (info.st_dev, info.st_ino)
        sock.listen(128)
        sock.setblocking(False)
        return sock

    def still_ours(self) -> bool:
        try:
            info = os.lstat(self.sock_path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self.inode and os.path.isdir(self.root)

    async def serve(self) -> None:
        sock = self.bind()
        server = await asyncio.start_unix_server(self.handle, sock=sock, limit=MAX_HEAD)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.stop.set)
        # An edit made after the hooks were loaded but before these stamps would
        # otherwise go unseen until the next edit (a server answering from a stale
        # revision): read the config once more now; an edit after the stamps is
        # caught by catch_up on the next call.
        self.stamps = self.config_stamps()
        await asyncio.to_thread(self.host.apply, set())
        self.host.start_live_task()
        # Let the watcher take its first look at the files before anyone can see an
        # answer and then edit them: a change made before that look would be missed.
        await asyncio.sleep(0)
        _ready()
        signal.alarm(0)  # listening: the start-up limit is over
        if self.lock is not None:
            os.close(self.lock)  # listening: a call that takes the lock now finds it up
            self.lock = None
        try:
            while not self.stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), min(1.0, self.idle))
                idle = self.busy == 0 and time.monotonic() - self.last > self.idle
                if idle or not self.still_ours():
                    break
        finally:
            server.close()
            if self.still_ours():
                with contextlib.suppress(OSError):
                    os.unlink(self.sock_path)
            await self.host.stop_live_task()

    def config_stamps(self) -> dict[Path, Any]:
        """Stamps of every file the current revision was read from."""
        from interlock.config.watch import stamps

        current = getattr(self.host.registry, "_current", None)
        found = getattr(current, "found", None)
        return stamps([Path(p) for p in getattr(found, "files", {})])

    async def catch_up(self) -> None:
        """Apply a config change the watcher has not applied yet, before answering.

        An in-process bridge reads the config on every call; so does this server,
        in effect: an edit made a moment ago (a broken config among them) decides
        this call, not the revision before it.
        """
        now = self.config_stamps()
        if now != self.stamps:
            await asyncio.to_thread(self.host.apply, set())
            self.stamps = self.config_stamps()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from interlock.hosts.server.security import peer_allowed

        self.busy += 1
        try:
            ok, why = peer_allowed(writer.get_extra_info("socket"))
            if not ok:
                await _respond(writer, 403, why.encode(), {})
                return
            try:
                status, body, headers = await self.answer(reader)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
                status, body, headers = 400, f"bad request: {exc}".encode(), {}
            await _respond(writer, status, body, headers)
        except (ConnectionError, OSError):
            pass  # the bridge went away (its deadline): nothing to answer
        finally:
            self.busy -= 1
            self.last = time.monotonic()
            writer.close()

    async def answer(self, reader: asyncio.StreamReader) -> tuple[int, bytes, dict[str, str]]:
        from interlock.hosts.bridge import HOSTS
        from interlock.hosts.bridge._reply import encode, host_reply

        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, _, rest = head[0].partition(" ")
        target = rest.partition(" ")[0]
        fields = {k.strip().lower(): v.strip()
                  for k, _, v in (line.partition(":") for line in head[1:] if line)}
        agent = target.removeprefix("/v1/bridge/")
        if method != "POST" or not target.startswith("/v1/bridge/") or agent not in HOSTS:
            return 404, b"this server answers POST /v1/bridge/{agent} only", {}
        if fields.get("x-interlock-reply") != "host":
            return 400, b"this server answers with X-Interlock-Reply: host only", {}
        project = _unquote(fields.get("x-interlock-project", ""))
        if project != self.root:  # the bridge sends its resolved root
            return 409, f"this server serves {self.root}, not {project}".encode(), {}
        length = int(fields.get("content-length", "-1"))
        if not 0 <= length <= MAX_BODY:
            return 413, b"the hook input is missing or larger than 8 MiB", {}
        raw = await reader.readexactly(length)
        await self.catch_up()
        error = self.host.registry.last_error
        reply = await host_reply(self.host.engine, agent, raw,
                                 dispatch=self.host.registry.dispatch,
                                 settled=self.settled, refused=error)
        body, headers = encode(reply)
        return 200, body, headers


async def _respond(writer: asyncio.StreamWriter, status: int, body: bytes,
                   headers: dict[str, str]) -> None:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}",
             f"Content-Length: {len(body)}", "Connection: close",
             *(f"{k}: {v}" for k, v in headers.items())]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


def _unquote(text: str) -> str:
    """Undo the client's percent-encoding of the project header."""
    from urllib.parse import unquote

    return unquote(text)


def _ready() -> None:
    """Say it listens (to whoever started it by hand: a bridge gives it /dev/null)."""
    with contextlib.suppress(OSError):
        os.write(1, b"ready\n")


def _fail(message: str) -> int:
    with contextlib.suppress(OSError):
        os.write(1, f"error: {message}\n".encode())
    return 1


def main(argv: list[str]) -> int:
    args = dict(zip(argv[::2], argv[1::2], strict=False))
    root, sock_path = args.get("--project"), args.get("--socket")
    if not root or not sock_path:
        return _fail("usage: python -m interlock.hosts.bridge._daemon --project ROOT "
                     "--socket PATH [--lock-fd N]")
    try:
        idle = float(os.environ.get(IDLE_ENV) or IDLE_S)
    except ValueError:
        idle = IDLE_S
    try:
        lock = int(args["--lock-fd"]) if "--lock-fd" in args else None
    except ValueError:
        return _fail("--lock-fd takes a file descriptor number")
    from interlock.hosts.bridge._common import logs_off_stderr

    logs_off_stderr()
    # A server stuck before it listens would hold the start lock for good (every call
    # answering in process); SIGALRM's default action ends it, and frees the lock.
    signal.alarm(STARTUP_S)
    try:
        from interlock.hosts.assembly import Host

        host = Host.open(Path(root), record=True, extensions=None)
    except Exception as exc:  # the in-process bridge meets it again and denies
        return _fail(f"{type(exc).__name__}: {exc}")
    try:
        from interlock.hosts.bridge._decide import unguarded

        if unguarded(host.engine.hooks, host.rules):
            return _fail(f"no hooks are configured for {root} (nor a deny or ask rule)")
        asyncio.run(Daemon(host, os.path.realpath(root), sock_path, idle, lock).serve())
    except Exception as exc:
        return _fail(f"{type(exc).__name__}: {exc}")
    finally:
        host.close()
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # Ended at once: a thread a hook left running must not keep a stopped server
    # (and its store) alive, and a hook process it started must not go on acting.
    from interlock.hosts.bridge._core import kill_hook_groups

    kill_hook_groups()
    os._exit(code)
