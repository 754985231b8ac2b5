"""`interlock store check|export|repair`: look at a store, keep what it holds, and
start a damaged one afresh without losing the evidence.

- ``check``: integrity (SQLite ``PRAGMA integrity_check``; PostgreSQL: reachable
  and a schema this Interlock knows) and counts; exits 1 when damaged.
- ``export``: every readable row as JSON lines (``{"table", "row"}``); on a
  damaged SQLite file it reads around the damaged pages.
- ``repair`` (SQLite): moves the file aside as ``<file>.damaged-<time>`` (kept,
  never deleted), creates a fresh store and carries the readable rows over. A
  store that is gone (deleted while its folder stays, which opening refuses)
  is started anew, knowingly.
"""

import json
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from interlock.hosts.cli._store import STORE_HELP

_CHUNK = 256
_GIVE_UP = 64
"""Consecutive unreadable or empty chunks past the last known row before a scan stops."""


def check_cmd(
    store: Annotated[str | None, typer.Option(help=STORE_HELP,
                                              envvar="INTERLOCK_STORE")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help='{"store", "ok", "problems", "counts"}; the exit code is the same.')]
        = False,
) -> None:
    """Check the store's integrity and count its records; exit 1 when damaged."""
    from interlock.hosts.cli._common import print_json, user_errors

    with user_errors():
        where = _where(store)
        if isinstance(where, Path):
            problems = _sqlite_problems(where)
            counts = _counts(where)
        else:
            problems, counts = [], _pg_counts(where)
    label = str(where) if isinstance(where, Path) else _safe(where)
    if isinstance(where, Path) and not problems:
        from interlock.store import _ledger

        _ledger.clear_damaged(where)
    if as_json:
        print_json({"store": label, "ok": not problems, "problems": problems,
                    "counts": counts})
        if problems:
            raise typer.Exit(1)
        return
    if problems:
        typer.echo(f"damaged: {label}")
        for p in problems[:20]:
            typer.echo(f"  {p}")
        typer.echo(f"readable: {_describe(counts)}")
        typer.echo("keep what can be read: `interlock store export --out FILE`; start "
                   "afresh with it: `interlock store repair`")
        raise typer.Exit(1)
    typer.echo(f"ok: {label}: {_describe(counts)}")


def export_cmd(
    out: Annotated[Path | None, typer.Option(help="Write here (default: stdout).")] = None,
    store: Annotated[str | None, typer.Option(help=STORE_HELP,
                                              envvar="INTERLOCK_STORE")] = None,
) -> None:
    """Every readable record as JSON lines: {"table": ..., "row": {...}}."""
    from interlock.hosts.cli._common import user_errors

    with user_errors():
        where = _where(store)
        rows = _sqlite_rows(where) if isinstance(where, Path) else _pg_rows(where)
        fh = open(out, "w") if out is not None else sys.stdout  # noqa: SIM115
        n = 0
        try:
            for table, row in rows:
                fh.write(json.dumps({"table": table, "row": row}, default=str) + "\n")
                n += 1
        finally:
            if out is not None:
                fh.close()
    if out is not None:
        typer.echo(f"exported {n} records to {out}", err=True)


def repair_cmd(
    store: Annotated[str | None, typer.Option(help=STORE_HELP,
                                              envvar="INTERLOCK_STORE")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if the check passes.")] = False,
) -> None:
    """Move a damaged SQLite store aside (kept) and start afresh with its readable
    records."""
    from interlock.engine.errors import ConfigError
    from interlock.hosts.cli._common import user_errors

    with user_errors():
        gone = _gone(store)
        if gone is not None:
            from interlock.store import _ledger
            from interlock.store._sqlite import SQLiteBackend

            _ledger.forget(gone)
            SQLiteBackend(gone).close()
            typer.echo(f"{gone} was gone; started a new store there (its earlier "
                       "records are not in it)")
            return
        where = _where(store)
        if not isinstance(where, Path):
            raise ConfigError("repair is for SQLite stores", field="--store",
                              fix="for PostgreSQL use its own tools (pg_dump, a "
                                  "restore); `interlock store export` reads it")
        from interlock.store._sqlite import in_use

        if in_use(where):
            raise ConfigError(f"the store {where} is in use: a running process (`interlock "
                              "serve`, a host) has it open, and would go on writing into "
                              "the file moved aside", field="--store",
                              fix="stop it first (`interlock status` shows a project's "
                                  "server), then repair")
        if where.stat().st_size and not _sqlite_problems(where) and not force:
            from interlock.store import _ledger

            cleared = _ledger.clear_damaged(where)
            typer.echo(f"ok: {where} is not damaged; nothing to repair (--force "
                       "rebuilds it anyway)" + ("; opens no longer refuse it" if cleared
                                               else ""))
            return
        kept = _repair(where)
    counts = kept.pop("_moved_to")
    typer.echo(f"moved the damaged store to {counts}")
    typer.echo(f"started {where} afresh with the readable records: {_describe(kept)}")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Check, export and repair the audit and dead-letter store.",
                        no_args_is_help=True)
    app.add_typer(group, name="store")

    group.command("check")(check_cmd)
    group.command("export")(export_cmd)
    group.command("repair")(repair_cmd)


def _gone(store: str | None) -> Path | None:
    """The SQLite file named by ``store`` when it is missing but its folder's ledger
    says it held a store (see interlock.store._ledger)."""
    from interlock.store import _ledger, default_url

    url = store or default_url()
    if url.startswith(("postgresql://", "postgres://")):
        return None
    path = Path(url.removeprefix("sqlite://")).expanduser()
    return path if not path.exists() and _ledger.created(path) is not None else None


def _where(store: str | None) -> Path | str:
    """The SQLite file (which must exist) or the PostgreSQL URL."""
    from interlock.engine.errors import ConfigError
    from interlock.store import default_url

    url = store or default_url()
    if url.startswith(("postgresql://", "postgres://")):
        return url
    path = Path(url.removeprefix("sqlite://")).expanduser()
    if not path.exists():
        raise ConfigError(f"no store at {path}", field="--store",
                          fix="check --store / $INTERLOCK_STORE")
    return path


def _safe(url: str) -> str:
    from interlock.engine.redact import redact

    return redact(url)


def _describe(counts: dict[str, int]) -> str:
    return (f"{counts.get('interlock_audit', 0)} audit records, "
            f"{counts.get('interlock_dead_letters', 0)} dead letters, "
            f"{counts.get('interlock_breakers', 0)} breaker states")


def _connect(path: Path) -> sqlite3.Connection:
    # Only read (the repair writes into a new file); no journal mode change.
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    return conn


def _sqlite_problems(path: Path) -> list[str]:
    if path.stat().st_size == 0:
        return ["the file is empty (0 bytes): its records are gone"]
    try:
        conn = _connect(path)
        try:
            found = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(100)")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return [" ".join(str(exc).split())]
    if found == ["ok"]:
        return []
    return [" ".join(line.split()) for text in found for line in text.splitlines()
            if line.strip()]


def _tables() -> tuple[str, ...]:
    from interlock.store._sql import AUDIT, BREAKERS, DL

    return (AUDIT, DL, BREAKERS)


def _sqlite_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every row that can be read, table by table, stepping around damaged pages."""
    if path.stat().st_size == 0:
        return
    try:
        conn = _connect(path)
    except sqlite3.DatabaseError:
        return
    try:
        for table in _tables():
            yield from ((table, row) for row in _scan(conn, table))
    finally:
        conn.close()


def _scan(conn: sqlite3.Connection, table: str) -> Iterator[dict[str, Any]]:
    try:
        cur = conn.execute(f"SELECT * FROM {table} LIMIT 0")
        names = [d[0] for d in cur.description]
    except sqlite3.DatabaseError:
        return
    try:
        (top,), = conn.execute(f"SELECT MAX(rowid) FROM {table}").fetchall()
    except sqlite3.DatabaseError:
        top = None
    start, misses = 0, 0
    while top is None or start <= top:
        rows = _chunk(conn, table, start)
        for row in rows:
            yield dict(zip(names, row, strict=True))
        misses = 0 if rows else misses + 1
        if top is None and misses >= _GIVE_UP:
            return
        start += _CHUNK


def _chunk(conn: sqlite3.Connection, table: str, start: int) -> list[tuple[Any, ...]]:
    sql = f"SELECT * FROM {table} WHERE rowid >= ? AND rowid < ? ORDER BY rowid"
    try:
        return conn.execute(sql, (start, start + _CHUNK)).fetchall()
    except sqlite3.DatabaseError:
        pass
    out = []
    for rowid in range(start, start + _CHUNK):  # one by one around the damage
        try:
            out.extend(conn.execute(f"SELECT * FROM {table} WHERE rowid = ?",
                                    (rowid,)).fetchall())
        except sqlite3.DatabaseError:
            continue
    return out


def _counts(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for table, _row in _sqlite_rows(path):
        counts[table] = counts.get(table, 0) + 1
    return counts


def _pg_counts(url: str) -> dict[str, int]:
    from interlock.store import backend_for

    backend = backend_for(url)  # checks the schema version and lost tables
    try:
        return {t: int(backend._query(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in _tables()}
    finally:
        backend.close()


def _pg_rows(url: str) -> Iterator[tuple[str, dict[str, Any]]]:
    from interlock.store import backend_for

    backend = backend_for(url)
    try:
        for table in _tables():
            names = [r[0] for r in backend._query(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                "AND table_schema = current_schema() ORDER BY ordinal_position", (table,))]
            for row in backend._query(f"SELECT {', '.join(names)} FROM {table}"):
                yield table, dict(zip(names, row, strict=True))
    finally:
        backend.close()


def _repair(path: Path) -> dict[str, Any]:
    from interlock.store._sqlite import SQLiteBackend

    rows = list(_sqlite_rows(path))
    stamp = time.strftime("%Y%m%dT%H%M%S")
    moved = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(path.with_name(f"{moved.name}{suffix}"))
    path.rename(moved)
    from interlock.store import _ledger

    _ledger.forget(path)  # knowingly new: opening it is not the refusal of a lost store
    backend = SQLiteBackend(path)
    conn = backend.connect(writer=True)
    counts: dict[str, Any] = {}
    try:
        known = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in _tables()}
        for table, row in rows:
            cols = [c for c in row if c in known[table]]
            conn.execute(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) "
                         f"VALUES ({', '.join('?' * len(cols))})", [row[c] for c in cols])
            counts[table] = counts.get(table, 0) + 1
        conn.commit()
    finally:
        conn.close()
        backend.close()
    counts["_moved_to"] = moved
    return counts
