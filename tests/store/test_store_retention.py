"""Retention never drops what is unresolved: a flood of one hook's failures is
counted past the first N, and pruning removes resolved records first."""

from __future__ import annotations

import pytest

from helpers.stores import BACKENDS, fresh_url
from interlock import Engine
from interlock.reliability.metrics import Metrics
from interlock.reliability.sinks import attach
from interlock.store import Retention, open_store
from interlock.testing import fire


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):  # type: ignore[no-untyped-def]
    with fresh_url(request.param, tmp_path) as u:
        yield u


def _engine() -> Engine:
    engine = Engine()

    @engine.on("before_tool_call", name="flood", on_error="open")
    def flood(event):  # type: ignore[no-untyped-def]
        raise RuntimeError("crashing every time")

    @engine.on("before_tool_call", name="rare", on_error="open", matcher="read_file")
    def rare(event):  # type: ignore[no-untyped-def]
        raise RuntimeError("failed once")

    return engine


def test_a_flood_is_counted_and_prune_keeps_every_unresolved_letter(url: str) -> None:
    store = open_store(url, retention=Retention(dead_letter_rows=50, dead_letters_per_key=20))
    engine = _engine()
    metrics = Metrics(store)
    attach(engine, store, metrics=metrics, tracing=False)
    fire(engine, "before_tool_call", tool_name="read_file", args={"path": "a"})
    for i in range(300):
        fire(engine, "before_tool_call", tool_name="terminal", args={"command": f"ls {i}"})
    assert store.flush(30)

    stored = store.dead_letters(limit=0)
    by_hook = {h: sum(1 for d in stored if d.hook == h) for h in ("code:flood", "code:rare")}
    assert by_hook == {"code:flood": 20, "code:rare": 1}  # the first 20, then counted
    health = store.health()
    assert health["dead_letter_overflow"] == [
        {"hook": "code:flood", "mode": "crash", "count": 301 - 20}]
    assert "interlock_dead_letters_overflow_total" in metrics.exposition()
    from typer.testing import CliRunner

    from interlock.hosts.cli import build_app

    shown = CliRunner().invoke(build_app(), ["status", "--store", url, "--project", "/nonexistent"])
    assert "floods" in shown.output, shown.output
    assert "281" in shown.output

    # Resolve half of the flood's letters; a prune down to 5 rows may drop only those.
    for d in [d for d in stored if d.hook == "code:flood"][:10]:
        assert store.resolve(d.id)
    store.retention = Retention(dead_letter_rows=5, dead_letters_per_key=20)
    store.prune()
    left = store.dead_letters(limit=0)
    assert [d for d in left if d.resolved_at is not None] == []
    assert {(d.hook, d.resolved_at) for d in left} == {("code:flood", None), ("code:rare", None)}
    assert sum(1 for d in left if d.hook == "code:rare") == 1
    assert len(left) == 11
    assert store.unresolved_by_hook() == {"code:flood": 10, "code:rare": 1}
    store.close()
    engine.close()


def test_the_overflow_count_survives_a_restart(url: str) -> None:
    engine = _engine()
    store = open_store(url, retention=Retention(dead_letters_per_key=3))
    attach(engine, store, tracing=False)
    for i in range(10):
        fire(engine, "before_tool_call", tool_name="terminal", args={"command": f"ls {i}"})
    store.close()
    engine.close()
    again = open_store(url, retention=Retention(dead_letters_per_key=3))
    engine = _engine()
    attach(engine, again, tracing=False)
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
    assert again.flush(30)
    assert len(again.dead_letters(limit=0)) == 3
    assert again.health()["dead_letter_overflow"] == [
        {"hook": "code:flood", "mode": "crash", "count": 8}]
    again.close()
    engine.close()


def _failure(name: str, at: float):  # type: ignore[no-untyped-def]
    from interlock.engine.sinks import FailureRecord

    return FailureRecord(hook="code:h", event="before_tool_call", session_id="s", subject=None,
                         mode="crash", error=name, invocation_id=name, at=at)


def test_the_opening_prune_runs_before_the_first_write(url: str) -> None:
    """Pruning on open must not race what the caller does after its first write
    commits: a prune that counted rows mid-way could drop more than retention says."""
    import time

    from interlock.store import Store, backend_for

    seed = open_store(url)
    now = time.time()
    for i in range(3):
        seed.submit_failure(_failure(f"old{i}", now - 7200))
    assert seed.flush(10)
    for d in seed.dead_letters(limit=0):
        assert seed.resolve(d.id)
    seed.close()

    backend = backend_for(url)
    order: list[str] = []
    real_prune, real_write = backend.prune_dead_letters, backend.write

    def prune(*a, **kw):  # type: ignore[no-untyped-def]
        order.append("prune")
        time.sleep(0.2)  # a slow database: the first write must still wait for it
        return real_prune(*a, **kw)

    def write(*a):  # type: ignore[no-untyped-def]
        order.append("write")
        return real_write(*a)

    backend.prune_dead_letters, backend.write = prune, write  # type: ignore[method-assign]
    store = Store(backend, retention=Retention(dead_letter_age=3600))
    store.submit_failure(_failure("new", now))
    assert store.flush(10)
    assert order[:2] == ["prune", "write"]
    assert [d.invocation_id for d in store.dead_letters(limit=0)] == ["new"]
    store.close()


def test_concurrent_prunes_remove_no_more_than_retention_allows(url: str) -> None:
    """Two prunes at once (a server's timer and a CLI command's open store, or
    two servers on one PostgreSQL) each count the rows; neither may delete on a stale
    count."""
    import threading
    import time

    from interlock.store import backend_for

    store = open_store(url)
    now = time.time()
    for i in range(40):
        store.submit_failure(_failure(f"i{i}", now))
    assert store.flush(10)
    for d in store.dead_letters(limit=0):
        assert store.resolve(d.id)
    store.close()

    backends = [backend_for(url) for _ in range(4)]
    start = threading.Barrier(len(backends))

    def prune(backend) -> None:  # type: ignore[no-untyped-def]
        start.wait()
        backend.prune_dead_letters(30, now - 3600)

    threads = [threading.Thread(target=prune, args=(b,)) for b in backends]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    left = backends[0].dead_letters(unresolved=False, hook=None, limit=0, before=None)
    assert [d.invocation_id for d in left] == [f"i{i}" for i in range(10, 40)]
    for b in backends:
        b.close()
