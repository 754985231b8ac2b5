"""SQLite backend: one file in WAL mode, created 0600 in a 0700 directory."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from interlock.store._sql import SQLBackend


class SQLiteBackend(SQLBackend):
    ph = "?"
    name = "sqlite"

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        """``synchronous``: FULL makes a committed batch survive power loss, not only a
        crashed process; batches make its fsync cheap per record."""
        super().__init__()
        self.path = Path(path)
        self.location = str(self.path)
        self.synchronous = synchronous
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            # The state directory holds audit and dead letters: others may not read it.
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        conn = self.connect(writer=True)
        try:
            self.ensure_schema(conn)
        finally:
            conn.close()

    def connect(self, *, writer: bool) -> Any:
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False,
                               isolation_level="DEFERRED")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn
