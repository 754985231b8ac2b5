"""The bridge's own server: found by name, started by the first call that finds none.

One per project and environment: the socket's name digests the resolved
project root and every variable that changes which hooks load or who
consented to them (``INTERLOCK_*``, ``HOME``, ``XDG_CONFIG_HOME``), so a call
made with other consent never reaches a server loaded with this one's.

It lives beside ``interlock serve``'s socket, in the same private folder
(``<runtime>/interlock-<uid>/``, 0700, checked by the client before every
request; see interlock.hosts.bridge._client). Concurrent first calls take an
exclusive ``flock`` on ``<socket>.lock`` in that folder without waiting for
it: the one that gets it starts the server and hands it the lock, which the
server holds until it listens; the others (and any call meanwhile) answer in
process. A socket left by a server that died is removed under the lock before
a new one binds it.

The server (interlock.hosts.bridge._daemon) runs detached in its own session, so
it outlives the call that started it, and exits once idle.
"""

import os
import sys

from interlock.hosts.bridge._errors import BridgeError

DAEMON = "interlock.hosts.bridge._daemon"
CONSENT_ENV = ("HOME", "XDG_CONFIG_HOME")
"""Variables besides ``INTERLOCK_*`` that choose the hooks or the consent a server loads."""


def auto_socket_path(root: str) -> str:
    """The bridge server's socket for the project at ``root`` in this environment."""
    from interlock.hosts.server.paths import _sha256_hex, socket_path_for

    env = sorted((k, v) for k, v in os.environ.items()
                 if k.startswith("INTERLOCK_") or k in CONSENT_ENV)
    key = "\0".join([os.path.realpath(root), *(f"{k}={v}" for k, v in env)])
    served = socket_path_for(root)  # its folder, with a name of the same length
    return os.path.join(os.path.dirname(served), _sha256_hex(key.encode())[:15] + "b.sock")


def python_flags() -> list[str]:
    """The flags this interpreter runs with that keep a project's files out (install's ``-I``)."""
    if sys.flags.isolated:
        return ["-I"]
    flags = []
    if sys.flags.ignore_environment:
        flags.append("-E")
    if getattr(sys.flags, "safe_path", False):
        flags.append("-P")
    return flags


def start(root: str, sock_path: str, env: dict[str, str]) -> None:
    """Start the project's bridge server in the background, unless one listens or
    another call is starting it. Never waits for it: the call that found no server
    has answered in process, and the server answers the calls after it.

    ``env``: the environment the socket's name was made from, taken before the
    call ran any hook in process (a hook may change ``os.environ``).

    BridgeError when the socket folder is not private.
    """
    import fcntl

    from interlock.hosts.bridge._client import check_folder

    folder = os.path.dirname(sock_path)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return
    check_folder(sock_path)  # ours, private, a real folder: else a deny
    try:
        lock = os.open(sock_path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        if lock < 3:  # stdio was closed: the server's /dev/null would replace the lock
            lock, low = fcntl.fcntl(lock, fcntl.F_DUPFD, 3), lock
            os.close(low)
    except OSError as exc:
        raise BridgeError(f"cannot open the bridge server's lock {sock_path}.lock: {exc}") \
            from None
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another call is starting it; its server holds the lock until it listens
        if _listening(sock_path):
            return
        try:
            os.unlink(sock_path)  # a dead server's socket (daemons bind only under this lock)
        except FileNotFoundError:
            pass
        _spawn(root, sock_path, lock, env)
    finally:
        os.close(lock)


def _listening(sock_path: str) -> bool:
    import _socket

    probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    probe.settimeout(1.0)  # a listener with a full backlog: taken as up
    try:
        probe.connect(sock_path)
    except TimeoutError:
        return True
    except OSError:
        return False
    finally:
        probe.close()
    return True


def _spawn(root: str, sock_path: str, lock: int, env: dict[str, str]) -> None:
    """Start the server detached, handing it the lock: it closes it once it listens
    (or by exiting), so no other call starts a second one meanwhile."""
    os.set_inheritable(lock, True)
    argv = [sys.executable, *python_flags(), "-m", DAEMON, "--project", root,
            "--socket", sock_path, "--lock-fd", str(lock)]
    try:
        os.posix_spawn(sys.executable, argv, env, setsid=True, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
    except OSError:
        pass  # not started: the next call tries again
