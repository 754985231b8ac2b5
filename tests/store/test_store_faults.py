"""The store under faults it cannot fix by itself: a failed batch never holds the
file's write lock while it waits to retry, so others can mend the store
(docs/reliability.md, "The store")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from helpers.serve import wait_for
from interlock.store import AuditQuery, open_store

BREAK = ("CREATE TRIGGER injected BEFORE INSERT ON interlock_audit "
         "BEGIN SELECT RAISE(ABORT, 'injected fault'); END")
MEND = "DROP TRIGGER injected"


def test_a_failed_batch_leaves_the_write_lock_to_others(tmp_path: Path) -> None:
    path = str(tmp_path / "state" / "interlock.db")
    store = open_store(path, interval=0.01)
    try:
        other = sqlite3.connect(path, timeout=30, isolation_level=None)
        other.execute(BREAK)
        store.submit_action(who="ops", action="approve", target="call-1")
        wait_for(lambda: store.write_errors >= 2, what="the writer to fail and retry")
        # Before: the failed batch's connection lived on (never rolled back, its
        # statement kept alive by the traceback during the backoff), holding the
        # write lock through every retry; this waited 30 s and failed "locked".
        other.execute("PRAGMA busy_timeout = 5000")
        other.execute(MEND)  # "database is locked" after 5 s, before
        assert store.flush(30)
        assert [r.verdict for r in store.audit(AuditQuery())] == ["approve"]
        other.close()
    finally:
        store.close()
