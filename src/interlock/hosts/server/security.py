"""Who may talk to the server: Host and Origin checks, and the socket peer's uid.

- **Host**: a browser tricked by DNS rebinding sends our port a request whose
  Host is the attacker's name. Only loopback names (and any the operator
  adds) are served.
- **Origin**: bridges and CLIs send no Origin; browsers do. A request with an
  Origin that is not explicitly allowed is refused, so no web page can drive
  the API, even a simple (no-preflight) POST.
- **Socket peers**: the Unix socket lives in a 0700 directory and every
  connection's peer uid is checked (SO_PEERCRED) against the server's own.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket, or None."""
    if sys.platform.startswith("linux"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    local_peercred = getattr(socket, "LOCAL_PEERCRED", None)
    if local_peercred is not None:  # macOS / BSD: struct xucred {u_int version; uid_t uid; ...}
        raw = sock.getsockopt(0, local_peercred, struct.calcsize("2I"))
        _version, uid = struct.unpack("2I", raw[:8])
        return int(uid)
    return None


def peer_allowed(sock: socket.socket) -> tuple[bool, str]:
    """Whether a Unix-socket peer may use the server: same uid as ours."""
    try:
        uid = peer_uid(sock)
    except OSError as exc:
        return False, f"cannot read the peer's credentials: {exc}"
    if uid is None:
        return False, "this platform cannot report a socket peer's uid"
    if uid != os.geteuid():
        return False, f"socket peer uid {uid} is not the server's uid {os.geteuid()}"
    return True, ""


def host_name(value: str) -> str:
    """The host part of a Host header: ``[::1]:8080`` -> ``[::1]``, ``a:1`` -> ``a``."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end != -1 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


CONSOLE_PREFIX = "/ui/"


def _own_page(scope: Scope, host: str, origin: str) -> bool:
    """A request from the console page this server served: same scheme and Host,
    on the console's own paths only (the rest of the API stays closed to pages)."""
    path = scope.get("path", "")
    if not path.startswith(CONSOLE_PREFIX):
        return False
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    return origin.rstrip("/").lower() == f"{scheme}://{host.strip().lower()}"


class Guard:
    """ASGI middleware refusing foreign Host and Origin headers before routing
    (HTTP requests and WebSocket handshakes alike)."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str] = (),
                 origins: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = LOOPBACK_HOSTS | {host_name(h) for h in hosts}
        self.origins = frozenset(o.rstrip("/").lower() for o in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = origin = None
        for key, value in scope["headers"]:
            if key == b"host":
                host = value.decode("latin-1")
            elif key == b"origin":
                origin = value.decode("latin-1")
        problem = None
        if host is None:
            problem = "a Host header is required"
        elif host_name(host) not in self.hosts:
            problem = (f"Host {host!r} is not served here (DNS rebinding guard); "
                       "start the server with --allow-host to add a name")
        elif origin is not None and origin.rstrip("/").lower() not in self.origins \
                and not _own_page(scope, host, origin):
            problem = (f"Origin {origin!r} is not allowed (browsers may not call this API); "
                       "start the server with --allow-origin to add one")
        if problem is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            # Browsers always send Origin on a WebSocket; closing before accept is
            # an HTTP 403 to the client.
            await receive()
            await send({"type": "websocket.close", "code": 1008, "reason": problem[:120]})
            return
        body = json.dumps({"error": problem}).encode()
        await send({"type": "http.response.start", "status": 403, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
