"""Timeout and retry: attempts inside one budget, jittered backoff, Retry-After."""

from __future__ import annotations

import asyncio
import random

import pytest

from helpers.procs import ManualClock, ShellExecutor, exec_hook, flaky_script
from interlock import Engine, Verdict
from interlock.engine.errors import ConfigError, FailureMode, HookFailure, HookTimeout
from interlock.engine.hooks import Invocation
from interlock.events import make
from interlock.reliability import Policy, RetriesExhausted, backoff_delay, retryable, wrap
from interlock.testing import RecordingSink


def _event():
    return make("before_tool_call", tool_name="terminal", args={"command": "ls"})


def _inv(hook):
    return Invocation(event=_event(), hook=hook, invocation_id="inv-1")


async def test_fails_n_times_then_succeeds_within_budget(tmp_path):
    counter = tmp_path / "n"
    inner = ShellExecutor(flaky_script(counter, 2, '{"decision": "block", "reason": "no"}'))
    clock = ManualClock()
    ex = wrap(inner, Policy(timeout=10, retries=3, budget=20), clock=clock)
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    engine.register(exec_hook("flaky", ex))
    outcome = await engine.emit(_event())
    assert outcome.verdict is Verdict.BLOCK
    assert outcome.reason == "no"
    assert counter.read_text().strip() == "3"  # two real failures, then the answer
    assert sink.failures == []  # succeeded: nothing dead-lettered
    # every attempt keeps the invocation id and carries its number
    ids = {i for i, _a in inner.attempts}
    assert len(ids) == 1
    assert [a for _i, a in inner.attempts] == [1, 2, 3]
    assert len(clock.slept) == 2
    assert all(0 <= s <= 0.2 for s in clock.slept)
    engine.close()


async def test_retries_exhausted_is_one_failure_with_attempts(tmp_path):
    inner = ShellExecutor("exit1")
    ex = wrap(inner, Policy(timeout=10, retries=2), clock=ManualClock())
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    engine.register(exec_hook("broken", ex))
    outcome = await engine.emit(_event())
    assert outcome.blocked  # fail-closed gate
    assert inner.calls == 3
    [record] = sink.failures
    assert record.mode is FailureMode.EXHAUSTED
    assert record.attempts == 3
    assert "exited with 1" in record.error
    engine.close()


async def test_budget_stops_retries_before_the_count():
    clock = ManualClock()
    calls = 0

    async def failing(inv):
        nonlocal calls
        calls += 1
        clock.advance(4.0)  # each attempt takes 4 s of the 10 s budget
        raise HookFailure("503", retryable=True)

    ex = wrap(failing, Policy(timeout=5, retries=10, budget=10, backoff=0.5), clock=clock)
    with pytest.raises(RetriesExhausted) as info:
        await ex(_inv(exec_hook("slow", failing)))
    # 0-4 s, backoff, 4.x-8.x s, backoff, a third attempt with what is left; no fourth
    assert calls == 3
    assert "time budget spent" in str(info.value)
    assert info.value.attempts == 3


@pytest.mark.slow
async def test_timeout_per_attempt_kills_a_hanging_process():
    inner = ShellExecutor("hang")
    ex = wrap(inner, Policy(timeout=0.3, retries=1, backoff=0), clock=ManualClock())
    with pytest.raises(RetriesExhausted) as info:
        await asyncio.wait_for(ex(_inv(exec_hook("hang", inner))), 10)
    assert isinstance(info.value.last, HookTimeout)
    assert inner.calls == 2


async def test_terminal_failures_are_not_retried():
    inner = ShellExecutor("garbage")
    ex = wrap(inner, Policy(timeout=10, retries=3), clock=ManualClock())
    with pytest.raises(HookFailure) as info:
        await ex(_inv(exec_hook("garbage", inner)))
    assert info.value.mode is FailureMode.CONTRACT
    assert inner.calls == 1


async def test_retry_after_is_honoured_up_to_the_cap():
    clock = ManualClock()
    answers = [HookFailure("429", retryable=True, retry_after=3.0),
               HookFailure("503", retryable=True, retry_after=500.0)]

    async def http_like(inv):
        if answers:
            raise answers.pop(0)
        return None

    policy = Policy(timeout=5, retries=2, budget=100, backoff=0.01, retry_after_cap=20)
    ex = wrap(http_like, policy, clock=clock)
    assert await ex(_inv(exec_hook("h", http_like))) is None
    assert clock.slept[0] == pytest.approx(3.0, abs=0.02)
    assert clock.slept[1] == pytest.approx(20.0)  # 500 s asked, capped


async def test_retry_after_past_the_budget_gives_up():
    clock = ManualClock()

    async def http_like(inv):
        raise HookFailure("429", retryable=True, retry_after=60.0)

    ex = wrap(http_like, Policy(timeout=5, retries=3, budget=30, retry_after_cap=120),
              clock=clock)
    with pytest.raises(RetriesExhausted):
        await ex(_inv(exec_hook("h", http_like)))
    assert clock.slept == []


def test_backoff_is_jittered_and_capped():
    policy = Policy(backoff=0.1, backoff_max=1.0)
    rng = random.Random(7)
    delays = [backoff_delay(policy, 1, rng) for _ in range(200)]
    assert all(0 <= d <= 0.1 for d in delays)
    assert len({round(d, 6) for d in delays}) > 150  # jittered, not a fixed step
    assert all(0 <= backoff_delay(policy, 10, rng) <= 1.0 for _ in range(100))


def test_classification():
    assert retryable(HookTimeout("t"))
    assert not retryable(HookFailure("x"))
    assert retryable(HookFailure("x", retryable=True))
    assert not retryable(HookFailure("x", mode=FailureMode.BREAKER_OPEN, retryable=True))
    assert not retryable(HookFailure("x", mode=FailureMode.UNAPPROVED, retryable=True))


def test_policy_parse_names_file_and_field():
    assert Policy.parse({"retries": 2, "timeout": 1.5}).total == pytest.approx(1.5 * 3 + 10)
    with pytest.raises(ConfigError) as info:
        Policy.parse({"retires": 2}, file="config.toml", prefix="hooks.guard.")
    assert "config.toml" in str(info.value)
    assert "hooks.guard.retires" in str(info.value)
    assert "retries" in str(info.value)  # the fix lists the right names
    with pytest.raises(ConfigError, match=r"hooks\.guard\.retries"):
        Policy.parse({"retries": -1}, file="config.toml", prefix="hooks.guard.")
    with pytest.raises(ConfigError, match="expected a number"):
        Policy.parse({"timeout": "5s"})
