"""harden(): what a registry calls per hook; and the doctor's fail-open warnings."""

from __future__ import annotations

from helpers.procs import ShellExecutor, exec_hook, flaky_script
from interlock import Engine, OnError
from interlock.engine.errors import FailureMode
from interlock.reliability import (
    GRACE,
    BreakerBook,
    BreakerKey,
    BreakerState,
    Policy,
    fail_open_warnings,
    harden,
)
from interlock.reliability.metrics import Metrics
from interlock.reliability.sinks import MetricsSink
from interlock.testing import RecordingSink, afire


async def test_harden_wraps_the_executor_and_bounds_the_whole_budget(tmp_path):
    counter = tmp_path / "n"
    raw = exec_hook("flaky", ShellExecutor(flaky_script(counter, 1)), timeout=7.0)
    book = BreakerBook()
    metrics = Metrics()
    hook = harden(raw, Policy(timeout=2, retries=2, backoff=0), breakers=book,
                  metrics=metrics)
    assert hook is not raw
    assert raw.executor is not hook.executor
    assert hook.timeout == Policy(timeout=2, retries=2).total + GRACE
    sink = RecordingSink()
    engine = Engine(sinks=[sink, MetricsSink(metrics)])
    engine.register(hook)
    outcome = await afire(engine, "before_tool_call", tool_name="t", args={})
    assert not outcome.blocked
    assert sink.failures == []
    assert metrics.hooks()["code:flaky"].retries == 1
    engine.close()


async def test_harden_defaults_to_the_hooks_timeout_and_the_design_breaker():
    book = BreakerBook()
    hook = harden(exec_hook("down", ShellExecutor("exit1"), timeout=3.0), breakers=book)
    assert hook.timeout == 3.0 + GRACE
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    engine.register(hook)
    for _ in range(4):
        assert (await afire(engine, "before_tool_call", tool_name="t", args={})).blocked
    assert book.state(BreakerKey.of(hook)) is BreakerState.OPEN
    assert [f.mode for f in sink.failures][-1] is FailureMode.BREAKER_OPEN
    engine.close()


def test_python_hooks_without_a_book_or_a_threshold_are_left_alone():
    engine = Engine()
    handle = engine.on("before_tool_call", lambda e: None, name="py")
    assert harden(handle.hook, breakers=None) is handle.hook
    assert harden(handle.hook, Policy(breaker_threshold=0), breakers=BreakerBook()) is handle.hook
    assert harden(handle.hook, breakers=BreakerBook()) is not handle.hook  # a breaker
    engine.close()


def test_doctor_warns_about_fail_open_hooks_on_gate_events():
    hooks = [
        exec_hook("open_guard", ShellExecutor("allow"), on_error=OnError.OPEN),
        exec_hook("closed_guard", ShellExecutor("allow")),
        exec_hook("observer", ShellExecutor("allow"), event="session_end",
                  on_error=OnError.OPEN),
        exec_hook("stop_check", ShellExecutor("allow"), event="before_stop",
                  on_error=OnError.OPEN),
    ]
    [warning] = fail_open_warnings(hooks)
    assert "code:open_guard" in warning
    assert "before_tool_call" in warning
    assert "3 times" in warning
    assert "60s" in warning
    assert 'on_error = "closed"' in warning
