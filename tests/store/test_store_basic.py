"""Dead letters and the audit log on both backends: write, query, resolve, prune."""

from __future__ import annotations

import time

import pytest

from helpers.stores import BACKENDS, fresh_url
from interlock import Engine, HookFailure, block
from interlock.engine.errors import ConfigError
from interlock.reliability import BreakerBook, Policy, wrap
from interlock.reliability.sinks import attach
from interlock.store import AuditQuery, Retention, open_store
from interlock.testing import fire


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    with fresh_url(request.param, tmp_path) as u:
        yield u


def _engine_with_hooks():
    engine = Engine()

    @engine.on("before_tool_call", name="guard", matcher="terminal")
    def guard(event):
        if "rm" in event.args.get("command", ""):
            return block("no deleting", hint="move to trash")
        return None

    @engine.on("before_tool_call", name="broken", on_error="open")
    def broken(event):
        raise RuntimeError("lookup failed")

    return engine


def test_audit_and_dead_letters_round_trip(url):
    engine = _engine_with_hooks()
    attached = attach(engine, url=url, tracing=False)
    store = attached.store
    t0 = time.time()
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"},
         session_id="s1")
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "rm x"},
         session_id="s2")
    fire(engine, "before_tool_call", tool_name="read_file", args={"path": "a"},
         session_id="s1")
    assert store.flush(10)

    rows = store.audit(AuditQuery(limit=0))
    assert len(rows) == 4  # guard+broken, guard (blocked; broken never ran), broken
    assert len({r.dispatch_id for r in rows}) == 3
    blocked = store.audit(AuditQuery(verdict="block"))
    assert [(r.hook, r.reason, r.session_id, r.subject) for r in blocked] == [
        ("code:guard", "no deleting", "s2", "terminal")]
    assert blocked[0].outcome == "block"
    assert blocked[0].latency_ms is not None
    assert blocked[0].status == "applied"
    assert blocked[0].revision == engine.revision
    assert len(store.audit(AuditQuery(session="s1"))) == 3
    assert len(store.audit(AuditQuery(hook="broken"))) == 2  # bare name, any source
    assert len(store.audit(AuditQuery(hook="code:guard"))) == 2
    assert len(store.audit(AuditQuery(hook="project:guard"))) == 0
    assert len(store.audit(AuditQuery(since=t0 - 1, until=time.time() + 1))) == 4
    assert store.audit(AuditQuery(since=time.time() + 60)) == []
    newest = store.audit(AuditQuery(limit=2))
    assert [r.id for r in newest] == [rows[-2].id, rows[-1].id]  # the newest two, oldest first

    letters = store.dead_letters()
    assert len(letters) == 2
    first = letters[0]
    assert (first.hook, first.event, first.mode, first.subject, first.session_id) == (
        "code:broken", "before_tool_call", "crash", "terminal", "s1")
    assert "lookup failed" in first.error
    assert not first.fail_closed
    assert first.attempts == 1
    assert first.contract_version == 1
    assert first.invocation_id

    assert store.resolve(first.id, by="alice", note="fixed the lookup")
    assert not store.resolve(first.id)  # already resolved
    assert not store.resolve(999_999)
    unresolved = store.dead_letters(unresolved=True)
    assert [d.id for d in unresolved] == [letters[1].id]
    kept = store.dead_letters()
    assert len(kept) == 2  # resolving keeps the record
    assert (kept[0].resolved_by, kept[0].note) == ("alice", "fixed the lookup")
    assert kept[0].resolved_at is not None
    assert store.counts() == {"dead_letters": 2, "unresolved": 1, "audit": 4}
    assert store.unresolved_by_hook() == {"code:broken": 1}
    assert attached.close()
    engine.close()


def test_pruning_by_count_and_age(url):
    from interlock.engine.sinks import FailureRecord

    store = open_store(url, retention=Retention(dead_letter_rows=5, dead_letter_age=3600))
    now = time.time()
    for i in range(8):
        seq = store.submit_failure(FailureRecord(hook="code:h", event="before_tool_call",
                                           session_id="s", subject=None, mode="crash",
                                           error=f"e{i}", invocation_id=f"i{i}", at=now))
    assert seq == 8
    seq = store.submit_failure(FailureRecord(hook="code:old", event="before_tool_call",
                                       session_id="s", subject=None, mode="crash",
                                       error="old", invocation_id="old", at=now - 7200))
    assert seq == 9
    assert store.acknowledged <= 9
    assert store.wait(9, 10)  # the ninth record, acknowledged once committed
    assert store.acknowledged == 9
    for d in store.dead_letters(limit=0):
        if d.invocation_id != "i0":
            assert store.resolve(d.id)
    store.prune()
    left = store.dead_letters(limit=0)
    # Only resolved ones go: the old one by age, then the oldest resolved down to five
    # rows; i0, unresolved, stays whatever its age or rank.
    assert [d.invocation_id for d in left] == ["i0", "i4", "i5", "i6", "i7"]
    store.close()


def test_breaker_changes_are_recorded(url):
    engine = Engine()
    book = BreakerBook()

    async def down(inv):
        raise HookFailure("down")

    from interlock.engine.hooks import Hook

    engine.register(Hook(name="remote", events=("before_tool_call",),
                         executor=wrap(down, Policy(), breakers=book), digest="abc"))
    attached = attach(engine, url=url, breakers=book, tracing=False)
    for _ in range(4):
        assert fire(engine, "before_tool_call", tool_name="t", args={}).blocked
    attached.store.flush()
    [rec] = attached.store.breakers()
    assert (rec.hook, rec.digest, rec.state, rec.failures, rec.opens) == (
        "code:remote", "abc", "open", 3, 1)
    assert rec.retry_at is not None
    assert rec.retry_at > time.time() + 50
    status = attached.metrics.status()
    assert status["breakers"][0]["state"] == "open"
    assert status["hooks"]["code:remote"]["breaker_opens"] == 1
    assert status["hooks"]["code:remote"]["failures_by_mode"] == {"breaker_open": 1,
                                                                  "crash": 3}
    attached.close()
    engine.close()


def test_bad_store_urls_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="unknown store scheme 'mysql'"):
        open_store("mysql://x@y/z")
    with pytest.raises(ConfigError, match="cannot connect") as info:
        open_store("postgresql://u:hunter2pw@127.0.0.1:1/db")
    assert "hunter2pw" not in str(info.value)


def test_default_location_is_the_one_state_dir(tmp_path, monkeypatch):
    from interlock.store import default_url, state_dir
    from interlock.store.paths import state_dir as interlock_state_dir

    monkeypatch.delenv("INTERLOCK_STATE_DIR", raising=False)
    monkeypatch.delenv("INTERLOCK_STORE", raising=False)
    monkeypatch.setenv("INTERLOCK_HOME", str(tmp_path / "home"))
    project = tmp_path / "proj"
    (project / ".interlock").mkdir(parents=True)
    monkeypatch.chdir(project)
    # Every host writes, and every command reads, the same place wherever it runs.
    assert state_dir() == interlock_state_dir() == tmp_path / "home" / "state"
    assert default_url() == str(tmp_path / "home" / "state" / "interlock.db")
    monkeypatch.setenv("INTERLOCK_STATE_DIR", str(tmp_path / "explicit"))
    assert state_dir() == tmp_path / "explicit"
    store = open_store()
    assert store.location == str(tmp_path / "explicit" / "interlock.db")
    store.close()
    assert (tmp_path / "explicit" / "interlock.db").stat().st_mode & 0o077 == 0
    monkeypatch.setenv("INTERLOCK_STORE", str(tmp_path / "elsewhere.db"))
    assert default_url() == str(tmp_path / "elsewhere.db")


def test_dropped_observer_invocations_are_dead_letters(url):
    import threading

    from interlock.events import make

    engine = Engine(queue_limit=1)
    entered, release = threading.Event(), threading.Event()

    @engine.on("notification", name="pager", background=True)
    def pager(event):
        entered.set()
        assert release.wait(10)

    attached = attach(engine, url=url, tracing=False)
    note = make("notification", message="disk full", session_id="s9")
    engine.notify(note)
    assert entered.wait(10)  # the first is running; the queue holds one more
    for _ in range(3):
        engine.notify(note)
    release.set()
    assert engine.drain(10)
    attached.store.flush()
    letters = attached.store.dead_letters()
    assert [(d.hook, d.mode, d.session_id) for d in letters] == [
        ("code:pager", "dropped", "s9")] * 2
    assert "queue of hook code:pager is full" in letters[0].error
    attached.close()
    engine.close()


def test_invocation_digest_marks_repeats_of_one_call(url):
    engine = _engine_with_hooks()
    attached = attach(engine, url=url, tracing=False)
    for command in ("ls", "ls", "pwd"):
        fire(engine, "before_tool_call", tool_name="read_file", args={"path": command},
             session_id="s1")
    attached.store.flush()
    digests = [d.invocation_digest for d in attached.store.dead_letters()]
    assert len(digests) == 3
    assert all(len(d) == 24 for d in digests)
    assert digests[0] == digests[1] != digests[2]
    attached.close()
    engine.close()
