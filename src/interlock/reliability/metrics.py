"""Counters and latency histograms per hook, Prometheus text, and a status summary.

Per hook: executions, failures (by mode), retries, blocks, breaker opens,
unresolved dead letters (read from the store when one is attached), and a
latency histogram. :class:`~interlock.reliability.sinks.MetricsSink` feeds outcomes and
failures in; the reliability wrappers report retries, and ``watch(book)``
counts breaker opens.

The dispatching thread only appends to a deque; counting happens when the
metrics are read, or inline once a few thousand are waiting (amortised).

What counts:
- an *execution* is one hook's entry in a dispatch, except those that never
  ran to an answer there: ``queued`` (a background hook, counted by its
  failures only) and ``cancelled``;
- a *block* is an execution whose verdict was block, a fail-closed failure's
  engine block included, except in shadow mode (never applied);
- a *failure* is a failure record, i.e. a dead letter.
"""

from __future__ import annotations

import bisect
import collections
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from interlock.engine.decisions import Verdict
from interlock.engine.outcome import Status

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

    from interlock.engine.outcome import Outcome
    from interlock.engine.sinks import FailureRecord
    from interlock.reliability import Breaker, BreakerBook, BreakerState
    from interlock.store import Store

BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                              0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Latency histogram upper bounds, in seconds (+Inf is implied)."""

_NOT_RUN = frozenset({Status.QUEUED, Status.CANCELLED})
_NO_BLOCK = frozenset({Status.SHADOW, Status.IGNORED, Status.QUEUED, Status.CANCELLED})
_DRAIN_AT = 4096


class HookStats(msgspec.Struct):
    """Everything counted for one hook (qualified name)."""

    executions: int = 0
    failures: dict[str, int] = msgspec.field(default_factory=dict)
    """By failure mode."""
    retries: int = 0
    blocks: int = 0
    breaker_opens: int = 0
    buckets: list[int] = msgspec.field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    latency_sum: float = 0.0
    """Seconds."""
    latency_count: int = 0

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def quantile(self, q: float) -> float | None:
        """An upper bound on the ``q`` quantile of latency (seconds), from the buckets."""
        if not self.latency_count:
            return None
        rank = q * self.latency_count
        seen = 0
        for i, n in enumerate(self.buckets):
            seen += n
            if seen >= rank:
                return BUCKETS[i] if i < len(BUCKETS) else float("inf")
        return float("inf")


class Metrics:
    """Per-hook counters and histograms for one engine (thread-safe)."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store
        self._hooks: dict[str, HookStats] = {}
        self._dispatches: collections.Counter[tuple[str, str]] = collections.Counter()
        self._pending: collections.deque[Any] = collections.deque()
        self._lock = threading.Lock()
        self._books: list[BreakerBook] = []

    # -- feeding (quick) --------------------------------------------------------
    def observe(self, outcome: Outcome) -> None:
        self._pending.append(outcome)
        if len(self._pending) >= _DRAIN_AT:
            self._drain()

    def failure(self, record: FailureRecord) -> None:
        self._pending.append(record)
        if len(self._pending) >= _DRAIN_AT:
            self._drain()

    def retried(self, hook: str) -> None:
        with self._lock:
            self._stats(hook).retries += 1

    def watch(self, book: BreakerBook) -> None:
        """Count breaker opens of ``book`` and show its breakers in ``status()``."""
        def changed(breaker: Breaker, old: BreakerState, new: BreakerState) -> None:
            if new == "open":
                with self._lock:
                    self._stats(breaker.key.hook).breaker_opens += 1

        book.listen(changed)
        self._books.append(book)

    # -- counting ---------------------------------------------------------------
    def _stats(self, hook: str) -> HookStats:
        stats = self._hooks.get(hook)
        if stats is None:
            stats = self._hooks[hook] = HookStats()
        return stats

    def _drain(self) -> None:
        with self._lock:
            pending = self._pending
            while pending:
                item = pending.popleft()
                if hasattr(item, "raw"):
                    self._count_outcome(item)
                else:
                    failures = self._stats(item.hook).failures
                    mode = str(item.mode)
                    failures[mode] = failures.get(mode, 0) + 1

    def _count_outcome(self, outcome: Outcome) -> None:
        verdict = outcome.verdict.value
        if verdict == "none" and outcome.changes:
            verdict = "modify"
        self._dispatches[(outcome.name, verdict)] += 1
        for hook, decision, _failure, latency_ns, status in outcome.raw:
            if status in _NOT_RUN:
                continue
            stats = self._stats(hook.qualified_name)
            stats.executions += 1
            if (decision is not None and decision.verdict is Verdict.BLOCK
                    and status not in _NO_BLOCK):
                stats.blocks += 1
            if latency_ns:
                seconds = latency_ns / 1e9
                stats.buckets[bisect.bisect_left(BUCKETS, seconds)] += 1
                stats.latency_sum += seconds
                stats.latency_count += 1

    # -- reading ----------------------------------------------------------------
    def hooks(self) -> dict[str, HookStats]:
        """A copy of every hook's stats, everything fed so far counted."""
        self._drain()
        with self._lock:
            return {name: HookStats(s.executions, dict(s.failures), s.retries, s.blocks,
                                    s.breaker_opens, list(s.buckets), s.latency_sum,
                                    s.latency_count)
                    for name, s in self._hooks.items()}

    def dispatches(self) -> dict[tuple[str, str], int]:
        """Dispatch counts by (event, merged decision)."""
        self._drain()
        with self._lock:
            return dict(self._dispatches)

    def unresolved(self) -> dict[str, int]:
        """Unresolved dead letters per hook: from the store, else every failure counted."""
        if self.store is not None:
            return self.store.unresolved_by_hook()
        return {name: s.failed for name, s in self.hooks().items() if s.failed}

    def status(self) -> dict[str, Any]:
        """A summary for people and `interlock status --json`."""
        unresolved = self.unresolved()
        hooks = {}
        for name, s in sorted(self.hooks().items()):
            p50, p95 = s.quantile(0.5), s.quantile(0.95)
            hooks[name] = {
                "executions": s.executions, "failures": s.failed,
                "failures_by_mode": dict(sorted(s.failures.items())), "retries": s.retries,
                "blocks": s.blocks, "breaker_opens": s.breaker_opens,
                "unresolved_dead_letters": unresolved.get(name, 0),
                "latency_p50_ms": None if p50 is None else p50 * 1000,
                "latency_p95_ms": None if p95 is None else p95 * 1000,
                "latency_mean_ms": (s.latency_sum / s.latency_count * 1000
                                    if s.latency_count else None),
            }
        breakers = []
        for book in self._books:
            now = book.clock.now()
            for b in book.snapshot():
                breakers.append({"hook": b.key.hook, "digest": b.key.digest,
                                 "state": str(book.state(b.key)), "failures": b.failures,
                                 "opens": b.opens, "retry_in_s": round(b.retry_in(now), 3)})
        out = {"hooks": hooks, "breakers": breakers,
               "dispatches": sum(self.dispatches().values()),
               "unresolved_dead_letters": sum(unresolved.values())}
        if self.store is not None:
            out["store"] = self.store.health()
        return out

    # -- Prometheus ---------------------------------------------------------------
    def registry(self) -> CollectorRegistry:
        """A prometheus-client registry holding these metrics (collected on scrape)."""
        from prometheus_client.registry import CollectorRegistry

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self))
        return registry

    def exposition(self) -> str:
        """The Prometheus text exposition format."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry()).decode()


class _Collector:
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        hooks = self.metrics.hooks()
        executions = CounterMetricFamily("interlock_hook_executions",
                                         "Hook executions", labels=["hook"])
        failures = CounterMetricFamily("interlock_hook_failures",
                                       "Hook failures (dead letters)", labels=["hook", "mode"])
        retries = CounterMetricFamily("interlock_hook_retries", "Retried attempts",
                                      labels=["hook"])
        blocks = CounterMetricFamily("interlock_hook_blocks", "Blocks by hook", labels=["hook"])
        opens = CounterMetricFamily("interlock_breaker_opens", "Circuit breaker openings",
                                    labels=["hook"])
        latency = HistogramMetricFamily("interlock_hook_latency_seconds", "Hook latency",
                                        labels=["hook"])
        for name, s in sorted(hooks.items()):
            executions.add_metric([name], s.executions)
            for mode, n in sorted(s.failures.items()):
                failures.add_metric([name, mode], n)
            retries.add_metric([name], s.retries)
            blocks.add_metric([name], s.blocks)
            opens.add_metric([name], s.breaker_opens)
            cumulative, buckets = 0, []
            for bound, n in zip((*BUCKETS, float("inf")), s.buckets, strict=True):
                cumulative += n
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
            latency.add_metric([name], buckets, s.latency_sum)
        unresolved = GaugeMetricFamily("interlock_dead_letters_unresolved",
                                       "Unresolved dead letters", labels=["hook"])
        for name, n in sorted(self.metrics.unresolved().items()):
            unresolved.add_metric([name], n)
        dispatches = CounterMetricFamily("interlock_dispatches", "Dispatches",
                                         labels=["event", "decision"])
        for (event, decision), n in sorted(self.metrics.dispatches().items()):
            dispatches.add_metric([event, decision], n)
        yield from (executions, failures, retries, blocks, opens, latency, unresolved,
                    dispatches)
        if self.metrics.store is not None:
            yield from _store_families(self.metrics.store.health())


def _store_families(health: dict[str, Any]) -> Iterator[Any]:
    """The store's health (from memory: a scrape never waits on the database)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    labels = ["backend"]
    backend = [str(health["backend"])]

    def gauge(name: str, doc: str, value: float) -> Any:
        family = GaugeMetricFamily(name, doc, labels=labels)
        family.add_metric(backend, value)
        return family

    def counter(name: str, doc: str, value: float) -> Any:
        family = CounterMetricFamily(name, doc, labels=labels)
        family.add_metric(backend, value)
        return family

    yield gauge("interlock_store_healthy", "1 when the store writes and keeps up, else 0",
                1.0 if health["ok"] else 0.0)
    yield counter("interlock_store_write_errors", "Failed store writes (each retried)",
                  health["write_errors"])
    yield gauge("interlock_store_backlog", "Records queued or being written, not committed",
                health["backlog"])
    yield gauge("interlock_store_oldest_unwritten_age_seconds",
                "Age of the oldest record not yet committed", health["oldest_unwritten_age_s"])
    yield gauge("interlock_store_last_commit_timestamp_seconds",
                "Unix time of the last committed write", health["last_commit_at"] or 0.0)
    yield counter("interlock_store_dropped", "Records refused because the backlog was full",
                  health["dropped"])
    yield counter("interlock_store_unwritable", "Records no retry could write, kept as "
                  "dead letters of interlock:store", health["unwritable"])
    pruned = CounterMetricFamily("interlock_store_pruned", "Rows deleted by retention "
                                 "(docs/reliability.md, Dead letters)",
                                 labels=["backend", "table"])
    for table, count in health["pruned"].items():
        pruned.add_metric([*backend, table], count)
    yield pruned
    overflow = CounterMetricFamily("interlock_dead_letters_overflow",
                                   "Failures counted but not stored: past the cap per hook "
                                   "and failure mode", labels=["hook", "mode"])
    for entry in health["dead_letter_overflow"]:
        overflow.add_metric([entry["hook"], entry["mode"]], entry["count"])
    yield overflow
