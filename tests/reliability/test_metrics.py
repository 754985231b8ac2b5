"""Metrics: per-hook counters, latency histograms, Prometheus text, status; tracing."""

from __future__ import annotations

import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from interlock import Engine, block
from interlock.reliability.metrics import BUCKETS, Metrics
from interlock.reliability.sinks import MetricsSink, attach
from interlock.testing import fire


@pytest.fixture
def engine():
    eng = Engine()

    @eng.on("before_tool_call", name="guard")
    def guard(event):
        return block("no") if event.args.get("bad") else None

    @eng.on("before_tool_call", name="flaky", on_error="open")
    def flaky(event):
        if event.args.get("boom"):
            raise RuntimeError("boom")
        return None

    @eng.on("before_tool_call", name="trial", shadow=True)
    def trial(event):
        return block("shadow says no")

    yield eng
    eng.close()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_counters_histograms_and_exposition(engine):
    metrics = Metrics()
    engine.add_sink(MetricsSink(metrics))
    fire(engine, "before_tool_call", tool_name="t", args={})
    fire(engine, "before_tool_call", tool_name="t", args={"boom": True})
    fire(engine, "before_tool_call", tool_name="t", args={"bad": True})
    stats = metrics.hooks()
    assert stats["code:guard"].executions == 3
    assert stats["code:guard"].blocks == 1
    # the block ended the third event before flaky ran
    assert stats["code:flaky"].executions == 2
    assert stats["code:flaky"].failures == {"crash": 1}
    # a shadow hook runs and is counted, but its block is never applied
    assert stats["code:trial"].executions == 3
    assert stats["code:trial"].blocks == 0
    assert stats["code:guard"].latency_count == 3
    assert sum(stats["code:guard"].buckets) == 3

    samples = _samples(metrics.exposition())
    assert samples[("interlock_hook_executions_total", (("hook", "code:guard"),))] == 3
    assert samples[("interlock_hook_blocks_total", (("hook", "code:guard"),))] == 1
    assert samples[("interlock_hook_failures_total",
                    (("hook", "code:flaky"), ("mode", "crash")))] == 1
    assert samples[("interlock_hook_latency_seconds_count", (("hook", "code:guard"),))] == 3
    assert samples[("interlock_hook_latency_seconds_bucket",
                    (("hook", "code:guard"), ("le", "+Inf")))] == 3
    assert samples[("interlock_dead_letters_unresolved", (("hook", "code:flaky"),))] == 1
    assert samples[("interlock_dispatches_total",
                    (("decision", "block"), ("event", "before_tool_call")))] == 1
    assert len([k for k in samples if k[0] == "interlock_hook_latency_seconds_bucket"
                and k[1][0] == ("hook", "code:guard")]) == len(BUCKETS) + 1


def test_quantiles_come_from_buckets():
    from interlock.reliability.metrics import HookStats

    s = HookStats()
    s.buckets[2] = 90  # <= 2.5 ms
    s.buckets[5] = 10  # <= 25 ms
    s.latency_count = 100
    assert s.quantile(0.5) == BUCKETS[2]
    assert s.quantile(0.95) == BUCKETS[5]
    assert HookStats().quantile(0.5) is None


def test_status_reads_unresolved_dead_letters_from_the_store(engine, tmp_path):
    attached = attach(engine, url=str(tmp_path / "s.db"), tracing=False)
    for _ in range(3):
        fire(engine, "before_tool_call", tool_name="t", args={"boom": True})
    attached.store.flush()
    status = attached.metrics.status()
    assert status["unresolved_dead_letters"] == 3
    assert status["hooks"]["code:flaky"]["unresolved_dead_letters"] == 3
    assert status["hooks"]["code:flaky"]["failures"] == 3
    assert status["hooks"]["code:guard"]["latency_p50_ms"] is not None
    first = attached.store.dead_letters()[0]
    attached.store.resolve(first.id)
    assert attached.metrics.status()["unresolved_dead_letters"] == 2
    attached.close()


def test_a_span_per_dispatch_with_a_child_per_hook(engine):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from interlock.reliability.tracing import tracing_sink

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = tracing_sink(provider)
    assert sink is not None
    engine.add_sink(sink)
    fire(engine, "before_tool_call", tool_name="t", args={"boom": True})
    spans = exporter.get_finished_spans()
    [parent] = [s for s in spans if s.name.startswith("interlock.dispatch")]
    children = [s for s in spans if s.parent is not None]
    assert parent.attributes["interlock.event"] == "before_tool_call"
    assert parent.attributes["interlock.verdict"] == "none"
    assert {c.attributes["interlock.hook"] for c in children} == {
        "code:guard", "code:flaky", "code:trial"}
    assert all(c.parent.span_id == parent.context.span_id for c in children)
    flaky = next(c for c in children if c.attributes["interlock.hook"] == "code:flaky")
    assert flaky.attributes["interlock.failure"] == "crash"
    assert flaky.status.status_code.name == "ERROR"
    trial = next(c for c in children if c.attributes["interlock.hook"] == "code:trial")
    assert trial.attributes["interlock.verdict"] == "block"
    assert trial.attributes["interlock.status"] == "shadow"
    assert all(c.start_time >= parent.start_time and c.end_time <= parent.end_time
               for c in children)


def test_without_opentelemetry_no_tracing_sink_is_attached(tmp_path):
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from interlock import Engine\n"
        "from interlock.reliability.tracing import tracing_sink\n"
        "from interlock.reliability.sinks import attach\n"
        "assert tracing_sink() is None\n"
        "e = Engine(); a = attach(e, url=sys.argv[1])\n"
        "print(sorted(type(s).__name__ for s in e.sinks))\n"
        "a.close(); e.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.db")],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['AuditSink', 'DeadLetterSink', 'MetricsSink']"


def test_no_tracing_sink_without_a_configured_provider(tmp_path):
    from interlock.reliability.tracing import tracing_sink

    assert tracing_sink() is None  # the API alone: spans would go nowhere
    engine = Engine()
    attached = attach(engine, url=str(tmp_path / "t.db"))
    assert len(engine.sinks) == 3
    attached.close()
    engine.close()
