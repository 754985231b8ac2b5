"""Timers, crash isolation, concurrency, observe events, background and shadow."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from interlock import Engine, Verdict, approve, ask, block, context, respond, skip, stop
from interlock.engine.outcome import Status
from interlock.events import (
    BeforeStop,
    BeforeToolCall,
    ConfigChange,
    LlmError,
    MessageReceived,
    Notification,
    SubagentStop,
    ToolError,
    UserInput,
)
from interlock.testing import RecordingSink


def ev(cmd="ls"):
    return BeforeToolCall(tool_name="terminal", args={"command": cmd}, session_id="s")


# -- timers --------------------------------------------------------------------
async def test_async_hook_that_hangs_times_out_and_fails_closed(engine, sink):
    async def hang(event):
        await asyncio.Event().wait()

    engine.on("before_tool_call", hang, timeout=0.05, name="hang")
    out = await engine.emit(ev())
    assert out.blocked
    assert "did not answer (timeout)" in out.reason
    assert sink.failures[0].mode.value == "timeout"


async def test_async_hook_that_hangs_fails_open_when_told(engine, sink):
    async def hang(event):
        await asyncio.sleep(10)

    engine.on("before_tool_call", hang, timeout=0.05, on_error="open")
    out = await engine.emit(ev())
    assert out.verdict is Verdict.NONE
    assert sink.failures[0].mode.value == "timeout"


def test_sync_facade_runs_async_hooks_with_timeouts(engine):
    async def hang(event):
        await asyncio.sleep(10)

    engine.on("before_tool_call", hang, timeout=0.05)
    assert engine.emit_sync(ev()).blocked


async def test_async_hook_that_never_suspends_gets_no_timer(engine, monkeypatch):
    calls = []
    real = asyncio.timeout_at

    def spy(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(asyncio, "timeout_at", spy)

    async def quick(event):
        return approve("fast")

    engine.on("before_tool_call", quick)
    out = await engine.emit(ev())
    assert out.verdict is Verdict.APPROVE
    assert calls == []


async def test_async_hook_that_suspends_gets_a_timer(engine, monkeypatch):
    calls = []
    real = asyncio.timeout_at

    def spy(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(asyncio, "timeout_at", spy)

    async def slow(event):
        await asyncio.sleep(0)
        return approve("slow")

    engine.on("before_tool_call", slow)
    assert (await engine.emit(ev())).verdict is Verdict.APPROVE
    assert len(calls) == 1


def test_plain_sync_hooks_never_touch_an_event_loop(engine):
    engine.on("before_tool_call", lambda e: approve("ok"))
    engine.emit_sync(ev())
    assert engine._loop._loop is None  # the private loop was never started


def test_blocking_hook_runs_on_a_worker_thread_with_timeout(engine, sink):
    threads = []

    def slow(event):
        threads.append(threading.current_thread())
        time.sleep(0.5)
        return approve("late")

    engine.on("before_tool_call", slow, blocking=True, timeout=0.05)
    out = engine.emit_sync(ev())
    assert out.blocked
    assert sink.failures[0].mode.value == "timeout"
    assert threads[0] is not threading.main_thread()


# -- crash isolation ------------------------------------------------------------
@pytest.mark.parametrize("on_error", ["open", "closed"])
def test_raising_hook_is_isolated(engine, sink, on_error):
    def boom(event):
        raise RuntimeError("kaboom")

    engine.on("before_tool_call", boom, on_error=on_error, name="boom")
    out = engine.emit_sync(ev())
    assert out.verdict is (Verdict.BLOCK if on_error == "closed" else Verdict.NONE)
    assert sink.failures[0].mode.value == "crash"
    assert "kaboom" in sink.failures[0].error
    if on_error == "closed":
        # fixed engine text, not the hook's output (it may become the model's instruction)
        assert "kaboom" not in out.reason
        assert "boom" in out.reason


async def test_async_raising_hook_is_isolated(engine, sink):
    async def boom(event):
        await asyncio.sleep(0)
        raise ValueError("bad")

    engine.on("before_tool_call", boom)
    assert (await engine.emit(ev())).blocked


def test_defaults_closed_on_gate_open_on_observe(engine, sink):
    def boom(event):
        raise RuntimeError("x")

    engine.on(["before_tool_call", "notification"], boom)
    assert engine.emit_sync(ev()).blocked
    out = engine.emit_sync(Notification(message="hi"))
    assert out.verdict is Verdict.NONE
    assert len(sink.failures) == 2


def test_cancellation_is_not_swallowed():
    engine = Engine()
    started = asyncio.Event()

    async def waits(event):
        started.set()
        await asyncio.Event().wait()

    engine.on("before_tool_call", waits)

    async def main():
        task = asyncio.ensure_future(engine.emit(ev()))
        await started.wait()
        task.cancel()  # the host cancels the dispatch: that propagates
        return await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    engine.close()


# -- fail-closed per event ---------------------------------------------------------
def boom(event):
    raise RuntimeError("x")


@pytest.mark.parametrize(
    ("event", "blocks"),
    [
        (ev(), True),
        (UserInput(text="hi"), True),
        (BeforeStop(), False),
        (SubagentStop(), False),
        (LlmError(error="500"), False),
        (ToolError(tool_name="t", error="e"), False),
        (ConfigChange(operator=False), True),
        (ConfigChange(operator=True), False),
    ],
)
def test_fail_closed_means_what_the_event_says(engine, event, blocks):
    engine.on(event.name, boom, on_error="closed")
    out = engine.emit_sync(event)
    assert out.blocked is blocks


def test_model_select_failure_has_no_effect(engine):
    from interlock.events import ModelSelect

    engine.on("model_select", boom, on_error="closed")
    out = engine.emit_sync(ModelSelect(model="m"))
    assert out.verdict is Verdict.NONE
    assert out.final().model == "m"


# -- concurrency -------------------------------------------------------------------
ANSWERS = {"block": lambda d: block(f"b{d}"), "stop": lambda d: stop(f"s{d}"),
           "ask": lambda d: ask(f"a{d}"), "approve": lambda d: approve(f"p{d}"),
           "respond": lambda d: respond(d), "ctx": lambda d: context(f"c{d}"),
           "none": lambda d: None}


def make_check(kind, delay):
    async def check(event):
        await asyncio.sleep(delay)
        return ANSWERS[kind](delay)

    return check


def make_sequential(kind, delay):
    # The same answer from a plain sync hook: these run strictly one by one,
    # each to completion before the next starts (no sleep needed for order).
    return lambda event: ANSWERS[kind](delay)


@pytest.mark.parametrize(
    "plan",
    [
        [("approve", 0.03), ("block", 0.001), ("ask", 0.02)],
        [("block", 0.03), ("block", 0.001)],
        [("block", 0.03), ("stop", 0.001)],
        [("approve", 0.03), ("block", 0.02), ("stop", 0.001), ("none", 0.0)],
        [("stop", 0.02), ("block", 0.0), ("none", 0.05)],
        [("block", 0.001), ("none", 0.05), ("stop", 0.03)],
        [("ask", 0.02), ("ask", 0.001), ("approve", 0.0)],
        [("ctx", 0.02), ("respond", 0.001), ("ctx", 0.0), ("block", 0.01)],
        [("none", 0.01), ("approve", 0.02), ("respond", 0.0)],
    ],
)
async def test_concurrent_checks_equal_sequential(plan):
    async def run(concurrent: bool):
        engine = Engine()
        for i, (kind, delay) in enumerate(plan):
            make = make_check if concurrent else make_sequential
            engine.on("before_tool_call", make(kind, delay), name=f"h{i}")
        out = await engine.emit(ev())
        engine.close()
        return ((out.verdict, out.reason, out.hook.name if out.hook else None, out.value,
                 out.contexts),
                [(r.hook, r.verdict, r.status, r.reason) for r in out.hooks])

    (outcome, records), (seq_outcome, seq_records) = await run(True), await run(False)
    assert outcome == seq_outcome
    # Every hook that ran one by one has the same record; the checks after the
    # one that ended the event never ran there, and here they count for nothing.
    assert records[:len(seq_records)] == seq_records
    assert all(status in (Status.SUPERSEDED, Status.CANCELLED)
               for _h, _v, status, _r in records[len(seq_records):])


async def test_checks_actually_run_concurrently():
    engine = Engine()
    started: list[int] = []
    all_started = asyncio.Event()

    def make(i):
        async def check(event):
            started.append(i)
            if len(started) == 5:
                all_started.set()
            # One after another, the first would wait here for the others forever
            # (until its timeout): all five in at once is what shows concurrency.
            await all_started.wait()
            return approve(f"h{i}")

        return check

    for i in range(5):
        engine.on("before_tool_call", make(i), name=f"h{i}", timeout=10)
    out = await engine.emit(ev())
    assert sorted(started) == [0, 1, 2, 3, 4]
    assert [(r.reason, r.failure) for r in out.hooks] == [(f"h{i}", None) for i in range(5)]


async def test_block_cancels_later_outstanding_checks():
    engine = Engine()
    finished = []
    ended = asyncio.Event()

    async def slow(event):
        try:
            await asyncio.sleep(5)
            finished.append("slow")
        except asyncio.CancelledError:
            finished.append("cancelled")
            ended.set()
            raise

    engine.on("before_tool_call", make_check("block", 0.01), name="first")
    engine.on("before_tool_call", slow, name="slow")
    out = await engine.emit(ev())
    assert out.blocked
    assert {r.hook: r.status.value for r in out.hooks}["code:slow"] == "cancelled"
    await asyncio.wait_for(ended.wait(), 10)  # the cancellation reaches the hook soon after
    assert finished == ["cancelled"]  # stopped, not left running in the background


async def test_a_check_that_failed_after_the_ending_answer_stays_failed_and_does_not_count():
    """A later check that had already failed when an earlier one ended the
    event: its record says failed (not superseded), its failure is recorded,
    and its fail-closed block does not outrank the answer that ended the event."""
    engine = Engine()
    sink = RecordingSink()
    engine.add_sink(sink)
    failed = asyncio.Event()

    async def skipper(event):
        await failed.wait()  # answers only once the later check has failed
        return skip("not this one")

    async def crasher(event):
        await asyncio.sleep(0)
        failed.set()
        raise RuntimeError("broken")

    engine.on("message_received", skipper, name="skipper")
    engine.on("message_received", crasher, name="crasher")
    out = await engine.emit(MessageReceived(text="hi", session_id="s"))
    assert (out.verdict, out.reason) == (Verdict.SKIP, "not this one")
    statuses = {r.hook: (r.verdict, r.status.value) for r in out.hooks}
    assert statuses == {"code:skipper": ("skip", "applied"), "code:crasher": ("none", "failed")}
    assert [f.hook for f in sink.failures] == ["code:crasher"]


async def test_observers_run_concurrently():
    engine = Engine()
    started: list[int] = []
    finished: list[int] = []
    all_started = asyncio.Event()
    for i in range(10):
        async def obs(event, i=i):
            started.append(i)
            if len(started) == 10:
                all_started.set()
            await all_started.wait()  # one after another, the first would wait forever
            finished.append(i)

        engine.on("notification", obs, name=f"o{i}", timeout=10)
    out = await engine.emit(Notification(message="x"))
    assert sorted(finished) == list(range(10)), out.hooks


def test_decision_on_observe_event_is_a_warning(engine, caplog):
    engine.on("notification", lambda e: block("no"), name="confused")
    out = engine.emit_sync(Notification(message="x"))
    assert out.verdict is Verdict.NONE
    assert out.hooks[0].status.value == "ignored"
    assert "ignored" in caplog.text


def test_background_hooks_are_not_awaited(engine):
    gate = threading.Event()
    done = []

    def slow(event):
        gate.wait(5)
        done.append(event.name)

    engine.on("notification", slow, background=True)
    out = engine.emit_sync(Notification(message="x"))
    assert out.hooks[0].status.value == "queued"
    assert done == []
    gate.set()
    assert engine.drain(5)
    assert done == ["notification"]


def test_background_failures_are_recorded(engine, sink):
    engine.on("notification", boom, background=True, name="bg")
    engine.emit_sync(Notification(message="x"))
    engine.drain(5)
    assert [f.hook for f in sink.failures] == ["code:bg"]


def test_background_queue_overflow_is_dead_lettered():
    sink = RecordingSink()
    engine = Engine(sinks=[sink], queue_limit=2)
    gate = threading.Event()
    engine.on("notification", lambda e: gate.wait(5), background=True, name="slow")
    for _ in range(6):
        engine.notify(Notification(message="x"))
    dropped = [f for f in sink.failures if f.mode.value == "dropped"]
    gate.set()
    engine.close()
    assert len(dropped) >= 3  # at most one running plus two queued


def test_background_work_a_close_cuts_off_is_dead_lettered():
    # close() waits for the queues with a deadline, then stops the loop: the
    # invocation it cancels and those still queued never ran, and each is
    # recorded (docs/engine.md, Shadow and background hooks), not lost.
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    started = threading.Event()

    async def hangs(event):
        started.set()
        await asyncio.Event().wait()

    engine.on("notification", hangs, background=True, name="hangs")
    for _ in range(3):
        engine.notify(Notification(message="x"))
    assert started.wait(5)
    engine.close(timeout=0.05)
    assert [(f.hook, f.mode.value) for f in sink.failures] == [("code:hangs", "dropped")] * 3
    assert "closed" in sink.failures[0].error


def test_shadow_hooks_are_audited_not_applied(engine, sink):
    engine.on("before_tool_call", lambda e: block("would block"), shadow=True, name="trial")
    out = engine.emit_sync(ev())
    assert out.verdict is Verdict.NONE
    rec = out.hooks[0]
    assert (rec.hook, rec.verdict, rec.status.value) == ("code:trial", "block", "shadow")
    assert sink.outcomes[-1].hooks[0].verdict == "block"


def test_failing_shadow_hook_never_blocks(engine, sink):
    engine.on("before_tool_call", boom, shadow=True, name="trial")
    assert not engine.emit_sync(ev()).blocked
    assert sink.failures[0].hook == "code:trial"


# -- loop cap ------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [BeforeStop, SubagentStop])
def test_stop_loop_cap(cls):
    engine = Engine(stop_loop_cap=3)
    seen = []

    def keep_going(event):
        seen.append((event.stop_hook_active, event.block_count))
        return block("keep working")

    engine.on(cls.name if hasattr(cls, "name") else "before_stop", keep_going)
    results = [engine.emit_sync(cls(session_id="s")).verdict for _ in range(5)]
    assert results == [Verdict.BLOCK] * 3 + [Verdict.NONE, Verdict.BLOCK]
    assert seen[:4] == [(False, 0), (True, 1), (True, 2), (True, 3)]


def test_a_capped_stop_block_names_no_winner_and_is_recorded_as_ignored():
    """The capped block did not decide anything: the outcome names no hook or
    reason, and the audit record does not call the block applied."""
    engine = Engine(stop_loop_cap=1)
    engine.on("before_stop", lambda e: block("keep working"), name="nag")
    assert engine.emit_sync(BeforeStop(session_id="s")).blocked
    capped = engine.emit_sync(BeforeStop(session_id="s"))
    assert (capped.verdict, capped.capped, capped.hook, capped.reason) == (
        Verdict.NONE, True, None, None)
    record = capped.to_dict()
    assert (record["decision"], record["hook"], record["reason"]) == ("none", None, None)
    assert [(h["hook"], h["verdict"], h["status"]) for h in record["hooks"]] == [
        ("code:nag", "block", "ignored")]


def test_stop_loop_cap_resets_on_user_input():
    engine = Engine(stop_loop_cap=2)
    engine.on("before_stop", lambda e: block("more"))
    assert engine.emit_sync(BeforeStop(session_id="s")).blocked
    assert engine.emit_sync(BeforeStop(session_id="s")).blocked
    engine.emit_sync(UserInput(session_id="s", text="next"))
    assert engine.emit_sync(BeforeStop(session_id="s")).blocked
    assert engine.emit_sync(BeforeStop(session_id="other")).blocked


# -- the two APIs -----------------------------------------------------------------
def test_event_with_no_hooks_returns_the_shared_outcome(engine):
    a = engine.emit_sync(ev("ls"))
    b = engine.emit_sync(ev("pwd"))
    assert a is b
    assert a.verdict is Verdict.NONE
    assert a.event is None
    assert a.final(ev("x")).args == {"command": "x"}
    assert a.to_dict(ev())["event"] == "before_tool_call"


async def test_emit_returns_awaitables_that_gather_accepts(engine):
    engine.on("user_input", lambda e: block("no"))
    outs = await asyncio.gather(engine.emit(ev()), engine.emit(UserInput(text="x")))
    assert [o.verdict for o in outs] == [Verdict.NONE, Verdict.BLOCK]
    fut = asyncio.ensure_future(engine.emit(UserInput(text="y")))
    assert (await fut).blocked


async def test_sync_facade_works_inside_a_running_loop_with_async_hooks(engine):
    async def slow(event):
        await asyncio.sleep(0.01)
        return block("slow no")

    engine.on("before_tool_call", slow)
    # a sync host library called from async code: the facade uses its own loop thread
    out = await asyncio.to_thread(engine.emit_sync, ev())
    assert out.blocked
    assert engine.emit_sync(ev()).blocked


def test_latency_is_measured_when_a_sink_is_attached():
    engine = Engine()
    engine.on("before_tool_call", lambda e: None, name="h")
    assert engine.emit_sync(ev()).hooks[0].latency_ms is None
    engine.add_sink(RecordingSink())
    assert engine.emit_sync(ev()).hooks[0].latency_ms > 0


async def test_async_hook_answering_garbage_without_suspending_is_isolated(engine, sink):
    async def garbage(event):
        return "allow"

    engine.on("before_tool_call", garbage, name="garbage")
    out = await engine.emit(ev())
    assert out.blocked
    assert sink.failures[0].mode.value == "contract"


def test_replay_mode_reaches_executors_through_the_sync_facade(engine):
    from interlock import Hook
    from interlock.engine.invoke import is_replay, replay_mode

    seen = []

    async def executor(invocation):
        seen.append((invocation.replay, is_replay(), invocation.wire()["replay"]))

    engine.register(Hook(name="x", events=("before_tool_call",), executor=executor))
    engine.emit_sync(ev())
    with replay_mode():
        engine.emit_sync(ev())
    assert seen == [(False, False, False), (True, True, True)]


async def test_a_cancelled_emit_still_records_failures_and_stops_its_checks():
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    ended = []
    stopped = asyncio.Event()

    async def slow(event):
        try:
            await asyncio.sleep(5)
        finally:
            ended.append("slow")
            stopped.set()

    def guard(event):
        raise RuntimeError("guard bug")

    engine.on("before_tool_call", slow, name="slow")
    engine.on("before_tool_call", guard, name="guard")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(engine.emit(ev()), 0.2)  # the host gives up
    await asyncio.wait_for(stopped.wait(), 10)  # the cancellation reaches the check soon after
    assert [f.hook for f in sink.failures] == ["code:guard"]  # not lost
    assert ended == ["slow"]  # cancelled with the emit, not left running
    engine.close()
