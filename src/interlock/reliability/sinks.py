"""Sinks that persist and count: the audit log, dead letters, metrics, tracing.

Each implements :class:`interlock.Sink` and only queues on the dispatching
thread; the store's writer thread batches the writes.

    from interlock.reliability import sinks

    attached = sinks.attach(engine)           # audit + dead letters + metrics
    ...
    attached.close()                          # flush and close the store
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from interlock.reliability.metrics import Metrics

if TYPE_CHECKING:
    from interlock.engine.dispatch import Engine
    from interlock.engine.outcome import Outcome
    from interlock.engine.sinks import FailureRecord, Sink
    from interlock.reliability import BreakerBook
    from interlock.store import Store


class AuditSink:
    """One audit entry per hook per dispatch, in ``store``."""

    __slots__ = ("_submit",)

    def __init__(self, store: Store) -> None:
        self._submit = store.submit_outcome

    def dispatched(self, outcome: Outcome) -> None:
        self._submit(outcome)

    def failed(self, record: FailureRecord) -> None:
        pass


class DeadLetterSink:
    """Every isolated failure, durably, in ``store``."""

    __slots__ = ("_submit",)

    def __init__(self, store: Store) -> None:
        self._submit = store.submit_failure

    def dispatched(self, outcome: Outcome) -> None:
        pass

    def failed(self, record: FailureRecord) -> None:
        self._submit(record)


class MetricsSink:
    """Feeds :class:`~interlock.reliability.metrics.Metrics`."""

    __slots__ = ("_failure", "_observe", "metrics")

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._observe = metrics.observe
        self._failure = metrics.failure

    def dispatched(self, outcome: Outcome) -> None:
        self._observe(outcome)

    def failed(self, record: FailureRecord) -> None:
        self._failure(record)


class Attached(msgspec.Struct):
    """What :func:`attach` added to an engine."""

    engine: Engine
    store: Store
    metrics: Metrics
    sinks: tuple[Sink, ...]

    def close(self, timeout: float = 30.0) -> bool:
        """Detach, flush what is queued (with a deadline) and close the store."""
        for sink in self.sinks:
            self.engine.remove_sink(sink)
        return self.store.close(timeout)


def attach(engine: Engine, store: Store | None = None, *, url: str | None = None,
           breakers: BreakerBook | None = None,
           metrics: Metrics | None = None, tracing: bool = True,
           check_up_to: int | None = None) -> Attached:
    """Add the audit, dead-letter and metrics sinks (and tracing, when installed).

    Opens the default store (or ``url``) unless ``store`` is given. With
    ``breakers``, breaker openings are counted and state changes recorded.
    Pass ``metrics`` when the reliability wrappers already count into one.
    ``check_up_to``: see interlock.store.open_store.
    """
    if store is None:
        from interlock.store import open_store

        store = open_store(url, check_up_to=check_up_to)
    if metrics is None:
        metrics = Metrics(store)
    elif metrics.store is None:
        metrics.store = store
    added: list[Sink] = [AuditSink(store), DeadLetterSink(store), MetricsSink(metrics)]
    if tracing:
        from interlock.reliability.tracing import tracing_sink

        span_sink = tracing_sink()
        if span_sink is not None:
            added.append(span_sink)
    if breakers is not None:
        metrics.watch(breakers)
        store.watch(breakers)
    for sink in added:
        engine.add_sink(sink)
    return Attached(engine, store, metrics, tuple(added))
