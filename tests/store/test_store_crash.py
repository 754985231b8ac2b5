"""kill -9 of the host while it writes: the store stays readable and nothing
acknowledged is lost."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.stores import BACKENDS, fresh_url
from interlock.store import AuditQuery, open_store

# The host: dispatches that each leave one audit entry and one dead letter
# (session k<i>), and prints how many are acknowledged after every flush.
CHILD = r"""
import sys
from interlock import Engine
from interlock.reliability.sinks import attach
from interlock.testing import fire

engine = Engine()
engine.on("before_tool_call", lambda e: 1 / 0, name="boom", on_error="open")
attached = attach(engine, url=sys.argv[1], tracing=False)
attached.store.interval = 0.001
start, i = int(sys.argv[2]), int(sys.argv[2])
while True:
    for _ in range(5):
        fire(engine, "before_tool_call", tool_name="t", args={}, session_id=f"k{i}")
        i += 1
    if attached.store.flush(10):
        print(i, flush=True)
"""


def _run_and_kill(url: str, start: int, at_least: int, log: Path) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    acked = start
    deadline = time.monotonic() + 60
    with log.open("wb") as err, subprocess.Popen(
            [sys.executable, "-c", CHILD, url, str(start)], stdout=subprocess.PIPE,
            stderr=err, env=env) as child:
        assert child.stdout is not None
        try:
            while acked < start + at_least:
                line = child.stdout.readline()
                assert line, log.read_text()[-2000:]
                acked = int(line)
                assert time.monotonic() < deadline
        finally:
            os.kill(child.pid, signal.SIGKILL)  # in the middle of its next batch
            child.wait()
        # what it printed before dying was acknowledged too
        for line in child.stdout.read().split():
            acked = max(acked, int(line))
    assert child.returncode == -signal.SIGKILL
    return acked


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.slow
def test_kill_9_mid_write_loses_nothing_acknowledged(kind, tmp_path):
    with fresh_url(kind, tmp_path) as url:
        acked = 0
        for _round in range(3):  # the store is reopened after every crash
            start = acked + 100_000 * (_round + 1)  # distinct sessions per round
            end = _run_and_kill(url, start, at_least=150, log=tmp_path / "child.log")
            store = open_store(url)
            sessions = {a.session_id for a in store.audit(AuditQuery(limit=0))}
            letters = {d.session_id for d in store.dead_letters(limit=0)}
            store.close()
            wanted = {f"k{i}" for i in range(start, end)}
            assert wanted <= sessions, sorted(wanted - sessions)[:5]
            assert wanted <= letters, sorted(wanted - letters)[:5]
            acked = end
        if kind == "sqlite":
            conn = sqlite3.connect(url)
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            conn.close()
