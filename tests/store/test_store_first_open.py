"""Many processes opening one store that does not exist yet (an agent's parallel
tool calls, each a bridge process, on a fresh machine): one creates it, every
one opens it, none mistakes the half-made file for a damaged or emptied store."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

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
