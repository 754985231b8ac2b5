"""Store backends for tests: a SQLite file, and a PostgreSQL schema when a server
is configured (INTERLOCK_TEST_PG_URL; `.ci/run` starts one)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

PG_URL = os.environ.get("INTERLOCK_TEST_PG_URL", "")

needs_pg = pytest.mark.skipif(
    not PG_URL,
    reason="no PostgreSQL server configured: set INTERLOCK_TEST_PG_URL "
           "(e.g. postgresql://postgres@127.0.0.1:5432/postgres); CI starts one",
)

BACKENDS = [pytest.param("sqlite", id="sqlite"),
            pytest.param("postgres", id="postgres", marks=needs_pg)]


@contextlib.contextmanager
def fresh_url(kind: str, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty store of ``kind``; a PostgreSQL schema is dropped afterwards."""
    if kind == "sqlite":
        yield str(tmp_path / "state" / "interlock.db")
        return
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
