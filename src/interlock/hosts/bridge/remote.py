"""The bridge's remote transport: evaluate on a policy server over HTTPS.

``--server URL`` (or ``$INTERLOCK_SERVER``, when the user's servers file
lists it) sends each hook call to a remote ``interlock serve`` instead of the
project's Unix socket (docs/fleet.md):

- HTTPS, verified against the system's CAs or ``--ca FILE``; plain HTTP only
  to a loopback address, and only to a listener run by this user or root
  (bridge/_listener.py: a local proxy, tests);
- a per-machine bearer token read from ``--token-file``, a file that must be
  this user's and not readable by group or others (the agent's config names
  the file, never holds the token);
- a server the environment names (``--server env``) only when the user's
  servers file lists it, with the file's token file, pin and CA;
- optionally a pin, ``sha256:HEX`` of the server certificate's DER or of its
  SubjectPublicKeyInfo (the SPKI pin survives a renewal with the same key);
- the bridge's deadline bounds connect, handshake and answer.

Every failure is a :class:`BridgeError`, which the bridge answers with the
host's deny on gate events. Only :class:`Unreachable` (nothing answered:
refused, timed out, name not resolved, or a 502/503/504 from a proxy in
front) may instead go to the local in-process policy, and only for events
installed with ``--fallback local``. A certificate or pin that does not
match, a refused token and a malformed answer never do: they are a
misconfiguration or an attack, and the person should hear about it.
"""

from __future__ import annotations

import os
import socket
import sys
import time

from interlock.hosts.bridge._client import _json_answer, _parse, _read
from interlock.hosts.bridge._common import BridgeError
from interlock.hosts.bridge._listener import check_listener

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LOOPBACK = ("127.0.0.1", "::1", "localhost")
FALLBACK_SHARE = 0.5
"""With a local fallback, the remote gets this share of the time left, so the
in-process policy still has time to answer before the deadline."""


class Unreachable(BridgeError):
    """Nothing answered the request: the only failure a local fallback may cover."""


class Remote:
    """Where and how to reach the policy server (from the bridge's options or env)."""

    __slots__ = ("ca", "host", "path", "pin", "port", "scheme", "token_file", "url")

    def __init__(self, url: str, token_file: str | None, *, pin: str | None = None,
                 ca: str | None = None) -> None:
        self.url = url
        scheme, sep, rest = url.partition("://")
        if not sep or scheme not in ("https", "http"):
            raise BridgeError(f"--server {url!r} must start with https:// (or http:// to "
                              "a loopback address)")
        self.scheme = scheme
        netloc, _, path = rest.partition("/")
        self.path = "/" + path.rstrip("/") if path.strip("/") else ""
        if "@" in netloc:
            raise BridgeError(f"--server {url!r} must not carry credentials; use --token-file")
        host, port = _split_netloc(netloc, 443 if scheme == "https" else 80)
        if not host:
            raise BridgeError(f"--server {url!r} names no host")
        if scheme == "http" and host not in LOOPBACK:
            raise BridgeError(f"--server {url!r}: plain http is allowed only to a loopback "
                              "address; use https://")
        self.host, self.port = host, port
        if not token_file:
            raise BridgeError("a remote server needs a token: set --token-file FILE (or "
                              "token_file in the servers file), a 0600 file holding it")
        self.token_file = token_file
        if pin is not None:
            algo, _, digest = pin.partition(":")
            digest = digest.replace(":", "").lower()
            if algo != "sha256" or len(digest) != 64 or not _is_hex(digest):
                raise BridgeError(f"--pin {pin!r} must be sha256:<64 hex digits>")
            pin = digest
        self.pin = pin
        self.ca = ca

    @classmethod
    def from_options(cls, server: str | None, token_file: str | None, pin: str | None,
                     ca: str | None, servers: str | None = None) -> Remote | None:
        """The remote named on the command line, else (``--server env``, or a line
        with neither ``--server`` nor ``--project``) by the environment, else None.

        A server URL on the command line (written by ``bridge install``) takes its
        token file, pin and CA from the command line only. One the environment
        names must be listed in the user's servers file (``--servers`` on the
        line, else :func:`default_servers_file`), and its token file, pin and CA
        are the file's: an agent's project settings can set its hooks'
        environment, and must not send the machine's token, nor the hook input,
        to a server of their choosing (docs/fleet.md, Remote bridges)."""
        if server and server != "env":
            return cls(server, token_file, pin=pin, ca=ca)
        env = os.environ.get("INTERLOCK_SERVER")
        if not env:
            if server == "env":
                raise BridgeError("--server env, but INTERLOCK_SERVER is not set")
            return None
        return listed(servers or default_servers_file(), env)


SERVERS_FILE = "servers.toml"


def default_servers_file() -> str:
    """``~/.config/interlock/servers.toml``, with the home the password database
    gives: HOME, XDG_CONFIG_HOME and INTERLOCK_HOME are environment too, which a
    project's agent settings can set."""
    import pwd

    home = pwd.getpwuid(os.geteuid()).pw_dir
    return os.path.join(home, ".config", "interlock", SERVERS_FILE)


def listed(path: str, url: str) -> Remote:
    """The server ``url`` as the servers file at ``path`` lists it, with the file's
    token file, pin and CA; BridgeError when the file does not list it.

    The file is TOML, one ``[[server]]`` table per server the environment may
    name: ``url``, ``token_file``, and optionally ``pin`` and ``ca`` (``~/`` is
    the user's home; a relative path is the file's folder's)."""
    import tomllib

    fix = ("the environment may only choose a server listed there, with its token file "
           "(docs/fleet.md, Remote bridges)")
    try:
        data = _read_own(path, "servers", 0o022)
    except FileNotFoundError:
        raise BridgeError(f"INTERLOCK_SERVER names {url}, which {path} does not list (the "
                          f"file does not exist); {fix}") from None
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BridgeError(f"the servers file {path} is not valid TOML: {exc}") from None
    entries = doc.get("server", [])
    if not isinstance(entries, list):
        raise BridgeError(f"the servers file {path}: `server` must be [[server]] tables")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            raise BridgeError(f"the servers file {path}: server {i + 1} needs url = "
                              '"https://..."')
        if entry["url"].rstrip("/") != url.rstrip("/"):
            continue
        found: dict[str, str | None] = {}
        for key in ("token_file", "pin", "ca"):
            value = entry.get(key)
            if value is not None and (not isinstance(value, str) or not value):
                raise BridgeError(f"the servers file {path}: server {i + 1}'s {key} must be "
                                  "a non-empty string")
            found[key] = value if value is None or key == "pin" else _beside(value, path)
        return Remote(entry["url"], found["token_file"], pin=found["pin"], ca=found["ca"])
    raise BridgeError(f"INTERLOCK_SERVER names {url}, which {path} does not list; {fix}")


def _beside(value: str, path: str) -> str:
    if value.startswith("~/"):
        import pwd

        return os.path.join(pwd.getpwuid(os.geteuid()).pw_dir, value[2:])
    return os.path.join(os.path.dirname(os.path.abspath(path)), value)


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _split_netloc(netloc: str, default: int) -> tuple[str, int]:
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = netloc.partition(":")
    if not port_text:
        return host, default
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BridgeError(f"the server's port {port_text!r} is not a port number")
    return host, int(port_text)


def read_token(path: str, *, prefix: str = "ilk_", what: str = "token") -> str:
    """The token in ``path``, refusing a file others could read or swap, or one that does
    not hold a token starting with ``prefix``."""
    try:
        data = _read_own(path, what, 0o077)
    except FileNotFoundError:
        raise BridgeError(f"the token file {path} does not exist; create it with the "
                          "token `interlock serve token create NAME` printed, mode 0600") from None
    token = data.decode("utf-8", "replace").strip()
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise BridgeError(f"the {what} file {path} must hold one {what} on one line")
    if not token.startswith(prefix):
        # Never send another secret (an API key in some 0600 file) as our bearer token.
        raise BridgeError(f"the token file {path} does not hold an Interlock token "
                          f"({prefix}...); create one with `interlock serve token create`")
    return token


def _read_own(path: str, what: str, forbidden: int) -> bytes:
    """The start of ``path``, a file of this user's (not a symlink) with none of the
    ``forbidden`` mode bits; FileNotFoundError when it does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BridgeError(f"cannot open the {what} file {path}: {exc}") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            raise BridgeError(f"the {what} file {path} is owned by uid {info.st_uid}, not you "
                              f"(uid {os.geteuid()}); use a file of your own, mode 0600")
        if info.st_mode & forbidden:
            raise BridgeError(f"the {what} file {path} has mode {info.st_mode & 0o777:04o}, so "
                              f"others may {'read' if forbidden & 0o044 else 'change'} it; "
                              f"run `chmod 600 {path}`")
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def spki_of(der: bytes) -> bytes:
    """The SubjectPublicKeyInfo (DER) of an X.509 certificate in DER.

    Certificate = SEQ { tbsCertificate SEQ { [0] version?, serial, signature,
    issuer, validity, subject, subjectPublicKeyInfo, ... }, ... }; a small DER
    walk, since the standard library has no X.509 parser.
    """
    def element(buf: bytes, at: int) -> tuple[int, int, int]:
        """(tag, start of content, end of element) of the element at ``at``."""
        tag = buf[at]
        length = buf[at + 1]
        at += 2
        if length & 0x80:
            count = length & 0x7F
            length = int.from_bytes(buf[at:at + count], "big")
            at += count
        return tag, at, at + length

    try:
        _, cert_start, _ = element(der, 0)
        _, tbs_start, tbs_end = element(der, cert_start)
        at = tbs_start
        tag, _, end = element(der, at)
        if tag == 0xA0:  # explicit version
            at = end
        for _ in range(5):  # serial, signature, issuer, validity, subject
            _, _, at = element(der, at)
        tag, _, end = element(der, at)
        if tag != 0x30 or end > tbs_end:
            raise ValueError("no SubjectPublicKeyInfo")
        return der[at:end]
    except (IndexError, ValueError) as exc:
        raise BridgeError(f"the server's certificate cannot be read for pinning ({exc})") from None


def check_pin(der: bytes, pin: str) -> None:
    import hashlib
    import hmac

    for candidate in (der, spki_of(der)):
        if hmac.compare_digest(hashlib.sha256(candidate).hexdigest(), pin):
            return
    raise BridgeError("the server's certificate does not match the pin (sha256 of neither "
                      "its certificate nor its public key); refusing its answer")


def post(remote: Remote, path: str, body: bytes, *, deadline: float) -> dict[str, Any]:
    """POST ``body`` to the remote server; its JSON answer, or BridgeError/Unreachable."""
    token = read_token(remote.token_file)
    try:
        sock = socket.create_connection((remote.host, remote.port),
                                         max(0.001, deadline - time.monotonic()))
    except OSError as exc:  # refused, timed out, no route, name not resolved
        raise Unreachable(f"cannot reach the policy server {remote.url}: {exc}") from None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if remote.scheme == "https":
            sock = _tls(sock, remote, deadline)
        else:
            check_listener(sock, remote.url)
        host = remote.host if remote.port in (80, 443) else f"{remote.host}:{remote.port}"
        if ":" in remote.host:
            host = f"[{remote.host}]:{remote.port}"
        # No X-Interlock-Project: the caller's folder is on another machine; the
        # server answers for its own policy.
        head = (f"POST {remote.path}{path} HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n")
        try:
            sock.sendall(head.encode("latin-1") + body)
            raw = _read(sock, deadline)
        except (OSError, TimeoutError) as exc:
            raise Unreachable(f"the policy server {remote.url} did not answer: {exc}") from None
    finally:
        sock.close()
    status, _headers, body = _parse(raw)
    if status in (502, 503, 504):
        # A proxy in front (or a replica's store) could not answer: nothing decided.
        try:
            _json_answer(status, body)
        except BridgeError as exc:
            raise Unreachable(str(exc)) from None
    return _json_answer(status, body)


def _tls(sock: Any, remote: Remote, deadline: float) -> Any:
    import ssl

    try:
        ctx = ssl.create_default_context(cafile=remote.ca)
    except (OSError, ssl.SSLError) as exc:
        raise BridgeError(f"cannot load the CA file {remote.ca}: {exc}") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    sock.settimeout(max(0.001, deadline - time.monotonic()))
    try:
        tls = ctx.wrap_socket(sock, server_hostname=remote.host)
    except ssl.SSLCertVerificationError as exc:
        raise BridgeError(f"the policy server {remote.url} has a certificate this machine "
                          f"does not trust: {exc.verify_message}; set --ca FILE to its "
                          "CA") from None
    except ssl.SSLError as exc:
        raise BridgeError(f"TLS with {remote.url} failed: {exc}") from None
    except (OSError, TimeoutError) as exc:
        raise Unreachable(f"the TLS handshake with {remote.url} did not finish: {exc}") from None
    if remote.pin is not None:
        der = tls.getpeercert(binary_form=True)
        if not der:
            raise BridgeError(f"the policy server {remote.url} showed no certificate to pin")
        check_pin(der, remote.pin)
    return tls


def evaluate(remote: Remote, system: str, raw: bytes, *, deadline: float,
             fallback: bool) -> dict[str, Any] | None:
    """The remote's outcome; None when it is unreachable and ``fallback`` allows the
    local policy to answer instead (the caller evaluates in process)."""
    if not fallback:
        return post(remote, f"/v1/bridge/{system}", raw, deadline=deadline)
    share = deadline - (deadline - time.monotonic()) * (1 - FALLBACK_SHARE)
    try:
        return post(remote, f"/v1/bridge/{system}", raw, deadline=share)
    except Unreachable as exc:
        sys.stderr.write(f"interlock bridge: {exc}; the local policy answers\n")
        return None


def wanted(opts: Any) -> bool:
    """Whether this bridge evaluates remotely: ``--server URL``; or ``--server env`` /
    a line naming neither ``--server`` nor ``--project``, with ``$INTERLOCK_SERVER`` set.

    A line ``bridge install`` wrote always names ``--project``, so an
    environment the project can influence (an agent's project settings may set
    variables for its hooks) cannot move an installed local bridge to a server
    of its choosing."""
    if opts.local:
        return False
    if opts.server:
        return True
    return opts.project is None and bool(os.environ.get("INTERLOCK_SERVER"))


def evaluate_for(opts: Any, system: str, raw: bytes, host_event: str,
                 deadline: float) -> dict[str, Any] | None:
    """:func:`evaluate` with the bridge's options. Only ``--fallback local`` on the
    line lets the local policy answer; when the server comes from the environment,
    ``$INTERLOCK_SERVER_FALLBACK`` (host event names, comma-separated, or ``*``)
    can narrow that to the events it names, never widen it: a project could
    otherwise name an unreachable server and have its own policy answer."""
    found = Remote.from_options(opts.server, opts.token_file, opts.pin, opts.ca, opts.servers)
    assert found is not None
    fallback = opts.fallback == "local"
    narrowed = os.environ.get("INTERLOCK_SERVER_FALLBACK", "").strip()
    if fallback and narrowed and not (opts.server and opts.server != "env"):
        names = {n.strip() for n in narrowed.split(",")}
        fallback = "*" in names or host_event in names
    return evaluate(found, system, raw, deadline=deadline, fallback=fallback)
