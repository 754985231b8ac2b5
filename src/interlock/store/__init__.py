"""Durable dead letters and audit log, on SQLite (default) or PostgreSQL.

    from interlock.store import open_store

    store = open_store()                        # $INTERLOCK_STORE, else the state dir
    store = open_store("postgresql://u@db/interlock")
    store = open_store("/var/lib/interlock/interlock.db")

Where the default lives: ``$INTERLOCK_STORE`` (a URL or path) if set; else
``interlock.db`` in Interlock's state dir (``$INTERLOCK_STATE_DIR``, else
``<user dir>/state``), the one place every host writes and every command reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from interlock.engine.errors import ConfigError
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


def state_dir() -> Path:
    """Where the default store lives: Interlock's one state dir
    (:func:`interlock.store.paths.state_dir`), shared by every host and every command."""
    from interlock.store.paths import state_dir as interlock_state_dir

    return interlock_state_dir()


def default_url() -> str:
    return os.environ.get("INTERLOCK_STORE") or str(state_dir() / DB_NAME)


def backend_for(url: str, *, check_up_to: int | None = None) -> SQLBackend:
    """A backend for ``url``: ``postgresql://`` or ``postgres://``, ``sqlite:///path``,
    or a plain file path. ``check_up_to``: see SQLiteBackend."""
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
        return SQLiteBackend(Path(path).expanduser(), check_up_to=check_up_to)
    except OSError as exc:
        raise ConfigError(f"cannot open the store at {path}: {exc.strerror or exc}",
                          field="store", fix="check the path and its permissions") from None


def open_store(url: str | None = None, *, retention: Retention | None = None,
               interval: float = 0.05, check_up_to: int | None = None) -> Store:
    """Open (creating if needed) the store at ``url``, or the default one.
    ``check_up_to``: see SQLiteBackend (for opens that write a record and exit)."""
    return Store(backend_for(url or default_url(), check_up_to=check_up_to),
                 retention=retention, interval=interval)


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
    "state_dir",
]
