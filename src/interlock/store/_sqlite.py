"""SQLite backend: one file in WAL mode, created 0600 in a 0700 directory.

Checkpoints (copying the write-ahead log back into the file, fsynced) run on
a thread of their own, never inside a commit: with strict audit every answer
waits for its commit, and an inline checkpoint, which takes longer as the file
grows, held them all at once, periodically.

Opening checks the file (``PRAGMA quick_check``, about 0.25 s per 100 MB): a
damaged or emptied store is a one-line error naming the file and the fix,
never a traceback, and never silently replaced by a fresh one. Short-lived
opens may skip reading a large file whole (``check_up_to``); damage a whole
check found is remembered, so they refuse it too.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger
from interlock.store import _ledger
from interlock.store._sql import SQLBackend

REPAIR = ("run `interlock store check` to see it, `interlock store export` to keep what "
          "can be read, and `interlock store repair` to move it aside and start afresh "
          "with the readable records")


log = logger("interlock")

CHECKPOINT_BYTES = 4 << 20
"""WAL size that wakes the checkpointer (SQLite's own default is 1000 pages)."""
FORCE_BYTES = 64 << 20
"""WAL size past which the checkpointer waits for the writer to restart the log."""


class SQLiteBackend(SQLBackend):
    ph = "?"
    name = "sqlite"

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL",
                 check_up_to: int | None = None) -> None:
        """``synchronous``: FULL makes a committed batch survive power loss, not only a
        crashed process; batches make its fsync cheap per record.

        ``check_up_to``: read the whole file on open (``PRAGMA quick_check``) only
        while it is at most this many bytes; None always reads it. For opens that
        write a record or two and exit (a bridge call loading the hooks itself),
        whose process the check would otherwise dominate on a large store. Every
        open still reads the header and the tables, and refuses a store that a
        whole-file check found damaged (interlock.store._ledger).
        """
        super().__init__()
        self.check_up_to = check_up_to
        self._held = -1
        self._checkpointing = threading.Event()
        self._checkpointer: threading.Thread | None = None
        self._stopping = False
        self.path = Path(path)
        self.location = str(self.path)
        self.synchronous = synchronous
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        # Concurrent first opens (parallel bridge calls on a new machine) take turns
        # until the store has its tables: a half-made file is neither gone nor emptied.
        with _creating(self.path.parent) if fresh else contextlib.nullcontext():
            self._open()
        if _ledger.created(self.path) is None:  # new, or older than the ledger
            _ledger.remember(self.path, time.time())
        # The file this process writes, held (a shared lock) while it is open, so
        # `interlock store repair` can tell it is in use.
        self._held = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        with contextlib.suppress(OSError):  # a filesystem without locks
            fcntl.flock(self._held, fcntl.LOCK_SH | fcntl.LOCK_NB)
        st = os.fstat(self._held)
        self._identity = (st.st_dev, st.st_ino)

    def file_problem(self) -> str | None:
        """Why the file at the store's path is no longer the one this process writes
        (deleted, or replaced by another), or None. Writes into it would be lost."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            how = "deleted"
        except OSError:
            return None
        else:
            if (st.st_dev, st.st_ino) == self._identity:
                return None
            how = "replaced by another file"
        return (f"the store {self.path} was {how} while this process had it open; "
                "nothing more is written to it: restart the server (or host) to open the "
                f"store at that path again (`interlock store repair --store {self.path}` "
                "if it is gone)")

    def write(self, *args: Any, **kwargs: Any) -> None:
        problem = self.file_problem()
        if problem is not None:  # never acknowledge a record into a deleted file
            raise sqlite3.OperationalError(problem)
        super().write(*args, **kwargs)

    def _open(self) -> None:
        """Create the file if it never existed, then check it and its tables."""
        if not self.path.exists():
            gone = _ledger.created(self.path)
            if gone is not None:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(gone))
                raise ConfigError(
                    f"the store {self.path} is gone: it was created {when} and its "
                    "records (audit, dead letters) are no longer there", field="store",
                    fix="restore it from a backup (with its -wal file), or run "
                        f"`interlock store repair --store {self.path}` to start a new "
                        "store knowingly")
            # The state directory holds audit and dead letters: others may not read it.
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        elif self.path.stat().st_size == 0 and not _has_wal(self.path):
            # We create a store and its tables in one step: an existing empty file
            # (and no WAL holding its pages) is a store whose contents were lost.
            raise ConfigError(f"the store {self.path} is empty (0 bytes): its records are "
                              "gone", field="store",
                              fix="restore it from a backup, or " + REPAIR)
        marked = _ledger.damaged(self.path)
        ident = _ledger.identity(self.path)
        if marked is not None and marked == ident:
            raise self._damaged(sqlite3.DatabaseError(
                "a whole-file check found it damaged, and it has not changed since"))
        whole = (self.check_up_to is None or marked is not None
                 or self.path.stat().st_size <= self.check_up_to)
        try:
            conn = self.connect(writer=True)
            try:
                if whole:
                    problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)")]
                    if problems != ["ok"]:
                        raise sqlite3.DatabaseError("; ".join(problems))
                self.ensure_schema(conn)
            finally:
                conn.close()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise self._damaged(exc) from None
            raise ConfigError(f"the store {self.path} is busy: another process has held "
                              "its write lock for 30 s", field="store",
                              fix="try again; `fuser` on the file shows who holds it") from None
        except sqlite3.DatabaseError as exc:
            # Damage SQLite itself reported (not a lock, not a failed read): later
            # opens that do not read the file whole must know of it.
            _ledger.mark_damaged(self.path, ident)
            raise self._damaged(exc) from None
        if marked is not None:
            _ledger.clear_damaged(self.path)  # put back from a backup, and whole again

    def _damaged(self, exc: Exception) -> ConfigError:
        why = " ".join(str(exc).split())[:300]
        return ConfigError(f"the store {self.path} is damaged: {why}", field="store",
                           fix=REPAIR)

    def ensure_schema(self, conn: Any) -> None:
        cur = conn.cursor()
        if not self.complete(cur):
            # One write transaction from the look at the tables to the version row,
            # so two openers never both see a store without them. A made store (the
            # usual open) skips it: it would wait on any writer.
            cur.execute("BEGIN IMMEDIATE")
        super().ensure_schema(conn)

    def existing_tables(self, cur: Any) -> set[str]:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {str(r[0]) for r in cur.fetchall()}

    def connect(self, *, writer: bool) -> Any:
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False,
                               isolation_level="DEFERRED")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA busy_timeout=30000")
        # Never checkpoint inside a commit; the checkpointer thread does it (and the
        # last connection to close checkpoints what is left).
        conn.execute("PRAGMA wal_autocheckpoint=0")
        return conn

    def permanent(self, exc: Exception) -> bool:
        return super().permanent(exc) or isinstance(exc, (sqlite3.DataError,
                                                          sqlite3.InterfaceError))

    def after_commit(self) -> None:
        try:
            size = os.stat(self._wal).st_size
        except OSError:
            return
        if size >= CHECKPOINT_BYTES and not self._checkpointing.is_set():
            if self._checkpointer is None:
                self._checkpointer = threading.Thread(
                    target=self._checkpoint_loop, name="interlock-checkpoint", daemon=True)
                self._checkpointer.start()
            self._checkpointing.set()

    @property
    def _wal(self) -> str:
        return str(self.path) + "-wal"

    def _checkpoint_loop(self) -> None:
        conn = None
        while True:
            self._checkpointing.wait()
            if self._stopping:
                break
            try:
                if conn is None:
                    conn = self.connect(writer=False)
                # PASSIVE copies what it can without blocking the writer; a log that
                # keeps growing anyway gets RESTART, which waits for a pause in writes.
                big = os.stat(self._wal).st_size >= FORCE_BYTES
                conn.execute(f"PRAGMA wal_checkpoint({'RESTART' if big else 'PASSIVE'})")
            except (sqlite3.Error, OSError) as exc:
                log.warning("interlock store %s: checkpoint failed: %s", self.path, exc)
                if conn is not None:
                    with contextlib.suppress(sqlite3.Error):
                        conn.close()
                conn = None
            finally:
                self._checkpointing.clear()
            if self._stopping:  # close() came during the checkpoint: its wake-up is spent
                break
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def close(self) -> None:
        if self._held >= 0:
            os.close(self._held)
            self._held = -1
        self._stopping = True
        self._checkpointing.set()
        if self._checkpointer is not None:
            self._checkpointer.join(30)
        super().close()


def _has_wal(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    return wal.exists() and wal.stat().st_size > 0


CREATE_LOCK = ".interlock-stores.lock"
"""Beside the stores: held while one is created, so concurrent first opens take turns."""
CREATE_WAIT = 10.0
"""Seconds to wait for it; then the open goes on (the write transaction still guards)."""


@contextlib.contextmanager
def _creating(folder: Path) -> Iterator[None]:
    """The creation lock, waited for at most CREATE_WAIT seconds. Where locks do
    not work (some network filesystems), or the file cannot be made, none is taken."""
    try:
        fd = os.open(folder / CREATE_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + CREATE_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    log.warning("interlock store: %s stayed locked for %.0f s; opening "
                                "without it", folder / CREATE_LOCK, CREATE_WAIT)
                    break
                time.sleep(0.01)
            except OSError:  # ENOLCK, EOPNOTSUPP: a filesystem without locks
                break
        yield
    finally:
        os.close(fd)


def in_use(path: Path) -> bool:
    """True while a process has the store at ``path`` open (it holds a shared lock)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # a filesystem without locks: cannot tell
        return False
    finally:
        os.close(fd)
    return False
