"""PostgreSQL backend (psycopg 3), for several machines sharing one store.

Selected by a ``postgresql://`` URL. psycopg is an optional dependency: the
``postgres`` extra.
"""

from __future__ import annotations

from typing import Any

from interlock.engine.errors import ConfigError, install_extra
from interlock.engine.redact import redact
from interlock.store._sql import SQLBackend

_LOCK_ID = 0x1A7E_10C4  # advisory lock: concurrent first starts create the schema once


class PostgresBackend(SQLBackend):
    ph = "%s"
    name = "postgresql"
    id_type = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
    audit_id_type = id_type
    type_names = {"REAL": "DOUBLE PRECISION", "INT": "BIGINT", "TEXT": "TEXT"}

    def __init__(self, url: str) -> None:
        super().__init__()
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                "a postgresql:// store needs the psycopg driver, which is not installed",
                field="store", fix=install_extra("postgres")) from None
        self._psycopg = psycopg
        self.url = url
        self.location = redact(url)  # never show the password
        conn = self.connect(writer=True)
        try:
            self.ensure_schema(conn)
        finally:
            conn.close()

    def connect(self, *, writer: bool) -> Any:
        try:
            return self._psycopg.connect(self.url, connect_timeout=10,
                                         application_name="interlock")
        except self._psycopg.OperationalError as exc:
            raise ConfigError(f"cannot connect to {self.location}: {redact(str(exc))}",
                              field="store",
                              fix="check the URL and that the server is running") from None

    def permanent(self, exc: Exception) -> bool:
        return super().permanent(exc) or isinstance(exc, self._psycopg.DataError)

    def ensure_schema(self, conn: Any) -> None:
        cur = conn.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
        self.create(cur)
        conn.commit()

    def existing_tables(self, cur: Any) -> set[str]:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        return {str(r[0]) for r in cur.fetchall()}
