"""A minimal HTTP/1.1 client over the server's Unix socket.

``http.client`` costs ~18 ms of imports (email, ssl); one request with
``Connection: close`` needs none of it.

Whoever listens at the socket path decides every call, so before a request
goes out the client checks that it talks to its own user's server
(docs/one-policy.md, When the bridge fails): the socket's folder must be a
real folder (not a symlink) owned by this user with no access for anyone
else, and the peer's uid (``SO_PEERCRED``; ``LOCAL_PEERCRED`` on macOS)
must be this user's. Any failed check is a deny naming the folder and the
fix, never a fall-back to evaluating elsewhere: a folder someone else made
is an attack or a mistake the user should hear about.
"""

from __future__ import annotations

import _socket  # not `socket`: it drags in selectors, enum and array (~3 ms)
import os
import sys
import time

from interlock.hosts.bridge._errors import BridgeError

# typing is not imported at run time: it costs the bridge ~3 ms at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_RESPONSE = 4 << 20


def quote(text: str) -> str:
    """Percent-encode what a header cannot carry (urllib.parse costs ~5 ms to import)."""
    return "".join(c if 0x20 < ord(c) < 0x7F and c != "%" else
                   "".join(f"%{b:02X}" for b in c.encode()) for c in text)


class NoServer(Exception):
    """Nothing listens on the socket: evaluate in process instead."""


class HostReply:
    """A reply the server made ready for the host: bytes to forward, and the exit code."""

    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, stdout: bytes, stderr: bytes, code: int) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.code = code


def post(sock_path: str, path: str, body: bytes, *, project: str,
         deadline: float) -> dict[str, Any]:
    """POST ``body`` and return the JSON answer; BridgeError once the request went out.

    NoServer only when nothing is there to trust or distrust: no socket folder,
    or no socket in a private one.
    """
    status, _headers, data = request(sock_path, path, body, project=project, deadline=deadline)
    return _json_answer(status, data)


def post_for_host(sock_path: str, path: str, body: bytes, *, project: str,
                  deadline: float) -> HostReply | dict[str, Any]:
    """POST ``body`` asking for the host-ready reply (``X-Interlock-Reply: host``).

    The server maps, evaluates and answers in the host's own format, so this
    process decodes no JSON. A server that predates the header answers with
    the outcome as JSON, returned as a dict for the caller to answer from.
    """
    status, headers, data = request(sock_path, path, body, project=project, deadline=deadline,
                                    reply="host")
    code = headers.get("x-interlock-exit")
    if code is None:
        return _json_answer(status, data)
    split = headers.get("x-interlock-stdout-length", "")
    if status != 200 or not code.isdigit() or not split.isdigit() or int(split) > len(data):
        raise BridgeError(f"the server's host reply is malformed (status {status})")
    return HostReply(data[:int(split)], data[int(split):], int(code))


def request(sock_path: str, path: str, body: bytes, *, project: str, deadline: float,
            reply: str = "") -> tuple[int, dict[str, str], bytes]:
    """One request over the socket: (status, lower-cased headers, body)."""
    try:
        return _request(sock_path, path, body, project=project, deadline=deadline,
                        reply=reply)
    except NoServer:
        forwarded = forwarder_of(sock_path)
        if forwarded is None:
            raise
        # A forwarder to the fleet's policy server answered here: evaluating in
        # process would swap that policy for this machine's own (docs/fleet.md,
        # The forwarder).
        raise BridgeError(
            f"the forwarder to {forwarded[0]} is not running at {sock_path} (fix: start "
            f"`interlock serve --upstream {forwarded[0]} ...` again, or delete "
            f"{forwarded[1]} to use this machine's own policy)") from None


def _request(sock_path: str, path: str, body: bytes, *, project: str, deadline: float,
             reply: str) -> tuple[int, dict[str, str], bytes]:
    check_folder(sock_path)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            sock.connect(sock_path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise NoServer(str(exc)) from None
        except OSError as exc:
            # The socket exists but we may not use it (another uid's directory):
            # refusing is safer than silently evaluating somewhere else.
            raise BridgeError(f"cannot connect to the server at {sock_path}: {exc}") from None
        check_peer(sock, sock_path)
        head = (f"POST {path} HTTP/1.1\r\nHost: localhost\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                f"X-Interlock-Project: {quote(project)}\r\n"
                + (f"X-Interlock-Reply: {reply}\r\n" if reply else "")
                + "Connection: close\r\n\r\n")
        try:
            sock.sendall(head.encode("latin-1") + body)
            raw = _read(sock, deadline)
        except (OSError, TimeoutError) as exc:
            raise BridgeError(f"the server did not answer: {exc}") from None
    finally:
        sock.close()
    return _parse(raw)


def forwarder_of(sock_path: str) -> tuple[str, str] | None:
    """(the upstream URL, the mark's path) when a forwarder served ``sock_path``."""
    from interlock.hosts.server.paths import forwarder_record

    mark = forwarder_record(sock_path)
    try:
        with open(mark, "rb") as fh:
            url = fh.read(2048).decode("utf-8", "replace").strip()
    except FileNotFoundError:
        return None
    except OSError:
        url = ""
    return url or "the policy server", mark


_FIX = ("remove it (`interlock serve` makes a private one), or set XDG_RUNTIME_DIR or "
        "INTERLOCK_SOCKET to a folder only you can use")


def check_folder(sock_path: str) -> None:
    """BridgeError unless the socket's folder is this user's own, private, real folder."""
    folder = os.path.dirname(sock_path) or "."
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        raise NoServer(f"{folder} does not exist") from None
    except OSError as exc:
        raise BridgeError(f"cannot check the socket folder {folder}: {exc}") from None
    mode = info.st_mode
    if mode & 0o170000 == 0o120000:  # S_IFLNK; `stat` is not imported on this path
        raise BridgeError(f"the socket folder {folder} is a symlink, so someone else may "
                          f"choose who answers; {_FIX}")
    if mode & 0o170000 != 0o040000:  # S_IFDIR
        raise BridgeError(f"the socket folder {folder} is not a folder; {_FIX}")
    uid = os.geteuid()
    if info.st_uid != uid:
        raise BridgeError(f"the socket folder {folder} is owned by uid {info.st_uid}, not "
                          f"you (uid {uid}), so someone else may be answering; {_FIX}")
    if mode & 0o077:
        raise BridgeError(f"the socket folder {folder} has mode {mode & 0o7777:04o}, so "
                          f"others may replace the socket; run `chmod 700 {folder}` or {_FIX}")


def check_peer(sock: _socket.socket, sock_path: str) -> None:
    """BridgeError unless the process listening runs as this user.

    The same reading as the server's (server/security.py ``peer_uid``), without
    ``struct``: Linux ``SO_PEERCRED`` gives ``struct ucred {pid, uid, gid}``,
    macOS/BSD ``LOCAL_PEERCRED`` gives ``struct xucred {version, uid, ...}``;
    the uid is the second 32-bit field of both.
    """
    try:
        if sys.platform.startswith("linux"):
            cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        elif getattr(_socket, "LOCAL_PEERCRED", None) is not None:
            cred = sock.getsockopt(0, _socket.LOCAL_PEERCRED, 8)
        else:  # the server refuses every peer here as well
            raise BridgeError("this platform cannot report the server's uid; run the bridge "
                              "with --local")
    except OSError as exc:
        raise BridgeError(f"cannot tell who listens at {sock_path}: {exc}") from None
    peer = int.from_bytes(cred[4:8], sys.byteorder)
    if peer != os.geteuid():
        raise BridgeError(f"the server at {sock_path} runs as uid {peer}, not as you "
                          f"(uid {os.geteuid()}); its answer is not trusted; {_FIX}")


def _read(sock: _socket.socket, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_RESPONSE:
            raise BridgeError("the server's answer is too large")


def _parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise BridgeError("the server closed the connection before answering")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise BridgeError(f"the server's status line is malformed: {lines[0]!r}")
    status = int(parts[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    elif "content-length" in headers:
        declared = headers["content-length"]
        if not declared.isdigit():
            raise BridgeError(f"the server's Content-Length {declared[:40]!r} is not a number")
        length = int(declared)
        if len(body) < length:
            raise BridgeError("the server's answer was cut short")
        body = body[:length]
    return status, headers, body


def _json_answer(status: int, body: bytes) -> dict[str, Any]:
    from interlock.engine.strictjson import loads

    try:
        data = loads(body) if body else {}
    except ValueError as exc:
        raise BridgeError(f"the server answered {status} with a body that is not JSON "
                          f"the bridge can trust ({exc})") from None
    if status != 200:
        message = data.get("error") if isinstance(data, dict) else None
        raise BridgeError(f"the server refused ({status}): {message or body[:200]!r}")
    if not isinstance(data, dict):
        raise BridgeError("the server's answer is not a JSON object")
    return data


def _unchunk(body: bytes) -> bytes:
    """The body of a chunked answer; BridgeError unless every chunk is whole and the
    last (zero-length) chunk arrived: a connection cut mid-answer is no answer."""
    out = bytearray()
    while True:
        size_line, sep, rest = body.partition(b"\r\n")
        size_text = size_line.split(b";")[0].strip()
        if not sep or not size_text or any(c not in b"0123456789abcdefABCDEF"
                                           for c in size_text):
            raise BridgeError("the server's chunked answer is malformed or was cut short")
        size = int(size_text, 16)
        if size == 0:
            return bytes(out)  # trailers, if any, are not read
        if len(rest) < size + 2 or rest[size:size + 2] != b"\r\n":
            raise BridgeError("the server's chunked answer was cut short")
        out += rest[:size]
        if len(out) > MAX_RESPONSE:
            raise BridgeError("the server's answer is too large")
        body = rest[size + 2:]
