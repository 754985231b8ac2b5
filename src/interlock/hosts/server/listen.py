"""Serving the app with uvicorn: one server, a loopback TCP socket and a Unix socket.

The Unix socket is bound in a 0700 directory we own, the socket file is
0600, and every connection's peer uid is checked before HTTP is parsed
(:class:`PeerCheckedH11`): a peer with another uid gets a 403 and the
connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from interlock.hosts.server.paths import ensure_private_dir
from interlock.hosts.server.security import peer_allowed

HEAD_LIMIT = 64 * 1024
"""Bytes a request line and its headers may take (h11 keeps its own 16 KiB)."""
HEAD_TIMEOUT_S = 10.0
"""Seconds a connection has to send a whole request head (slowloris); idle time
between requests is uvicorn's keep-alive timeout."""


def hang_up(transport: asyncio.BaseTransport, status: bytes, why: str) -> None:
    """Answer ``status`` (``b"403 Forbidden"``) with a JSON error, and close."""
    body = json.dumps({"error": why}).encode()
    assert isinstance(transport, asyncio.WriteTransport)
    transport.write(b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
                    b"connection: close\r\ncontent-length: "
                    + str(len(body)).encode() + b"\r\n\r\n" + body)
    transport.close()


def refuse_foreign_peer(transport: asyncio.Transport) -> None:
    """On a Unix socket, answer 403 and hang up unless the peer has our uid."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family != socket.AF_UNIX:
        return
    ok, why = peer_allowed(sock)
    if not ok:
        hang_up(transport, b"403 Forbidden", why)

GRACE_S = 3
"""Seconds a stopping server waits for open connections before it closes them."""


class PeerCheckedH11(H11Protocol):
    """uvicorn's h11 protocol, refusing Unix-socket peers with another uid."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        refuse_foreign_peer(transport)


def protocol_class() -> type[asyncio.Protocol]:
    """httptools when installed (about twice as fast as h11), else h11; both peer-checked."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return PeerCheckedH11

    class PeerCheckedHttpTools(HttpToolsProtocol):
        """Peer-checked, and each request head bounded: HEAD_LIMIT bytes, sent within
        HEAD_TIMEOUT_S. httptools has no limit of its own, and grows a header by
        concatenation: one unauthenticated 64 MB header held the loop for seconds."""

        heading = True
        """Between requests or inside a head (not a body, nor a response)."""
        head_bytes = 0
        marks = 0
        """Heads and messages completed: a chunk that ends one (a body's last bytes
        with it) is not counted to the next head."""
        head_timer: asyncio.TimerHandle | None = None

        def connection_made(  # type: ignore[override]
                self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            refuse_foreign_peer(transport)
            if not transport.is_closing():
                self.head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self.too_slow)

        def connection_lost(self, exc: Exception | None) -> None:
            self.disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self.heading and self.head_timer is None:
                self.head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self.too_slow)
            marks = self.marks
            super().data_received(data)
            if self.heading and marks == self.marks:
                self.head_bytes += len(data)
                if self.head_bytes > HEAD_LIMIT and not self.transport.is_closing():
                    self.disarm()
                    hang_up(self.transport, b"431 Request Header Fields Too Large",
                            f"the request line and headers are larger than {HEAD_LIMIT} "
                            "bytes")

        def on_headers_complete(self) -> None:
            self.heading, self.head_bytes = False, 0
            self.marks += 1
            self.disarm()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self.heading = True
            self.marks += 1

        def disarm(self) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def too_slow(self) -> None:
            self.head_timer = None
            if not self.heading or self.transport.is_closing():
                return
            if self.head_bytes:
                hang_up(self.transport, b"408 Request Timeout",
                        f"the request head took longer than {HEAD_TIMEOUT_S:g} s")
            else:
                self.transport.close()  # nothing asked: nothing to answer

    return PeerCheckedHttpTools


def ws_protocol() -> str:
    """uvicorn's WebSocket implementation for the chat gateway, or none without the
    ``websockets`` package (the server extra installs it)."""
    try:
        import websockets  # noqa: F401
    except ImportError:
        return "none"
    return "websockets-sansio"


class _Server(uvicorn.Server):
    """uvicorn's server, with an event set once it listens (or gave up)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


class AlreadyRunning(OSError):
    pass


def bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only when
    # the proto says TCP; with 0, keep-alive clients wait ~40 ms per request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def bind_unix(path: Path) -> socket.socket:
    ensure_private_dir(path.parent)
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise AlreadyRunning(f"{path} exists and is not a socket; remove it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            os.unlink(path)  # stale: left by a server that died
        else:
            raise AlreadyRunning(f"a server is already listening on {path}")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


class Serving:
    """The app on ``host:port`` (port 0: any free port) and optionally a Unix socket."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 8787,
                 socket_path: Path | None = None, log_level: str = "warning",
                 tcp: bool = True, tls_cert: Path | None = None,
                 tls_key: Path | None = None) -> None:
        if tls_cert is not None and socket_path is not None:
            # uvicorn puts one TLS setting on every listener; a local bridge speaks
            # plain HTTP on the socket (docs/fleet.md: run a second, local serve).
            raise ValueError("a TLS server has no Unix socket; serve with --no-socket")
        self.socket_path = socket_path
        self.sockets: list[socket.socket] = []
        if tcp:
            self.sockets.append(bind_tcp(host, port))
        if socket_path is not None:
            self.sockets.append(bind_unix(socket_path))
        # The lifespan starts and stops the chat gateway (gateway_start / gateway_stop).
        # Open streams (the console's live feed, a chat socket) never end by
        # themselves: a stop waits this long for them, then closes them.
        config = uvicorn.Config(app, http=protocol_class(), lifespan="on", log_level=log_level,
                                access_log=False, server_header=False, ws=ws_protocol(),
                                timeout_graceful_shutdown=GRACE_S,
                                ssl_certfile=str(tls_cert) if tls_cert else None,
                                ssl_keyfile=str(tls_key) if tls_key else None)
        self.tls = tls_cert is not None
        if self.tls:
            try:  # a bad certificate or key fails here, before we announce
                config.load()
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                from interlock.engine.errors import ConfigError

                self.close()
                raise ConfigError(f"cannot use the TLS certificate and key: {exc}",
                                  file=str(tls_cert), field="--tls-cert",
                                  fix="give a PEM certificate and its matching PEM key") from None
        self.server = _Server(config)

    @property
    def port(self) -> int | None:
        for sock in self.sockets:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                return int(sock.getsockname()[1])
        return None

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM, then remove the socket file.

        uvicorn re-raises the signal it caught once it has shut down, with the
        handler it found installed; a SIGTERM handler of ours makes that an
        exception, so the socket file is still removed.
        """
        import signal

        def terminated(signum: int, frame: object) -> None:
            raise SystemExit(0)

        previous = signal.signal(signal.SIGTERM, terminated)
        try:
            self.server.run(sockets=self.sockets)
        finally:
            signal.signal(signal.SIGTERM, previous)
            self.close()

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)

    @contextlib.contextmanager
    def running(self, timeout: float = 10.0) -> Iterator[Serving]:
        """Serve on a background thread while the block runs (tests, benches)."""
        failed: list[BaseException] = []

        def target() -> None:
            try:
                asyncio.run(self.server.serve(sockets=self.sockets))
            except BaseException as exc:  # reported to the caller below
                failed.append(exc)
            finally:
                self.server.ready.set()

        thread = threading.Thread(target=target, name="interlock-serve", daemon=True)
        thread.start()
        if not self.server.ready.wait(timeout) or failed or not self.server.started:
            raise RuntimeError(f"the server did not start: {failed[:1]}")
        try:
            yield self
        finally:
            self.server.should_exit = True
            thread.join(timeout)
            self.close()


def serve_forever(serving: Serving, *, announce: bool = True) -> None:
    if announce:
        scheme = "https" if serving.tls else "http"
        where = [f"{scheme}://127.0.0.1:{serving.port}"] if serving.port else []
        if serving.socket_path is not None:
            where.append(f"unix:{serving.socket_path}")
        sys.stderr.write(f"interlock serve: listening on {', '.join(where)}\n")
    try:
        serving.run()
    except KeyboardInterrupt:
        pass
