"""Circuit breaker: threshold, cooldown, half-open probe, state across reloads."""

from __future__ import annotations

import asyncio

import pytest

from helpers.procs import ManualClock, ShellExecutor, exec_hook
from interlock import Engine, OnError, Verdict
from interlock.engine.errors import FailureMode, HookFailure
from interlock.engine.hooks import Invocation
from interlock.events import make
from interlock.reliability import BreakerBook, BreakerKey, BreakerState, Policy, wrap
from interlock.testing import RecordingSink

POLICY = Policy(timeout=10, retries=0, breaker_threshold=3, breaker_cooldown=60)


def _event():
    return make("before_tool_call", tool_name="terminal", args={"command": "ls"})


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def book(clock):
    return BreakerBook(clock)


@pytest.fixture
def sink():
    return RecordingSink()


@pytest.fixture
def engine(sink):
    eng = Engine(sinks=[sink])
    yield eng
    eng.close()


async def test_always_failing_opens_at_threshold_and_half_opens_after_cooldown(
        engine, sink, clock, book):
    inner = ShellExecutor("exit1")
    hook = exec_hook("broken", wrap(inner, POLICY, clock=clock, breakers=book))
    engine.register(hook)
    key = BreakerKey.of(hook)
    for i in range(3):
        assert book.state(key) is BreakerState.CLOSED, i
        outcome = await engine.emit(_event())
        assert outcome.blocked
    assert book.state(key) is BreakerState.OPEN
    assert inner.calls == 3

    # Open: refused without running the hook, and the fail-closed gate blocks.
    outcome = await engine.emit(_event())
    assert outcome.blocked
    assert "breaker_open" in (outcome.reason or "")
    assert inner.calls == 3
    assert [f.mode for f in sink.failures] == [FailureMode.CRASH] * 3 + [FailureMode.BREAKER_OPEN]

    clock.advance(59.9)
    assert book.state(key) is BreakerState.OPEN
    clock.advance(0.2)
    assert book.state(key) is BreakerState.HALF_OPEN

    # The probe fails: open again for another cooldown.
    outcome = await engine.emit(_event())
    assert outcome.blocked
    assert inner.calls == 4
    assert book.state(key) is BreakerState.OPEN
    assert book.get(key).opens == 2

    # After the next cooldown the hook works again: the probe closes the breaker.
    inner.script = "cat >/dev/null; echo '{}'"
    clock.advance(61)
    outcome = await engine.emit(_event())
    assert not outcome.blocked
    assert inner.calls == 5
    assert book.state(key) is BreakerState.CLOSED
    assert book.get(key).failures == 0


async def test_fail_closed_hook_behind_open_breaker_blocks_and_fail_open_does_not(
        engine, sink, clock, book):
    async def broken(inv):
        raise HookFailure("down", retryable=True)

    closed = exec_hook("closed", wrap(broken, POLICY, clock=clock, breakers=book))
    opened = exec_hook("opened", wrap(broken, POLICY, clock=clock, breakers=book),
                       on_error=OnError.OPEN)
    engine.register(opened)
    for _ in range(3):
        await engine.emit(_event())
    assert book.state(BreakerKey.of(opened)) is BreakerState.OPEN
    outcome = await engine.emit(_event())
    assert not outcome.blocked  # fail-open: an open breaker means no opinion
    assert sink.failures[-1].mode is FailureMode.BREAKER_OPEN

    engine.replace_hooks([closed])
    for _ in range(3):
        await engine.emit(_event())
    sink.failures.clear()
    for _ in range(5):  # never lets traffic through while open
        outcome = await engine.emit(_event())
        assert outcome.verdict is Verdict.BLOCK
        assert outcome.hook is closed
    assert [f.mode for f in sink.failures] == [FailureMode.BREAKER_OPEN] * 5
    assert all(f.fail_closed for f in sink.failures)


async def test_a_block_counts_as_success(engine, clock, book):
    answers = ["fail", "fail", "block", "fail", "fail", "block"]

    async def mixed(inv):
        answer = answers.pop(0)
        if answer == "fail":
            raise HookFailure("flaky", retryable=True)
        from interlock import block
        return block("policy")

    hook = exec_hook("mixed", wrap(mixed, POLICY, clock=clock, breakers=book))
    engine.register(hook)
    for _ in range(6):
        await engine.emit(_event())
    assert book.state(BreakerKey.of(hook)) is BreakerState.CLOSED
    assert book.get(BreakerKey.of(hook)).opens == 0


async def test_half_open_lets_exactly_one_probe_through(clock, book):
    release = asyncio.Event()
    entered = asyncio.Event()

    async def slow(inv):
        entered.set()
        await release.wait()
        return None

    async def broken(inv):
        raise HookFailure("down")

    hook = exec_hook("probe", broken)
    key = BreakerKey.of(hook)
    failing = wrap(broken, POLICY, clock=clock, breakers=book)
    inv = Invocation(event=_event(), hook=hook, invocation_id="i")
    for _ in range(3):
        with pytest.raises(HookFailure):
            await failing(inv)
    clock.advance(60)
    probing = wrap(slow, POLICY, clock=clock, breakers=book)
    probe = asyncio.create_task(probing(inv))
    await asyncio.wait_for(entered.wait(), 5)
    for _ in range(3):  # meanwhile everything else is refused
        with pytest.raises(HookFailure) as info:
            await probing(inv)
        assert info.value.mode is FailureMode.BREAKER_OPEN
        assert "probe is in flight" in str(info.value)
    release.set()
    assert await probe is None
    assert book.state(key) is BreakerState.CLOSED


async def test_a_cancelled_probe_frees_the_slot(clock, book):
    entered = asyncio.Event()

    async def hang(inv):
        entered.set()
        await asyncio.Event().wait()

    async def broken(inv):
        raise HookFailure("down")

    hook = exec_hook("c", broken)
    inv = Invocation(event=_event(), hook=hook, invocation_id="i")
    for _ in range(3):
        with pytest.raises(HookFailure):
            await wrap(broken, POLICY, clock=clock, breakers=book)(inv)
    clock.advance(60)
    task = asyncio.create_task(wrap(hang, POLICY, clock=clock, breakers=book)(inv))
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert book.state(BreakerKey.of(hook)) is BreakerState.HALF_OPEN
    assert book.admit(book.get(BreakerKey.of(hook)))  # the next caller may probe


async def test_breaker_state_survives_reloads_and_resets_on_a_new_definition(
        engine, clock, book):
    inner = ShellExecutor("exit1")

    def build(digest):  # what a registry does on every reload: new Hook objects
        return exec_hook("guard", wrap(inner, POLICY, clock=clock, breakers=book),
                         digest=digest)

    engine.replace_hooks([build("v1")])
    for _ in range(3):
        await engine.emit(_event())
    engine.replace_hooks([build("v1")])  # same definition reloaded
    outcome = await engine.emit(_event())
    assert outcome.blocked
    assert inner.calls == 3
    assert book.state(BreakerKey("code", "guard", "v1")) is BreakerState.OPEN

    inner.script = "cat >/dev/null; echo '{}'"
    engine.replace_hooks([build("v2")])  # edited: a fresh breaker
    outcome = await engine.emit(_event())
    assert not outcome.blocked
    assert inner.calls == 4
    assert book.state(BreakerKey("code", "guard", "v2")) is BreakerState.CLOSED
    book.forget({BreakerKey("code", "guard", "v2")})
    assert [b.key.digest for b in book.snapshot()] == ["v2"]


async def test_threshold_zero_disables_the_breaker(clock, book):
    async def broken(inv):
        raise HookFailure("down")

    ex = wrap(broken, Policy(breaker_threshold=0), clock=clock, breakers=book)
    inv = Invocation(event=_event(), hook=exec_hook("z", broken), invocation_id="i")
    for _ in range(10):
        with pytest.raises(HookFailure) as info:
            await ex(inv)
        assert info.value.mode is FailureMode.CRASH
    assert book.snapshot() == []
