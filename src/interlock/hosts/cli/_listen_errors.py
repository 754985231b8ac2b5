"""Why `interlock serve` could not listen, as one line that names the address and
the fix (docs/serve.md), instead of the socket library's traceback."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

from interlock.engine.errors import ConfigError

_TCP_FIXES = {
    errno.EADDRINUSE: ("the address is already in use",
                       "stop the server that holds it, or pick another port with --port; "
                       "--port 0 picks a free one"),
    errno.EACCES: ("permission denied", "use a port above 1023 with --port"),
    errno.EADDRNOTAVAIL: ("it is not an address of this machine",
                          "use --host 127.0.0.1, or an address this machine has"),
}


def listen_error(exc: OSError, *, host: str, port: int, socket_path: Path | None,
                 tcp: bool) -> ConfigError:
    """``exc``, raised while binding, as the error `serve` shows."""
    from interlock.hosts.server.listen import AlreadyRunning

    on_socket = socket_path is not None and (
        not tcp or isinstance(exc, AlreadyRunning) or exc.filename is not None
        or "AF_UNIX" in str(exc))
    if on_socket:
        what = str(exc) if isinstance(exc, AlreadyRunning) else exc.strerror or str(exc)
        fix = "stop that server, or give another path with --socket (or --no-socket)"
        if "too long" in str(exc):
            what = f"the path is {len(str(socket_path).encode())} bytes, too long for a socket"
            fix = "give a path under 100 bytes with --socket (or --no-socket)"
        elif not isinstance(exc, AlreadyRunning):
            fix = "give a path in a folder you own with --socket (or --no-socket)"
        return ConfigError(f"cannot listen on the socket {socket_path}: {what}",
                           field="--socket", fix=fix)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(exc, socket.gaierror):
        return ConfigError(f"cannot listen on {address}: {host!r} is not an address",
                           field="--host", fix="give an IP address such as 127.0.0.1")
    what, fix = _TCP_FIXES.get(exc.errno or 0, (exc.strerror or str(exc),
                                                "pick another --host or --port"))
    return ConfigError(f"cannot listen on {address}: {what}", field="--port", fix=fix)
