"""The store under faults it cannot fix by itself: a failed batch never holds the
file's write lock while it waits to retry, so others can mend the store
(docs/reliability.md, "The store")."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from helpers.serve import wait_for
from helpers.stores import BACKENDS, fresh_url
from interlock import Engine, block
from interlock.hosts.cli import build_app
from interlock.reliability.sinks import attach
from interlock.store import AuditQuery, Retention, _ledger, open_store
from interlock.testing import fire

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


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_url(request.param, tmp_path) as u:
        yield u


def _engine() -> Engine:
    engine = Engine()

    @engine.on("before_tool_call", name="guard")
    def guard(event: Any) -> Any:
        if event.args.get("why"):
            return block(event.args["why"])
        return None

    @engine.on("before_tool_call", name="broken", on_error="open")
    def broken(event: Any) -> Any:
        if event.args.get("crash"):
            raise RuntimeError(event.args["crash"])
        return None

    return engine


def test_a_nul_in_a_record_is_written_escaped(url: str) -> None:
    engine = _engine()
    store = attach(engine, url=url, tracing=False).store
    try:
        # PostgreSQL text cannot hold NUL: before, this batch failed for ever, and
        # every record behind it waited with it.
        fire(engine, "before_tool_call", tool_name="t", args={"why": "no\x00way"},
             session_id="evil\x00")
        fire(engine, "before_tool_call", tool_name="t", args={"crash": "bad\x00text"},
             session_id="s2")
        assert store.flush(15)
        rows = store.audit(AuditQuery(limit=0))
        assert [(r.session_id, r.reason) for r in rows if r.hook.endswith("guard")] == [
            ("evil\\x00", "no\\x00way"), ("s2", None)]
        [letter] = store.dead_letters()
        assert "bad\\x00text" in letter.error
        assert store.health()["ok"]
    finally:
        store.close()


def test_a_record_no_retry_can_write_is_set_aside_as_a_dead_letter(url: str) -> None:
    engine = _engine()
    store = attach(engine, url=url, tracing=False).store
    try:
        fire(engine, "before_tool_call", tool_name="t", args={}, session_id="before")
        # A lone surrogate (valid in JSON as "\ud800") cannot be encoded for either
        # backend: before, its batch was retried for ever and everything waited.
        fire(engine, "before_tool_call", tool_name="t", args={}, session_id="x\ud800")
        fire(engine, "before_tool_call", tool_name="t", args={}, session_id="after")
        assert store.flush(30)
        sessions = [r.session_id for r in store.audit(AuditQuery(limit=0))]
        assert "before" in sessions
        assert "after" in sessions
        health = store.health()
        assert health["unwritable"] == 1
        [letter] = store.dead_letters()
        assert (letter.hook, letter.mode) == ("interlock:store", "unwritable")
        assert "\\ud800" in letter.error
        assert health["unresolved_dead_letters"] == 1
    finally:
        store.close()


def test_a_record_that_cannot_be_kept_as_a_dead_letter_either_waits(
        tmp_path: Path) -> None:
    """Set aside only once its dead letter is written: else the record waits, as in
    an outage, and strict audit does not take it as settled."""
    engine = _engine()
    store = attach(engine, url=str(tmp_path / "s.db"), tracing=False).store
    real = store.backend.write
    outage = [True]

    def write(audit: Any, letters: Any, *rest: Any) -> None:
        if outage[0] and any(d.hook == "interlock:store" for d in letters):
            raise sqlite3.OperationalError("disk I/O error")
        real(audit, letters, *rest)

    store.backend.write = write  # type: ignore[method-assign]
    try:
        fire(engine, "before_tool_call", tool_name="t", args={}, session_id="x\ud800")
        fire(engine, "before_tool_call", tool_name="t", args={}, session_id="after")
        assert not store.flush(0.5)
        assert store.health()["unwritable"] == 0
        outage[0] = False
        assert store.flush(30)
        [letter] = store.dead_letters()
        assert (letter.hook, letter.mode) == ("interlock:store", "unwritable")
        assert "after" in [r.session_id for r in store.audit(AuditQuery(limit=0))]
    finally:
        store.close()


def test_records_set_aside_are_capped_like_any_hooks_dead_letters(tmp_path: Path) -> None:
    engine = _engine()
    store = attach(engine, url=str(tmp_path / "s.db"), tracing=False).store
    store.retention = Retention(dead_letters_per_key=2)
    try:
        for i in range(4):
            fire(engine, "before_tool_call", tool_name="t", args={}, session_id=f"x{i}\ud800")
        assert store.flush(30)
        assert len(store.dead_letters()) == 2
        health = store.health()
        assert health["unwritable"] == 4
        assert [(o["hook"], o["count"]) for o in health["dead_letter_overflow"]] == [
            ("interlock:store", 2)]
    finally:
        store.close()


def test_a_store_file_deleted_while_open_makes_the_store_fail(tmp_path: Path) -> None:
    path = tmp_path / "state" / "interlock.db"
    store = open_store(str(path), interval=0.01)
    try:
        store.submit_action(who="ops", action="approve", target="call-1")
        assert store.flush(10)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        # Before: writes went on into the deleted file, acknowledged, and health said ok.
        health = store.health()
        assert not health["ok"]
        assert any(str(path) in p and "deleted" in p for p in health["problems"])
        store.submit_action(who="ops", action="approve", target="call-2")
        assert not store.flush(0.3)  # never acknowledged into a deleted file
        assert str(path) in (store.last_error or "")
        # No retry can write into a deleted file, so closing does not wait for one.
        # Before: close() waited its whole 30 s flush deadline (a server's exit, too).
        started = time.monotonic()
        assert not store.close()
        assert time.monotonic() - started < 10
    finally:
        store.close()


def test_a_store_file_replaced_while_open_makes_the_store_fail(tmp_path: Path) -> None:
    path = tmp_path / "state" / "interlock.db"
    store = open_store(str(path), interval=0.01)
    try:
        assert store.flush(10)
        path.rename(path.with_name("moved.db"))  # as `store repair --force` does
        _ledger.forget(path)
        open_store(str(path)).close()  # a new store in its place
        store.submit_action(who="ops", action="approve", target="call-1")
        assert not store.flush(0.3)
        health = store.health()
        assert not health["ok"]
        assert any("replaced" in p and "restart" in p for p in health["problems"])
        started = time.monotonic()
        assert not store.close()
        assert time.monotonic() - started < 10
    finally:
        store.close()


def test_store_repair_refuses_a_store_in_use(tmp_path: Path) -> None:
    path = tmp_path / "state" / "interlock.db"
    store = open_store(str(path))
    try:
        result = CliRunner().invoke(build_app(),
                                    ["store", "repair", "--force", "--store", str(path)])
        assert result.exit_code != 0
        assert "in use" in result.output
        assert path.exists()
        assert not list(path.parent.glob("*.damaged-*"))
    finally:
        store.close()
    result = CliRunner().invoke(build_app(), ["store", "repair", "--force", "--store", str(path)])
    assert result.exit_code == 0, result.output


def test_health_fails_as_soon_as_strict_audit_would_refuse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from interlock.store import _store

    monkeypatch.setattr(_store, "STRICT_WAIT", 0.5)  # the rule, not its 5 s of waiting
    path = str(tmp_path / "state" / "interlock.db")
    store = open_store(path, interval=0.01)
    store.audit_mode = "strict"
    lock = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        assert store.flush(10)
        lock.execute("BEGIN EXCLUSIVE")  # the writer waits: nothing commits
        store.submit_action(who="ops", action="approve", target="call-1")
        assert not asyncio.run(store.settled(within=0.2))  # a strict answer refused
        # Before: ok until the oldest record was 10 s old, while strict refused after 5.
        health = store.health()
        assert not health["ok"]
        assert any("refused" in p for p in health["problems"])
        wait_for(lambda: store.health()["oldest_unwritten_age_s"] > 0.6, timeout=30,
                 what="the oldest record to pass the strict wait")
        assert any("oldest unwritten" in p for p in store.health()["problems"])
        lock.rollback()
        assert store.flush(40)
        assert store.health()["ok"]
    finally:
        lock.close()
        store.close()


def test_a_prune_is_visible_in_health_status_metrics_and_the_log(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from interlock.hosts.cli.status import _render_health
    from interlock.reliability.metrics import _store_families

    store = open_store(str(tmp_path / "state" / "interlock.db"))
    try:
        store.retention = Retention(audit_rows=2)
        for i in range(5):
            store.submit_action(who="ops", action="approve", target=f"call-{i}")
        assert store.flush(10)
        with caplog.at_level(logging.INFO, logger="interlock"):
            store.prune()
        # Before: the rows went, and nothing said so.
        health = store.health()
        assert health["pruned"]["audit"] == 3
        assert "pruned 3 audit rows" in caplog.text
        assert any("pruned since start: 3 audit rows" in line
                   for line in _render_health(health))
        [family] = [f for f in _store_families(health) if f.name == "interlock_store_pruned"]
        assert {s.labels["table"]: s.value for s in family.samples
                if s.name.endswith("_total")}["audit"] == 3
    finally:
        store.close()


def test_a_commit_waits_for_one_prune_chunk_not_the_whole_prune(tmp_path: Path) -> None:
    import threading

    from interlock.store import Store, backend_for

    path = str(tmp_path / "state" / "interlock.db")
    backend = backend_for(path)
    pruned: list[int] = []
    written: list[int] = []
    seeded, pruning, submitted = threading.Event(), threading.Event(), threading.Event()
    real_prune, real_write = backend.prune, backend.write

    def prune(table: str, *a: Any, **kw: Any) -> int:
        if table == "interlock_audit" and not seeded.is_set():
            return 0  # not while the rows are being put in
        if table == "interlock_audit" and not submitted.is_set():
            pruning.set()
            submitted.wait(10)  # the record comes while the prune is under way
        removed = real_prune(table, *a, **kw)
        if table == "interlock_audit":
            pruned.append(removed)
        return removed

    def write(*a: Any, **kw: Any) -> None:
        real_write(*a, **kw)
        if submitted.is_set() and not written:
            written.append(sum(pruned))  # rows the prune had deleted by this commit

    backend.prune, backend.write = prune, write  # type: ignore[method-assign]
    store = Store(backend, retention=Retention(audit_rows=10, every=0.2))
    try:
        assert store.flush(10)
        conn = sqlite3.connect(path, timeout=30)
        conn.executemany(
            "INSERT INTO interlock_audit (at, dispatch_id, session_id, event, hook, verdict, "
            "status, outcome) VALUES (?, ?, 's', 'e', 'h', 'none', 'applied', 'none')",
            [(time.time(), f"d{i}") for i in range(20_000)])
        conn.commit()
        conn.close()
        seeded.set()
        assert pruning.wait(30)  # the periodic prune (5,000 rows a chunk) is under way
        store.submit_action(who="ops", action="approve", target="call-1")
        submitted.set()
        assert store.flush(30)
        wait_for(lambda: len(store.audit(AuditQuery(limit=0))) == 10, timeout=30,
                 what="the prune to end")
        # Before: one DELETE of 19,990 rows, and the commit waited for all of it.
        assert written[0] <= 5000
    finally:
        store.close()
