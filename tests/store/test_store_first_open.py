"""Many processes opening one store that does not exist yet (an agent's parallel
tool calls, each a bridge process, on a fresh machine): one creates it, every
one opens it, none mistakes the half-made file for a damaged or emptied store."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # processes and lock waits, seconds each

OPEN = """
import sys, time
from interlock.store import open_store
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
store = open_store(sys.argv[1])
store.close()
print("opened")
"""


def test_concurrent_first_opens_all_succeed_and_create_one_store(tmp_path: Path) -> None:
    path = tmp_path / "state" / "interlock.db"
    start = time.time() + 1.5  # every process imported and waiting: then all at once
    procs = [subprocess.Popen([sys.executable, "-c", OPEN, str(path), repr(start)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    results = [(p.wait(60), *p.communicate()) for p in procs]
    failed = [(out, err[-600:]) for code, out, err in results if code != 0 or "opened" not in out]
    assert failed == []
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT key FROM interlock_meta ORDER BY key").fetchall()
    conn.close()
    assert rows == [("created_at",), ("schema_version",)]


def test_opening_a_made_store_does_not_wait_for_another_writer(tmp_path: Path) -> None:
    """Only a store still missing its tables takes the write lock on open: a store in
    use (a server writing) opens at once for the CLI, `serve` and the bridge."""
    import threading

    from interlock.store import open_store

    path = tmp_path / "state" / "interlock.db"
    open_store(str(path)).close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    opened: list[object] = []

    def open_it() -> None:
        store = open_store(str(path))
        opened.append(store)
        store.close()

    thread = threading.Thread(target=open_it, daemon=True)
    thread.start()
    thread.join(10)
    in_time = bool(opened)
    writer.execute("ROLLBACK")
    writer.close()
    thread.join(40)
    assert in_time, "the open waited for the other writer's transaction"


def test_a_lock_file_nobody_can_take_does_not_hang_the_first_open(tmp_path: Path) -> None:
    """The creation lock is a courtesy between openers: held by a stuck process, the
    open goes on after a bounded wait (the write transaction still guards the tables)."""
    import fcntl
    import os

    from interlock.store import open_store
    from interlock.store._sqlite import CREATE_LOCK, CREATE_WAIT

    path = tmp_path / "state" / "interlock.db"
    path.parent.mkdir(mode=0o700)
    held = os.open(path.parent / CREATE_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        t0 = time.monotonic()
        open_store(str(path)).close()
        assert time.monotonic() - t0 < CREATE_WAIT * 5
    finally:
        os.close(held)
