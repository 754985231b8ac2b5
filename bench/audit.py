"""Audit and dead-letter overhead per dispatch, on SQLite with batched writes.

Each dispatch runs three sync hooks on before_tool_call (a guard, a logger
and, in the "failing" runs, a hook that raises on every call and so leaves a
dead letter). The clock covers N dispatches *and* the flush that commits
them, so the writer thread's work is in the figure, not hidden behind it.

Strict audit (what `interlock serve --audit strict` does: an answer leaves
only once its audit rows have committed) is measured too, against the fast
figure of the same run: one dispatch at a time (a commit, fsynced, per
dispatch) and 16 concurrent dispatches (commits shared by whoever waits).

Target: <= 50 us of audit + dead-letter overhead per audited
dispatch (fast). Run: ``python bench/audit.py`` (or ``make bench``). Set
INTERLOCK_BENCH_PG_URL to measure PostgreSQL too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report
from interlock import Engine, block
from interlock.events import BeforeToolCall
from interlock.reliability.metrics import Metrics
from interlock.reliability.sinks import AuditSink, DeadLetterSink, MetricsSink
from interlock.store import open_store

N = 10_000
REPEAT = 3
TARGET_US = 50.0


def build(failing: bool) -> Engine:
    engine = Engine(timed=True)  # audited engines time hooks; so does the baseline

    @engine.on("before_tool_call", name="guard")
    def guard(event):
        if event.args.get("command") == "rm -rf /":
            return block("no")
        return None

    @engine.on("before_tool_call", name="logger")
    def logger(event):
        return None

    if failing:
        @engine.on("before_tool_call", name="broken", on_error="open")
        def broken(event):
            raise RuntimeError("backend unavailable")

    return engine


def run(engine: Engine, store=None) -> float:
    """Seconds for N dispatches plus the commit of everything they queued."""
    emit = engine.emit_sync
    t0 = time.perf_counter()
    for i in range(N):
        emit(BeforeToolCall(tool_name="terminal", args={"command": "ls", "i": i},
                            session_id="bench"))
    if store is not None:
        assert store.flush(120)
    return time.perf_counter() - t0


def best(make, url: str | None, sinks: str) -> float:
    times = []
    for _ in range(REPEAT):
        engine = make()
        store = None
        if url is not None:
            store = open_store(url)
            if "a" in sinks:
                engine.add_sink(AuditSink(store))
            if "d" in sinks:
                engine.add_sink(DeadLetterSink(store))
        if "m" in sinks:
            engine.add_sink(MetricsSink(Metrics()))
        run(engine, store)  # warm up (plans, statements)
        times.append(run(engine, store))
        if store is not None:
            store.close()
        engine.close()
    return min(times)


def strict(url: str, *, concurrency: int, n: int) -> float:
    """Seconds per dispatch when each answer waits for its audit commit."""
    engine = build(False)
    store = open_store(url)
    engine.add_sink(AuditSink(store))
    engine.add_sink(DeadLetterSink(store))

    async def one(i: int) -> None:
        await engine.emit(BeforeToolCall(tool_name="terminal", args={"command": "ls", "i": i},
                                         session_id="bench"))
        assert await store.settled(60)

    async def drive() -> float:
        await one(-1)  # warm up
        queue = iter(range(n))

        async def worker() -> None:
            for i in queue:
                await one(i)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - t0

    took = asyncio.run(drive())
    store.close()
    engine.close()
    return took / n


def main() -> None:
    logging.disable(logging.WARNING)  # the failing hook logs every call; not measured here
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for failing in (False, True):
            tag = "failing" if failing else "clean"
            base = best(lambda failing=failing: build(failing), None, "")
            url = str(Path(tmp) / f"{tag}.db")
            audited = best(lambda failing=failing: build(failing), url, "ad")
            metered = best(lambda failing=failing: build(failing), url, "adm")
            results[f"{tag}_base_us"] = base / N * 1e6
            results[f"{tag}_audited_us"] = audited / N * 1e6
            results[f"{tag}_overhead_us"] = (audited - base) / N * 1e6
            results[f"{tag}_overhead_with_metrics_us"] = (metered - base) / N * 1e6
            rows = 3 if failing else 2
            print(f"{tag:8} ({rows} audit rows{' + 1 dead letter' if failing else ''} "
                  f"per dispatch): base {results[f'{tag}_base_us']:.1f} us, audited "
                  f"{results[f'{tag}_audited_us']:.1f} us -> overhead "
                  f"{results[f'{tag}_overhead_us']:.1f} us (with metrics "
                  f"{results[f'{tag}_overhead_with_metrics_us']:.1f} us)", flush=True)
        url = str(Path(tmp) / "strict.db")
        one = strict(url, concurrency=1, n=300)
        many = strict(url, concurrency=16, n=5000)
        fast = results["clean_audited_us"]
        results["strict_1_at_a_time_us"] = one * 1e6
        results["strict_16_concurrent_us"] = many * 1e6
        results["strict_1_vs_fast"] = one * 1e6 / fast
        results["strict_16_vs_fast"] = many * 1e6 / fast
        print(f"strict   (clean; an answer waits for its commit): one at a time "
              f"{one * 1e6:.0f} us per dispatch ({one * 1e6 / fast:.0f}x fast), 16 concurrent "
              f"{many * 1e6:.0f} us ({many * 1e6 / fast:.1f}x fast)", flush=True)
        pg = os.environ.get("INTERLOCK_BENCH_PG_URL")
        if pg:
            base = best(lambda: build(True), None, "")
            audited = best(lambda: build(True), pg, "ad")
            results["postgres_failing_overhead_us"] = (audited - base) / N * 1e6
            print(f"postgres failing: overhead {results['postgres_failing_overhead_us']:.1f} us",
                  flush=True)
    worst = max(results["clean_overhead_us"], results["failing_overhead_us"])
    results["target_us"] = TARGET_US
    results["meets_target"] = worst <= TARGET_US
    print(f"worst overhead {worst:.1f} us per audited dispatch (target <= {TARGET_US:.0f} us)")
    report({k: (round(v, 2) if isinstance(v, float) else v) for k, v in results.items()})


if __name__ == "__main__":
    main()
