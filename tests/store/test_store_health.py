"""Status off the hot path, and a store whose health is visible: `/v1/status`,
`/metrics` and `interlock status` say when writes fail or fall behind."""

from __future__ import annotations

import sqlite3
import textwrap
import time
from pathlib import Path

import pytest

from helpers.serve import GUARD_CONFIG, NO_RM, Serve, wait_for
from interlock import Engine, block
from interlock.reliability.metrics import Metrics
from interlock.reliability.sinks import attach
from interlock.store import open_store
from interlock.testing import fire

pytestmark = pytest.mark.e2e

CONFIG = GUARD_CONFIG + textwrap.dedent("""
    [[hooks]]
    name = "flaky"
    events = ["before_tool_call"]
    handler = "flaky.py"
    on_error = "open"
    """)
GUARD = NO_RM
FLAKY = "def handle(event):\n    raise RuntimeError('lookup failed')\n"


def _serve(tmp_path: Path, *extra: str) -> Serve:
    return Serve(tmp_path, CONFIG, files={"guard.py": GUARD, "flaky.py": FLAKY},
                 extra=list(extra))


BREAK = ("CREATE TRIGGER injected BEFORE INSERT ON interlock_audit "
         "BEGIN SELECT RAISE(ABORT, 'injected fault: interlock_audit is unwritable'); END")
MEND = "DROP TRIGGER injected"


def _run(conn: sqlite3.Connection, sql: str) -> None:
    """Run ``sql`` from another connection, retrying while the store's writer (retrying
    its own failed batch) holds the lock."""
    def attempt() -> bool:
        try:
            conn.execute(sql)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            return False
        return True

    wait_for(attempt, timeout=60, what=sql)


def _lock(path: str) -> sqlite3.Connection:
    """Another process's exclusive write lock: the store's writer must wait."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


def test_status_answers_at_once_while_the_store_cannot_write(tmp_path: Path) -> None:
    serve = _serve(tmp_path, "--audit", "fast").start()
    try:
        serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
        lock = _lock(serve.store)
        try:
            for _ in range(3):  # each dispatch fails `flaky`: audit rows and dead letters wait
                serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
            started = time.monotonic()
            code, status = serve.request("GET", "/v1/status")
            took = time.monotonic() - started
            assert code == 200, status
            # Before: a flush of up to 5 s, then a listing of every dead letter.
            assert took < 2.5, took
            store = status["store"]
            assert store["backend"] == "sqlite"
            assert store["backlog"] >= 1
            assert store["oldest_unwritten_age_s"] >= 0
            # Events are served meanwhile too.
            out = serve.event({"tool_name": "terminal", "args": {"command": "rm x"}})
            assert out["decision"] == "block"
        finally:
            lock.rollback()
            lock.close()
        status = wait_for(lambda: (s := serve.request("GET", "/v1/status")[1])
                          and s["store"]["backlog"] == 0 and s, what="the backlog to drain")
        assert status["store"]["ok"] is True
        assert status["store"]["last_commit_at"] is not None
        assert status["unresolved_dead_letters"] == 4
    finally:
        serve.stop()


def test_status_hooks_and_metrics_need_a_token_except_on_the_socket(tmp_path: Path) -> None:
    serve = _serve(tmp_path)
    read = serve.cli("serve", "token", "create", "viewer", "--read")
    chat = serve.cli("serve", "token", "create", "phone", "--chat")
    assert read.returncode == 0, read.stderr
    assert chat.returncode == 0, chat.stderr
    serve.start()
    try:
        assert serve.request("GET", "/v1/status", token=read.stdout.strip())[0] == 200
        assert serve.request("GET", "/v1/status", token=chat.stdout.strip())[0] == 403
        for path in ("/v1/status", "/v1/hooks", "/metrics"):
            code, body = serve.request("GET", path, token=None)
            assert code == 401, (path, body)
            assert "token" in body["error"]
            assert serve.request("GET", path)[0] == 200
            assert serve.request("GET", path, token=None, unix=True)[0] == 200
    finally:
        serve.stop()


def test_a_failing_status_is_a_json_500(tmp_path: Path) -> None:
    from interlock.hosts.server.app import create_app
    from interlock.hosts.server.auth import TokenStore
    from interlock.hosts.server.listen import Serving

    def status() -> dict[str, object]:
        raise ConnectionError("the database server went away")

    tokens = TokenStore()
    token = tokens.create("ops")
    engine = Engine()
    app = create_app(engine, project_root=tmp_path, tokens=tokens, status=status)
    serving = Serving(app, port=0)
    import http.client
    import json

    with serving.running():
        conn = http.client.HTTPConnection("127.0.0.1", serving.port, timeout=30)
        conn.request("GET", "/v1/status", headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
    engine.close()
    assert resp.status == 500
    assert resp.getheader("content-type", "").startswith("application/json")
    assert "error" in json.loads(body)


def test_write_errors_backlog_and_recovery_are_visible(tmp_path: Path) -> None:
    path = tmp_path / "s" / "interlock.db"
    store = open_store(str(path), interval=0.01)
    engine = Engine()

    @engine.on("before_tool_call", name="guard")
    def guard(event):  # type: ignore[no-untyped-def]
        return block("no") if "rm" in event.args.get("command", "") else None

    metrics = Metrics(store)
    attach(engine, store, metrics=metrics, tracing=False)
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
    assert store.flush(10)
    healthy = store.health()
    assert healthy["ok"] is True
    assert healthy["write_errors"] == 0
    assert healthy["last_commit_at"] is not None

    # Every write fails from now on, as on a full disk, until the fault is mended.
    other = sqlite3.connect(path, timeout=30, isolation_level=None)
    _run(other, BREAK)
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "rm x"})
    sick = wait_for(lambda: (h := store.health())["write_errors"] >= 1 and h,
                    what="a write error")
    assert sick["ok"] is False
    assert sick["backlog"] >= 1
    assert sick["failing"] is True
    assert "interlock_audit" in sick["last_error"]
    assert any("write" in p for p in sick["problems"])
    text = metrics.exposition()
    assert "interlock_store_write_errors_total" in text
    assert "interlock_store_backlog" in text
    assert "interlock_store_healthy{backend=\"sqlite\"} 0.0" in text

    _run(other, MEND)
    other.close()
    assert store.flush(30)
    well = store.health()
    assert well["ok"] is True
    assert well["backlog"] == 0
    assert well["failing"] is False
    assert "interlock_store_healthy{backend=\"sqlite\"} 1.0" in metrics.exposition()
    store.close()
    engine.close()


def test_interlock_status_shows_the_servers_store_and_fails_when_unhealthy(
        tmp_path: Path) -> None:
    serve = _serve(tmp_path, "--audit", "fast").start()
    try:
        serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
        ok = serve.cli("status", "--project", str(serve.project))
        assert ok.returncode == 0, ok.stderr
        assert "store health: ok" in ok.stdout
        other = sqlite3.connect(serve.store, timeout=30, isolation_level=None)
        _run(other, BREAK)
        serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
        wait_for(lambda: serve.request("GET", "/v1/status")[1]["store"]["write_errors"],
                 what="a write error")
        sick = serve.cli("status", "--project", str(serve.project))
        assert sick.returncode == 1, sick.stdout + sick.stderr
        assert "store health: UNHEALTHY" in sick.stdout
        assert "interlock_audit" in sick.stdout
        _run(other, MEND)
        other.close()
    finally:
        serve.stop()


def test_checkpoints_run_beside_the_writer_and_keep_the_log_bounded(tmp_path: Path) -> None:
    from interlock.store._sql import AUDIT_COLS
    from interlock.store._sqlite import CHECKPOINT_BYTES, FORCE_BYTES, SQLiteBackend

    path = tmp_path / "interlock.db"
    backend = SQLiteBackend(path)
    now = time.time()
    start_size = path.stat().st_size
    wal = Path(str(path) + "-wal")
    biggest = 0
    for batch in range(60):
        rows = [(now, f"d-{batch}-{i}", f"s-{batch}-{i}", "before_tool_call", "terminal",
                 "project:guard", "none", "applied", "x" * 200, 0.1, 1, "none", None, None)
                for i in range(2000)]
        assert len(rows[0]) == len(AUDIT_COLS)
        backend.write(rows, [], [])
        biggest = max(biggest, wal.stat().st_size)
    conn = backend._write
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0  # never in a commit
    assert biggest > CHECKPOINT_BYTES  # enough was written to need checkpoints
    assert biggest < FORCE_BYTES + (32 << 20)
    # The checkpointer copied the log into the file while the writer went on.
    wait_for(lambda: path.stat().st_size > start_size + (16 << 20), what="a checkpoint")
    backend.close()


def test_close_during_a_checkpoint_stops_the_checkpointer(tmp_path: Path) -> None:
    from interlock.store._sqlite import CHECKPOINT_BYTES, SQLiteBackend

    backend = SQLiteBackend(tmp_path / "interlock.db")
    row = (time.time(), "d", "s", "before_tool_call", "terminal", "project:guard", "none",
           "applied", "x" * 200, 0.1, 1, "none", None, None)
    wal = tmp_path / "interlock.db-wal"
    batch = 0
    while not wal.exists() or wal.stat().st_size < 2 * CHECKPOINT_BYTES:  # a long copy
        backend.write([(*row[:1], f"d-{batch}-{i}", *row[2:]) for i in range(2000)], [], [])
        batch += 1
    wait_for(backend._checkpointing.is_set, what="a checkpoint under way")
    backend.close()  # arrives while the checkpointer copies the log
    assert backend._checkpointer is not None
    # Its wake-up must not be lost: before, the thread cleared it on finishing the
    # checkpoint, slept on, and close() gave up on it only after 30 s.
    assert not backend._checkpointer.is_alive()
