"""Where a project's server keeps its state and its Unix socket.

Standard library only: bridges import this on their fast path.

- state directory: Interlock's own (``$INTERLOCK_STATE_DIR``, else
  ``<user dir>/state``, 0700), a protected path; the token file lives there;
- socket: ``$INTERLOCK_SOCKET``, else ``<runtime>/interlock-<uid>/<digest>.sock``
  where ``<runtime>`` is ``$XDG_RUNTIME_DIR`` or the temp directory and
  ``<digest>`` names the resolved project root. A path under the project
  itself could pass the 108-byte limit of ``sun_path``.
"""

from __future__ import annotations

import os
import stat

# Bridges import this module on their fast path: pathlib, tempfile and hashlib
# are imported only where a function needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

SOCKET_NAME_ENV = "INTERLOCK_SOCKET"
STATE_DIR_ENV = "INTERLOCK_STATE_DIR"
PROJECT_HEADER = "X-Interlock-Project"


class UnsafeDirectory(OSError):
    """A directory that must be private is not (wrong owner, mode or a symlink)."""


def state_dir(project_root: Path | None = None) -> Path:
    """Interlock's one state dir (:func:`interlock.store.paths.state_dir`).

    It is among the paths the agent's own tools may never write
    (:func:`interlock.store.paths.protected_paths`), so no tool call can plant a token
    in the token store. ``project_root`` is accepted for callers that have one;
    the tokens are the user's, for every project they serve.
    """
    from interlock.store.paths import state_dir as interlock_state_dir

    return interlock_state_dir()


def _sha256_hex(data: bytes) -> str:
    from interlock.engine.sha import sha256  # not hashlib: its OpenSSL load costs ~4 ms

    digest: str = sha256(data).hexdigest()
    return digest


def socket_path_for(project_root: str) -> str:
    """The socket of the project at ``project_root`` (a string: the bridge's fast path)."""
    env = os.environ.get(SOCKET_NAME_ENV)
    if env:
        return env
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    digest = _sha256_hex(os.path.realpath(project_root).encode())[:16]
    return os.path.join(base, f"interlock-{os.geteuid()}", f"{digest}.sock")


def state_dir_str() -> str:
    """:func:`interlock.store.paths.state_dir` as a string, without pathlib (which
    brings ``re``) for the bridge's fast path; a test holds the two equal."""
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return os.path.expanduser(env)
    home = os.environ.get("INTERLOCK_HOME")
    if home:
        return os.path.join(os.path.expanduser(home), "state")
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = os.path.expanduser(xdg) if xdg else os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "interlock", "state")


def forwarder_record(sock_path: str) -> str:
    """Where ``interlock serve --upstream`` records that it serves ``sock_path``: in
    the state dir, which outlives the socket's runtime folder (a logout or a
    reboot empties that one; docs/fleet.md, The forwarder)."""
    digest = _sha256_hex(os.path.abspath(sock_path).encode())[:24]
    return os.path.join(state_dir_str(), "forwarders", f"{digest}.url")


def socket_path(project_root: Path) -> Path:
    from pathlib import Path

    return Path(socket_path_for(str(project_root)))


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` as a 0700 directory we own, or check that it is one.

    A shared temp directory lets anyone create our directory first; so an
    existing one must be a real directory (not a symlink), owned by us, and
    it is tightened to 0700.
    """
    from pathlib import Path

    path = Path(path)
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeDirectory(f"{path} is not a directory (a symlink or a file)")
    if info.st_uid != os.geteuid():
        raise UnsafeDirectory(
            f"{path} is owned by uid {info.st_uid}, not {os.geteuid()}; remove it or "
            f"set {SOCKET_NAME_ENV} to a path in a directory you own")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path
