"""Durable dead letters and audit log, on SQLite (default) or PostgreSQL.

    from interlock.store import open_store

    store = open_store()                        # $INTERLOCK_STORE, else the state dir
    store = open_store("postgresql://u@db/interlock")
    store = open_store("/var/lib/interlock/interlock.db")

Where the default lives: ``$INTERLOCK_STATE_DIR`` if set; else the project's
``.interlock/state/`` when the working directory is inside a project (a folder
with ``.interlock/``); else the user's ``$XDG_STATE_HOME/interlock`` (by
default ``~/.local/state/interlock``). The file is ``interlock.db``.
"""

from __future__ import annotations

import os
from pathlib import Path

from interlock._errors import ConfigError
from interlock.store._records import (
    AuditEntry,
    AuditQuery,
    BreakerRecord,
    DeadLetter,
    Retention,
)
from interlock.store._sql import SQLBackend
from interlock.store._store import Store

DB_NAME = "interlock.db"


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.interlock/``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".interlock").is_dir():
            return folder
    return None


def state_dir(project: Path | None = None) -> Path:
    """The directory for approvals, audit and dead letters."""
    explicit = os.environ.get("INTERLOCK_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    root = project if project is not None else project_root()
    if root is not None:
        return root / ".interlock" / "state"
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return base / "interlock"


def default_url(project: Path | None = None) -> str:
    return os.environ.get("INTERLOCK_STORE") or str(state_dir(project) / DB_NAME)


def backend_for(url: str) -> SQLBackend:
    """A backend for ``url``: ``postgresql://`` or ``postgres://``, ``sqlite:///path``,
    or a plain file path."""
    if url.startswith(("postgresql://", "postgres://")):
        from interlock.store._postgres import PostgresBackend

        return PostgresBackend(url)
    if "://" in url and not url.startswith("sqlite://"):
        scheme = url.split("://", 1)[0]
        raise ConfigError(f"unknown store scheme {scheme!r}", field="store",
                          fix="use postgresql://..., sqlite:///path or a file path")
    from interlock.store._sqlite import SQLiteBackend

    path = url.removeprefix("sqlite://") if url.startswith("sqlite://") else url
    try:
        return SQLiteBackend(Path(path).expanduser())
    except OSError as exc:
        raise ConfigError(f"cannot open the store at {path}: {exc.strerror or exc}",
                          field="store", fix="check the path and its permissions") from None


def open_store(url: str | None = None, *, project: Path | None = None,
               retention: Retention | None = None, interval: float = 0.05) -> Store:
    """Open (creating if needed) the store at ``url``, or the default one."""
    return Store(backend_for(url or default_url(project)), retention=retention,
                 interval=interval)


__all__ = [
    "DB_NAME",
    "AuditEntry",
    "AuditQuery",
    "BreakerRecord",
    "DeadLetter",
    "Retention",
    "Store",
    "backend_for",
    "default_url",
    "open_store",
    "project_root",
    "state_dir",
]
