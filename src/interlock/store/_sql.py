"""The SQL both backends share; each backend supplies its connection and DDL.

Writes happen on one connection owned by the store's writer thread, one
transaction per batch. Reads use a second connection behind a lock, so the
CLI and `status` never wait for the writer (SQLite's WAL lets them read while
it writes; PostgreSQL's MVCC does the same).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

from interlock.engine.logs import logger
from interlock.store._records import AuditEntry, AuditQuery, BreakerRecord, DeadLetter

DL = "interlock_dead_letters"
AUDIT = "interlock_audit"
BREAKERS = "interlock_breakers"
META = "interlock_meta"
OVERFLOW = "interlock_dead_letter_overflow"
"""Per hook and failure mode: failures past the per-key cap, counted, not stored."""
PAYLOADS = "interlock_audit_payloads"
"""A gate event's payload (redacted) per dispatch, kept only when the store is asked
to (``audit_payloads``): what `interlock policy diff --audit` replays."""
TABLES = (DL, AUDIT, BREAKERS)

log = logger("interlock")

SCHEMA_VERSION = 1
"""Kept in ``interlock_meta``; a store written by a newer Interlock is refused."""

DL_COLS = ("at", "hook", "event", "subject", "session_id", "attempts", "mode",
           "contract_version", "invocation_id", "invocation_digest", "digest", "error",
           "fail_closed",
           "resolved_at", "resolved_by", "note")
AUDIT_COLS = ("at", "dispatch_id", "session_id", "event", "subject", "hook", "verdict",
              "status", "reason", "latency_ms", "revision", "outcome", "failure", "error")
BREAKER_COLS = ("hook", "digest", "state", "failures", "opens", "updated_at", "retry_at")
OVERFLOW_COLS = ("hook", "mode", "overflow", "first_at", "last_at")
PAYLOAD_COLS = ("at", "dispatch_id", "event", "payload")

# Column types, written once; each backend maps them to its own names.
_TYPES = {
    "at": "REAL", "resolved_at": "REAL", "updated_at": "REAL", "retry_at": "REAL",
    "latency_ms": "REAL", "attempts": "INT", "contract_version": "INT",
    "fail_closed": "INT", "revision": "INT", "failures": "INT", "opens": "INT",
    "overflow": "INT", "first_at": "REAL", "last_at": "REAL",
}
_NOT_NULL = {
    DL: {"at", "hook", "event", "session_id", "mode", "error", "digest"},
    AUDIT: {"at", "dispatch_id", "session_id", "event", "hook", "verdict", "status", "outcome"},
    BREAKERS: {"hook", "digest", "state"},
    OVERFLOW: set(OVERFLOW_COLS),
    PAYLOADS: set(PAYLOAD_COLS),
}


class SQLBackend:
    """Dead letters, audit entries and breaker states in three tables."""

    ph = "?"
    """The driver's placeholder."""
    id_type = "INTEGER PRIMARY KEY AUTOINCREMENT"
    """Dead-letter IDs are shown to people: never reuse one."""
    audit_id_type = "INTEGER PRIMARY KEY"
    """Audit IDs only order rows; plain rowids insert faster."""
    type_names = {"REAL": "REAL", "INT": "INTEGER", "TEXT": "TEXT"}
    location = ""
    name = ""
    """``sqlite`` or ``postgresql`` (shown in status)."""

    def __init__(self) -> None:
        self._write: Any = None
        self._read: Any = None
        self._read_lock = threading.Lock()

    # -- for subclasses -------------------------------------------------------
    def connect(self, *, writer: bool) -> Any:
        raise NotImplementedError

    def ensure_schema(self, conn: Any) -> None:
        cur = conn.cursor()
        self.create(cur)
        conn.commit()

    def existing_tables(self, cur: Any) -> set[str]:
        raise NotImplementedError

    def complete(self, cur: Any) -> bool:
        """Every table and the version row are there (nothing for :meth:`create` to add)."""
        found = self.existing_tables(cur)
        if not all(t in found for t in (*TABLES, META)):
            return False
        cur.execute(f"SELECT 1 FROM {META} WHERE key = 'schema_version'")
        return cur.fetchone() is not None

    def create(self, cur: Any) -> None:
        """Create what is missing, after checking that nothing was lost: a store
        whose version row says it held tables that are now gone is refused, as
        is one written by a newer Interlock."""
        from interlock.engine.errors import ConfigError

        found = self.existing_tables(cur)
        version = None
        if META in found:
            cur.execute(f"SELECT value FROM {META} WHERE key = 'schema_version'")
            row = cur.fetchone()
            version = int(row[0]) if row else None
        if version is not None and version > SCHEMA_VERSION:
            raise ConfigError(
                f"the store {self.location} has schema version {version}, newer than this "
                f"Interlock's ({SCHEMA_VERSION})", field="store",
                fix="upgrade Interlock, or point --store at another store")
        gone = [t for t in TABLES if t not in found]
        if version is not None and gone:
            raise ConfigError(
                f"the store {self.location} has lost its table(s) {', '.join(gone)}: its "
                "records are gone", field="store",
                fix="restore it from a backup; `interlock store export` saves what is left "
                    "and `interlock store repair` starts it afresh")
        for sql in self.ddl():
            cur.execute(sql)
        if version is None:
            cur.execute(f"INSERT INTO {META} (key, value) VALUES ('schema_version', "
                        f"'{SCHEMA_VERSION}')")
        if not any(t in found for t in TABLES):
            # Never silent: a store that replaced one holding records shows up here,
            # in the log, and as its creation time in `interlock status`.
            cur.execute(f"INSERT INTO {META} (key, value) VALUES ('created_at', "
                        f"'{time.time():.3f}')")
            log.warning("interlock store: created a new, empty store at %s", self.location)

    def created_at(self) -> float | None:
        """When this store was created (None for one older than the record)."""
        rows = self._query(f"SELECT value FROM {META} WHERE key = 'created_at'")
        return float(rows[0][0]) if rows else None

    def ddl(self) -> list[str]:
        def table(name: str, cols: Sequence[str], key: str | None, ident: str = "") -> str:
            defs = [] if key else [f"id {ident or self.id_type}"]
            for col in cols:
                kind = self.type_names[_TYPES.get(col, "TEXT")]
                defs.append(f"{col} {kind}{' NOT NULL' if col in _NOT_NULL[name] else ''}")
            if key:
                defs.append(f"PRIMARY KEY ({key})")
            return f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(defs)})"

        return [
            f"CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            table(DL, DL_COLS, None),
            table(AUDIT, AUDIT_COLS, None, self.audit_id_type),
            table(BREAKERS, BREAKER_COLS, "hook, digest"),
            table(OVERFLOW, OVERFLOW_COLS, "hook, mode"),
            table(PAYLOADS, PAYLOAD_COLS, None, self.audit_id_type),
            f"CREATE INDEX IF NOT EXISTS {PAYLOADS}_at ON {PAYLOADS} (at)",
            f"CREATE INDEX IF NOT EXISTS {DL}_at ON {DL} (at)",
            f"CREATE INDEX IF NOT EXISTS {DL}_unresolved ON {DL} (resolved_at, hook)",
            f"CREATE INDEX IF NOT EXISTS {AUDIT}_at ON {AUDIT} (at)",
            f"CREATE INDEX IF NOT EXISTS {AUDIT}_session ON {AUDIT} (session_id)",
            f"CREATE INDEX IF NOT EXISTS {AUDIT}_hook ON {AUDIT} (hook, verdict)",
        ]

    # -- writing (writer thread only) ------------------------------------------
    def write(self, audit: Sequence[tuple[Any, ...]], letters: Sequence[DeadLetter],
              breakers: Sequence[BreakerRecord],
              overflow: Sequence[tuple[str, str, int, float, float]] = (),
              payloads: Sequence[tuple[Any, ...]] = ()) -> None:
        """Write one batch in one transaction; returns once it has committed.
        ``overflow``: (hook, mode, count, first at, last at) added to the counts;
        ``payloads``: rows of ``PAYLOAD_COLS``."""
        if self._write is None:
            self._write = self.connect(writer=True)
        conn = self._write
        ph = self.ph
        # PostgreSQL text cannot hold NUL; both backends write it escaped, so records
        # read back alike (docs/reliability.md, "The store").
        audit = [_nul_free(r) for r in audit]
        overflow = [_nul_free(r) for r in overflow]
        payloads = [_nul_free(r) for r in payloads]
        try:
            cur = conn.cursor()
            if letters:
                cur.executemany(
                    f"INSERT INTO {DL} ({', '.join(DL_COLS)}) "
                    f"VALUES ({', '.join([ph] * len(DL_COLS))})",
                    [_nul_free(tuple(_value(getattr(d, c)) for c in DL_COLS))
                     for d in letters])
            if audit:
                cur.executemany(
                    f"INSERT INTO {AUDIT} ({', '.join(AUDIT_COLS)}) "
                    f"VALUES ({', '.join([ph] * len(AUDIT_COLS))})",
                    audit)
            if breakers:
                updates = ", ".join(f"{c} = excluded.{c}" for c in BREAKER_COLS[2:])
                cur.executemany(
                    f"INSERT INTO {BREAKERS} ({', '.join(BREAKER_COLS)}) "
                    f"VALUES ({', '.join([ph] * len(BREAKER_COLS))}) "
                    f"ON CONFLICT (hook, digest) DO UPDATE SET {updates}",
                    [_nul_free(tuple(getattr(b, c) for c in BREAKER_COLS))
                     for b in breakers])
            if overflow:
                cur.executemany(
                    f"INSERT INTO {OVERFLOW} ({', '.join(OVERFLOW_COLS)}) "
                    f"VALUES ({', '.join([ph] * len(OVERFLOW_COLS))}) "
                    f"ON CONFLICT (hook, mode) DO UPDATE SET "
                    f"overflow = {OVERFLOW}.overflow + excluded.overflow, "
                    f"last_at = excluded.last_at", overflow)
            if payloads:
                cur.executemany(
                    f"INSERT INTO {PAYLOADS} ({', '.join(PAYLOAD_COLS)}) "
                    f"VALUES ({', '.join([ph] * len(PAYLOAD_COLS))})", payloads)
            conn.commit()
        except BaseException:
            # Roll back before dropping it: a closed SQLite connection whose failed
            # statement is still referenced lives on, holding the file's write lock.
            with contextlib.suppress(Exception):
                conn.rollback()
            self._drop_writer()
            raise
        self.after_commit()

    def file_problem(self) -> str | None:
        """Why the store's file is no longer the one written (SQLite), or None."""
        return None

    def permanent(self, exc: Exception) -> bool:
        """True when ``exc``, from writing a batch, is about its data: a retry would
        fail alike (a text the driver cannot encode, a value out of range)."""
        return isinstance(exc, (ValueError, TypeError, OverflowError))

    def after_commit(self) -> None:
        """Called on the writer thread after each committed batch (SQLite checkpoints)."""

    def prune_dead_letters(self, max_rows: int, oldest: float, *,
                           limit: int = 1 << 62) -> int:
        """Delete resolved dead letters older than ``oldest``, then the oldest resolved
        ones while there are more than ``max_rows``; at most ``limit`` in all.
        Unresolved ones are never deleted."""
        ph = self.ph
        removed = self._change(
            f"DELETE FROM {DL} WHERE id IN (SELECT id FROM {DL} WHERE resolved_at IS NOT "
            f"NULL AND at < {ph} ORDER BY id LIMIT {ph})", (oldest, limit))
        if removed >= limit:
            return removed
        # One statement counts and deletes: a count read first could be stale by the
        # time another prune (this store's timer, the CLI, a second server) deleted.
        removed += self._change(
            f"DELETE FROM {DL} WHERE id IN (SELECT id FROM {DL} WHERE resolved_at IS NOT "
            f"NULL ORDER BY id LIMIT (SELECT CASE WHEN COUNT(*) - {ph} > {ph} THEN {ph} "
            f"WHEN COUNT(*) > {ph} THEN COUNT(*) - {ph} ELSE 0 END FROM {DL}))",
            (max_rows, limit - removed, limit - removed, max_rows, max_rows))
        return removed

    def overflow(self) -> list[tuple[str, str, int, float, float]]:
        """(hook, mode, failures counted but not stored, first at, last at)."""
        rows = self._query(f"SELECT {', '.join(OVERFLOW_COLS)} FROM {OVERFLOW} "
                           "ORDER BY hook, mode")
        return [(str(h), str(m), int(n), float(f), float(la)) for h, m, n, f, la in rows]

    def prune(self, table: str, max_rows: int, oldest: float, *,
              limit: int = 1 << 62) -> int:
        """Delete rows older than ``oldest`` and all but the newest ``max_rows``, the
        oldest first, at most ``limit`` of them."""
        ph = self.ph
        removed = self._change(
            f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE at < {ph} "
            f"ORDER BY id LIMIT {ph})", (oldest, limit))
        if removed >= limit:
            return removed
        removed += self._change(
            f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE id <= "
            f"(SELECT id FROM {table} ORDER BY id DESC LIMIT 1 OFFSET {ph}) "
            f"ORDER BY id LIMIT {ph})", (max_rows, limit - removed))
        return removed

    def payloads(self, since: float, limit: int) -> list[tuple[float, str, str, str]]:
        """The newest ``limit`` kept payloads since ``since``, oldest first:
        (at, dispatch_id, event, payload JSON)."""
        ph = self.ph
        rows = self._query(f"SELECT at, dispatch_id, event, payload FROM {PAYLOADS} "
                           f"WHERE at >= {ph} ORDER BY id DESC LIMIT {ph}", (since, limit))
        return [(float(a), str(d), str(e), str(p)) for a, d, e, p in reversed(rows)]

    def gate_dispatches(self, since: float, events: Sequence[str]) -> int:
        """How many dispatches of ``events`` the audit holds since ``since``."""
        ph = self.ph
        marks = ", ".join([ph] * len(events))
        (n,), = self._query(f"SELECT COUNT(DISTINCT dispatch_id) FROM {AUDIT} WHERE at >= {ph} "
                            f"AND event IN ({marks})", (since, *events))
        return int(n)

    def _drop_writer(self) -> None:
        conn, self._write = self._write, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    # -- reading ----------------------------------------------------------------
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            if self._read is None:
                self._read = self.connect(writer=False)
            conn = self._read
            try:
                cur = conn.cursor()
                cur.execute(sql, tuple(params))
                rows = list(cur.fetchall())
                conn.commit()  # end the read transaction: the next read sees new rows
                return rows
            except BaseException:
                self._read = None
                try:
                    conn.close()
                except Exception:
                    pass
                raise

    def _change(self, sql: str, params: Sequence[Any]) -> int:
        with self._read_lock:
            if self._read is None:
                self._read = self.connect(writer=False)
            conn = self._read
            cur = conn.cursor()
            try:
                cur.execute(sql, tuple(params))
                count = max(int(cur.rowcount), 0)
                conn.commit()
                return count
            except BaseException:
                conn.rollback()
                raise

    def audit(self, q: AuditQuery) -> list[AuditEntry]:
        where: list[str] = []
        params: list[Any] = []
        ph = self.ph
        if q.session is not None:
            where.append(f"session_id = {ph}")
            params.append(q.session)
        if q.hook is not None:
            if ":" in q.hook:
                where.append(f"hook = {ph}")
                params.append(q.hook)
            else:
                where.append(f"hook LIKE {ph} ESCAPE '\\'")
                params.append("%:" + q.hook.replace("%", r"\%").replace("_", r"\_"))
        if q.verdict is not None:
            where.append(f"verdict = {ph}")
            params.append(q.verdict)
        if q.event is not None:
            where.append(f"event = {ph}")
            params.append(q.event)
        if q.since is not None:
            where.append(f"at >= {ph}")
            params.append(q.since)
        if q.until is not None:
            where.append(f"at < {ph}")
            params.append(q.until)
        if q.after is not None:
            where.append(f"id > {ph}")
            params.append(q.after)
        sql = f"SELECT id, {', '.join(AUDIT_COLS)} FROM {AUDIT}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if q.limit:
            sql += f" LIMIT {int(q.limit)}"
        rows = self._query(sql, params)
        names = ("id", *AUDIT_COLS)
        return [AuditEntry(**dict(zip(names, r, strict=True))) for r in reversed(rows)]

    def dead_letters(self, *, unresolved: bool = False, hook: str | None = None,
                     limit: int = 100, before: int | None = None) -> list[DeadLetter]:
        where: list[str] = []
        params: list[Any] = []
        if unresolved:
            where.append("resolved_at IS NULL")
        if before is not None:
            where.append(f"id < {self.ph}")
            params.append(before)
        if hook is not None:
            where.append(f"hook = {self.ph}")
            params.append(hook)
        sql = f"SELECT id, {', '.join(DL_COLS)} FROM {DL}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        names = ("id", *DL_COLS)
        out = []
        for row in reversed(self._query(sql, params)):
            data = dict(zip(names, row, strict=True))
            data["fail_closed"] = bool(data["fail_closed"])
            out.append(DeadLetter(**data))
        return out

    def resolve(self, ident: int, *, by: str, note: str | None,
                at: float) -> tuple[str, str] | None:
        """Mark one dead letter operator-resolved (kept, never deleted); returns its
        (hook, mode), or None if unknown or already resolved."""
        ph = self.ph
        rows = self._query(f"SELECT hook, mode FROM {DL} WHERE id = {ph} "
                           "AND resolved_at IS NULL", (ident,))
        if not rows or not self._change(
                f"UPDATE {DL} SET resolved_at = {ph}, resolved_by = {ph}, note = {ph} "
                f"WHERE id = {ph} AND resolved_at IS NULL", (at, by, note, ident)):
            return None
        return str(rows[0][0]), str(rows[0][1])

    def exists(self, ident: int) -> bool:
        return bool(self._query(f"SELECT 1 FROM {DL} WHERE id = {self.ph}", (ident,)))

    def breakers(self) -> list[BreakerRecord]:
        rows = self._query(f"SELECT {', '.join(BREAKER_COLS)} FROM {BREAKERS} ORDER BY hook")
        return [BreakerRecord(**dict(zip(BREAKER_COLS, r, strict=True))) for r in rows]

    def counts(self) -> dict[str, int]:
        (dl_total, dl_open), = self._query(
            f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN resolved_at IS NULL THEN 1 ELSE 0 END), 0)"
            f" FROM {DL}")
        (audit_total,), = self._query(f"SELECT COUNT(*) FROM {AUDIT}")
        return {"dead_letters": int(dl_total), "unresolved": int(dl_open),
                "audit": int(audit_total)}

    def unresolved_by_key(self) -> dict[tuple[str, str], int]:
        """Unresolved dead letters by (hook, mode)."""
        rows = self._query(f"SELECT hook, mode, COUNT(*) FROM {DL} WHERE resolved_at IS NULL "
                           "GROUP BY hook, mode")
        return {(str(h), str(m)): int(n) for h, m, n in rows}

    def unresolved_by_hook(self) -> dict[str, int]:
        rows = self._query(f"SELECT hook, COUNT(*) FROM {DL} WHERE resolved_at IS NULL "
                           "GROUP BY hook")
        return {str(h): int(n) for h, n in rows}

    def dead_letter_summary(self) -> list[tuple[str, str, int, int, float]]:
        """(hook, mode, total, unresolved, last at)."""
        rows = self._query(
            f"SELECT hook, mode, COUNT(*), SUM(CASE WHEN resolved_at IS NULL THEN 1 ELSE 0 END),"
            f" MAX(at) FROM {DL} GROUP BY hook, mode ORDER BY hook, mode")
        return [(str(h), str(m), int(n), int(u or 0), float(a)) for h, m, n, u, a in rows]

    def audit_summary(self, since: float) -> list[tuple[str, str, int, float | None, float]]:
        """(hook, verdict, count, mean latency ms, last at) since ``since``."""
        rows = self._query(
            f"SELECT hook, verdict, COUNT(*), AVG(latency_ms), MAX(at) FROM {AUDIT} "
            f"WHERE at >= {self.ph} GROUP BY hook, verdict ORDER BY hook, verdict", (since,))
        return [(str(h), str(v), int(n), None if lat is None else float(lat), float(a))
                for h, v, n, lat, a in rows]

    def close(self) -> None:
        self._drop_writer()
        with self._read_lock:
            conn, self._read = self._read, None
        if conn is not None:
            conn.close()


def _value(v: Any) -> Any:
    return int(v) if isinstance(v, bool) else v


NUL = "\\x00"
"""What a NUL character in a record's text is written as."""


def _nul_free(row: tuple[Any, ...]) -> tuple[Any, ...]:
    for v in row:
        if type(v) is str and "\x00" in v:
            return tuple(v.replace("\x00", NUL) if type(v) is str else v for v in row)
    return row
