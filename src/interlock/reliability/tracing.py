"""OpenTelemetry spans: one per dispatch, with a child per hook.

Only when the ``opentelemetry`` extra is installed and a tracer provider is
configured: :func:`tracing_sink` returns None otherwise, no sink is attached,
and dispatch pays nothing.

Spans are made after the dispatch, from the outcome (the engine has no
tracing branch on its hot path). Each hook's child span carries its real
latency; children are laid end to end from the dispatch's start, so for
checks that ran concurrently the picture is a serialised upper bound. The
dispatch span is a child of whatever span is current on the dispatching
thread, so it nests inside the host's own spans.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from interlock.engine.redact import redact

if TYPE_CHECKING:
    from interlock.engine.outcome import Outcome
    from interlock.engine.sinks import FailureRecord


def available() -> bool:
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return False
    return True


class SpanSink:
    """A sink that turns each outcome into spans."""

    def __init__(self, tracer: Any) -> None:
        from opentelemetry import trace

        self._tracer = tracer
        self._trace = trace

    def dispatched(self, outcome: Outcome) -> None:
        trace = self._trace
        end = time.time_ns()
        lats = [lat or 0 for _h, _d, _f, lat, _s in outcome.raw]
        start = end - sum(lats)
        verdict = outcome.verdict.value
        if verdict == "none" and outcome.changes:
            verdict = "modify"
        event = outcome.event
        parent = self._tracer.start_span(
            f"interlock.dispatch {outcome.name}", start_time=start,
            attributes={"interlock.event": outcome.name, "interlock.verdict": verdict,
                        "interlock.session_id": event.session_id if event else "",
                        "interlock.revision": outcome.revision,
                        "interlock.hooks": len(outcome.raw)})
        ctx = trace.set_span_in_context(parent)
        t = start
        for (hook, decision, failure, _lat, status), lat in zip(outcome.raw, lats, strict=True):
            attrs: dict[str, Any] = {
                "interlock.event": outcome.name, "interlock.hook": hook.qualified_name,
                "interlock.verdict": decision.verdict.value if decision else "none",
                "interlock.status": str(status), "interlock.latency_ms": lat / 1e6,
            }
            if failure is not None:
                attrs["interlock.failure"] = failure.mode.value
            child = self._tracer.start_span(f"interlock.hook {hook.qualified_name}",
                                            context=ctx, start_time=t, attributes=attrs)
            if failure is not None:
                child.set_status(trace.Status(trace.StatusCode.ERROR,
                                              redact(str(failure))[:500]))
            t += lat
            child.end(end_time=t)
        parent.end(end_time=end)

    def failed(self, record: FailureRecord) -> None:
        pass


def tracing_sink(tracer_provider: Any = None) -> SpanSink | None:
    """A span sink, or None when OpenTelemetry is not installed, or when no tracer
    provider was given or configured globally (spans would go nowhere, at a cost)."""
    if tracer_provider is None and "opentelemetry.trace" not in sys.modules:
        # A global provider can only have been set by code that imported the API;
        # not importing it here saves every host (a bridge call above all) ~5 ms.
        return None
    if not available():
        return None
    from opentelemetry import trace

    if tracer_provider is None and isinstance(
            trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return SpanSink(trace.get_tracer("interlock", tracer_provider=tracer_provider))
