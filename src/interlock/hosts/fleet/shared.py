"""One PostgreSQL connection for the fleet's shared state, and its listener.

Writes go through :meth:`Fleet.transaction`; a change other replicas must see
at once is announced in the same transaction (``pg_notify`` is delivered at
commit). A listener thread holds a second connection on ``LISTEN`` and calls
the handlers registered with :meth:`Fleet.on`. It pings that connection every
``PING_S``; while it is not connected, :meth:`Fleet.fresh` is False and the
shared pieces read PostgreSQL on every call instead of trusting their cache,
so a missed notification cannot keep a revoked token alive (docs/fleet.md,
Consistency). After a reconnect every ``resync`` handler runs, since
notifications sent meanwhile are lost.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from interlock.engine.errors import ConfigError, install_extra
from interlock.engine.logs import logger
from interlock.engine.redact import redact

log = logger("interlock.fleet")

CHANNEL = "interlock_fleet"
PING_S = 0.5
"""How often the listener proves its connection alive; with the reconnect, the
bound on how long a replica can trust a cache after PostgreSQL went away."""
SILENT_S = PING_S * 3 + 1.0
"""A listener whose last ping came back longer ago than this is not trusted."""
QUERY_TIMEOUT_MS = 2000
KEEPALIVE: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2,
             "keepalives_count": 3, "tcp_user_timeout": 10_000}
"""libpq's TCP settings: a connection whose packets go nowhere errors within about
10 s (then the listener reconnects) instead of after the kernel's two hours."""
_LOCK_ID = 0x1A7E_F1EE

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS fleet_tokens (name TEXT PRIMARY KEY, role TEXT NOT NULL, "
    "digest TEXT NOT NULL UNIQUE, created DOUBLE PRECISION NOT NULL, "
    "expires DOUBLE PRECISION NOT NULL DEFAULT 0, sender TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS fleet_breakers (key TEXT PRIMARY KEY, state TEXT NOT NULL, "
    "changed DOUBLE PRECISION NOT NULL, replica TEXT NOT NULL)",
    # The opener's numbers, for a replica that takes the state before its first call.
    "ALTER TABLE fleet_breakers ADD COLUMN IF NOT EXISTS threshold INTEGER NOT NULL DEFAULT 3",
    "ALTER TABLE fleet_breakers ADD COLUMN IF NOT EXISTS cooldown DOUBLE PRECISION "
    "NOT NULL DEFAULT 60",
    "CREATE TABLE IF NOT EXISTS fleet_rate (bucket TEXT PRIMARY KEY, "
    "tokens DOUBLE PRECISION NOT NULL, last DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fleet_revisions (id BIGINT GENERATED ALWAYS AS IDENTITY "
    "PRIMARY KEY, replica TEXT NOT NULL, dispatches TEXT NOT NULL, revision BIGINT NOT NULL, "
    "policy TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fleet_policy (repo TEXT PRIMARY KEY, deployed TEXT NOT NULL, "
    "ref TEXT NOT NULL, commit TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, "
    "replica TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fleet_approvals (key TEXT PRIMARY KEY, digest TEXT NOT NULL, "
    "name TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, by TEXT NOT NULL)",
    # A revocation keeps its row, so --accept-hooks cannot approve that content again.
    "ALTER TABLE fleet_approvals ADD COLUMN IF NOT EXISTS revoked BOOLEAN NOT NULL "
    "DEFAULT false",
)


class FleetUnavailable(Exception):
    """PostgreSQL did not answer; whoever asked fails closed."""


Handler = Callable[[str], None]


class Fleet:
    """The shared state's connection (thread-safe) and its LISTEN thread."""

    def __init__(self, url: str, *, replica: str | None = None, listen: bool = True) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError("a fleet needs the psycopg driver, which is not installed",
                              field="store", fix=install_extra("postgres")) from None
        if not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"a fleet shares its state through PostgreSQL, not {redact(url)}",
                              field="--store", fix="give --store postgresql://...")
        self._psycopg = psycopg
        self.url = url
        self.location = redact(url)
        self.replica = replica or f"{socket.gethostname()}:{os.getpid()}"
        self._lock = threading.Lock()
        self._conn: Any = None
        self._handlers: dict[str, list[Handler]] = {}
        self._resync: list[Callable[[], None]] = []
        self._connected = threading.Event()
        self._beat = 0.0
        self._stop = threading.Event()
        try:
            with self.transaction() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
                for statement in SCHEMA:
                    cur.execute(statement)
        except FleetUnavailable as exc:
            raise ConfigError(f"cannot open the fleet state in {self.location}: {exc}",
                              field="--store",
                              fix="check the URL and that PostgreSQL is running") from None
        self._thread: threading.Thread | None = None
        if listen:
            self._thread = threading.Thread(target=self._listen, name="interlock-fleet",
                                            daemon=True)
            self._thread.start()
            self._connected.wait(5)

    # -- queries ----------------------------------------------------------------
    def _connect(self) -> Any:
        return self._psycopg.connect(self.url, connect_timeout=3, application_name="interlock",
                                     options=f"-c statement_timeout={QUERY_TIMEOUT_MS}",
                                     **KEEPALIVE)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor in one transaction, committed at the end; FleetUnavailable if
        PostgreSQL cannot be reached (the connection is reopened next time)."""
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                with self._conn.transaction():
                    yield self._conn.cursor()
            except self._psycopg.Error as exc:
                with contextlib.suppress(Exception):
                    if self._conn is not None:
                        self._conn.close()
                self._conn = None
                raise FleetUnavailable(redact(str(exc)).strip() or type(exc).__name__) from None

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.transaction() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []

    @staticmethod
    def announce(cur: Any, kind: str, payload: str) -> None:
        """Tell every replica (delivered when the transaction commits)."""
        cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{kind}:{payload}"))

    # -- the listener -------------------------------------------------------------
    def on(self, kind: str, handler: Handler) -> None:
        self._handlers.setdefault(kind, []).append(handler)

    def on_resync(self, fn: Callable[[], None]) -> None:
        self._resync.append(fn)

    def fresh(self) -> bool:
        """Whether notifications are being heard now, so caches may be trusted: the
        listener is connected and its last ping came back lately. A connection
        that went silent (packets dropped, no reset) leaves the ping waiting; the
        caches stop counting after ``SILENT_S`` rather than whenever TCP gives up."""
        return self._connected.is_set() and time.monotonic() - self._beat <= SILENT_S

    def _listen(self) -> None:
        first = True
        while not self._stop.is_set():
            try:
                conn = self._psycopg.connect(self.url, connect_timeout=3, autocommit=True,
                                             application_name="interlock-listen", **KEEPALIVE)
            except self._psycopg.Error as exc:
                log.warning("fleet: cannot listen on %s: %s", self.location, redact(str(exc)))
                self._stop.wait(PING_S)
                continue
            try:
                with conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    if not first:
                        self._run_resync()
                    first = False
                    self._beat = time.monotonic()
                    self._connected.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=PING_S):
                            self._dispatch(note.payload)
                        conn.execute("SELECT 1")  # a dead server shows here, within PING_S
                        self._beat = time.monotonic()
            except self._psycopg.Error as exc:
                log.warning("fleet: lost the listener on %s: %s", self.location,
                            redact(str(exc)))
            finally:
                self._connected.clear()
                with contextlib.suppress(Exception):
                    conn.close()

    def _run_resync(self) -> None:
        for fn in self._resync:
            try:
                fn()
            except Exception as exc:  # one piece's failure must not stop the listener
                log.warning("fleet: resync failed: %s", exc)

    def _dispatch(self, payload: str) -> None:
        kind, _, rest = payload.partition(":")
        for handler in self._handlers.get(kind, ()):
            try:
                handler(rest)
            except Exception as exc:
                log.warning("fleet: %s handler failed: %s", kind, exc)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(PING_S * 4)
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None


def wall() -> float:
    return time.time()
