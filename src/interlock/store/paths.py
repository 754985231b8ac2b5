"""Where Interlock keeps things: the managed, user, project and state folders.

Every location can be moved with an environment variable, so tests (and
sandboxes) never touch the real ``~/.config`` or ``/etc``:

- managed: ``$INTERLOCK_MANAGED``, else ``/etc/interlock``;
- user: ``$INTERLOCK_HOME``, else ``$XDG_CONFIG_HOME/interlock``, else
  ``~/.config/interlock``;
- state (approvals, toggles, audit, dead letters): ``$INTERLOCK_STATE_DIR``,
  else ``<user>/state``;
- project: ``<project root>/.interlock``;
- bundled hooks: ``$INTERLOCK_BUNDLED``, else the package's ``bundled/`` folder.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_DIRNAME = ".interlock"


def managed_dir() -> Path:
    """The administrator's layer; neither project nor user config can override it."""
    env = os.environ.get("INTERLOCK_MANAGED")
    return Path(env).expanduser() if env else Path("/etc/interlock")


def user_dir() -> Path:
    env = os.environ.get("INTERLOCK_HOME")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "interlock"


def state_dir(home: Path | None = None) -> Path:
    """Approvals, toggles, audit and dead letters (inside the user dir by default)."""
    env = os.environ.get("INTERLOCK_STATE_DIR")
    if env:
        return Path(env).expanduser()
    return (home if home is not None else user_dir()) / "state"


def bundled_dir() -> Path:
    env = os.environ.get("INTERLOCK_BUNDLED")
    return Path(env).expanduser() if env else Path(__file__).parent.parent / "bundled"


def project_dir(project_root: Path) -> Path:
    return project_root / PROJECT_DIRNAME


def protected_paths(project_root: Path, home: Path | None = None) -> tuple[Path, ...]:
    """Folders (and store files) the agent's own tools must never write: the
    project's ``.interlock/``, the user dir, the managed dir, the state dir and a
    store moved out of it (docs/agent.md, Protected paths). Files pinned by an
    approval join them where the registry is known
    (:meth:`interlock.agent.protect.ProtectedPaths.default`)."""
    home = home if home is not None else user_dir()
    paths = [project_dir(project_root), home, managed_dir(), state_dir(home), *_store_files()]
    return tuple(dict.fromkeys(p.resolve() for p in paths))


def secret_paths(home: Path | None = None) -> tuple[Path, ...]:
    """Protected places the agent's tools may not even read: the state dir holds
    the server's tokens, the approvals and the stores."""
    home = home if home is not None else user_dir()
    return tuple(dict.fromkeys(p.resolve() for p in (state_dir(home), *_store_files())))


def _store_files() -> list[Path]:
    """A SQLite store moved out of the state dir (``$INTERLOCK_STORE``) is protected
    too, with its journal files and its folder's store ledger: the audit log is
    evidence the agent may not edit, nor hide the deletion of."""
    url = os.environ.get("INTERLOCK_STORE", "")
    if not url or ("://" in url and not url.startswith("sqlite://")):
        return []
    db = Path(url.removeprefix("sqlite://")).expanduser()
    return [db, *(db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal")),
            db.with_name(".interlock-stores")]
