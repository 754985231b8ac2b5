"""``Engine.emit`` behaves as a coroutine on every path.

With no hooks it hands back a finished awaitable (``Settled``) rather than a
new coroutine; every asyncio entry point a host may use must still take it,
and an event with hooks must still run them only when awaited.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

import pytest

from interlock import Engine, block
from interlock.engine.decisions import Verdict
from interlock.events import BeforeToolCall, UserInput


def _event(name: str = "terminal") -> BeforeToolCall:
    return BeforeToolCall(tool_name=name, args={"command": "ls"}, session_id="s1")


async def _other(value: int) -> int:
    await asyncio.sleep(0)
    return value


async def test_no_hook_emit_is_a_reusable_finished_coroutine(eng: Engine) -> None:
    ev = _event()
    pending = eng.emit(ev)
    assert isinstance(pending, Coroutine)
    assert asyncio.iscoroutine(pending)
    assert not asyncio.isfuture(pending)  # never bound to a loop
    first = await pending
    assert await pending is first  # may be awaited again
    assert first.verdict is Verdict.NONE
    assert first.event is None
    assert first.final(ev) is ev


async def test_every_asyncio_entry_point_takes_a_no_hook_emit(eng: Engine) -> None:
    ev = _event()
    task = asyncio.create_task(eng.emit(ev))
    assert (await task).verdict is Verdict.NONE
    outcome, other = await asyncio.gather(eng.emit(ev), _other(7))
    assert outcome.verdict is Verdict.NONE
    assert other == 7
    assert (await asyncio.wait_for(eng.emit(ev), 1)).verdict is Verdict.NONE
    assert (await asyncio.shield(eng.emit(ev))).verdict is Verdict.NONE
    async with asyncio.TaskGroup() as group:
        grouped = group.create_task(eng.emit(ev))
    assert grouped.result().verdict is Verdict.NONE
    done, _ = await asyncio.wait([asyncio.ensure_future(eng.emit(ev))])
    assert done.pop().result().verdict is Verdict.NONE


def test_no_hook_emit_runs_on_any_loop_and_thread(eng: Engine) -> None:
    ev = _event()
    assert asyncio.run(eng.emit(ev)).verdict is Verdict.NONE
    loop = asyncio.new_event_loop()  # never made the current loop
    try:
        assert loop.run_until_complete(eng.emit(ev)).verdict is Verdict.NONE
    finally:
        loop.close()
    results: list[Verdict] = []

    def in_thread() -> None:
        async def go() -> Verdict:
            return (await eng.emit(ev)).verdict
        results.append(asyncio.run(go()))

    threads = [threading.Thread(target=in_thread) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [Verdict.NONE] * 4
    other = asyncio.new_event_loop()  # handed to a loop running in another thread
    runner = threading.Thread(target=other.run_forever)
    runner.start()
    try:
        done = asyncio.run_coroutine_threadsafe(eng.emit(ev), other)
        assert done.result(5).verdict is Verdict.NONE
    finally:
        other.call_soon_threadsafe(other.stop)
        runner.join()
        other.close()


async def test_cancel_and_close_behave_as_for_an_unstarted_coroutine(eng: Engine) -> None:
    ev = _event()
    task = asyncio.create_task(eng.emit(ev))
    task.cancel()  # before it ever ran
    with pytest.raises(asyncio.CancelledError):
        await task
    pending = eng.emit(ev)
    pending.close()
    with pytest.raises(ValueError, match="boom"):
        pending.throw(ValueError("boom"))
    with pytest.raises(KeyError):
        pending.throw(KeyError)
    with pytest.raises(StopIteration) as stop:
        pending.send(None)
    assert stop.value.value.verdict is Verdict.NONE


async def test_hooked_emit_runs_hooks_only_when_awaited(eng: Engine) -> None:
    calls: list[str] = []

    def deny(event: BeforeToolCall) -> Any:
        calls.append(event.tool_name)
        return block("no")

    handle = eng.on("before_tool_call", deny)
    pending = eng.emit(_event("terminal"))
    assert calls == []  # nothing ran yet: a real coroutine
    assert (await pending).blocked
    assert calls == ["terminal"]
    # Another event type without hooks still takes the finished path.
    assert (await eng.emit(UserInput(text="hi"))).verdict is Verdict.NONE
    handle.unregister()
    assert not (await eng.emit(_event())).blocked
    assert calls == ["terminal"]


async def test_a_hook_registered_after_a_no_hook_emit_is_seen(eng: Engine) -> None:
    ev = _event()
    assert not (await eng.emit(ev)).blocked
    eng.on("before_tool_call", lambda event: block("now there is a hook"))
    assert (await eng.emit(ev)).blocked
    assert eng.emit_sync(ev).blocked


@pytest.mark.parametrize("method", ["emit", "emit_sync"])
def test_emitting_something_that_is_not_an_event_is_a_clear_error(
        eng: Engine, method: str) -> None:
    with pytest.raises(TypeError, match=r"Engine\.emit.*interlock\.events.*not dict"):
        getattr(eng, method)({"tool_name": "terminal"})


class _SwapDuringRead(dict):
    """The no-hook table as it was when read, with hooks removed in between."""

    def __init__(self, engine: Engine, table: dict[Any, Any]) -> None:
        super().__init__(table)
        self.engine = engine

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        self.engine.replace_hooks([])  # another thread, right between two reads
        return value


async def test_hooks_removed_between_two_reads_mean_no_hooks(eng: Engine) -> None:
    eng.on("before_tool_call", lambda event: block("old revision"))
    assert (await eng.emit(_event())).blocked  # the first emit makes emit()'s table
    eng._settled = _SwapDuringRead(eng, eng._settled)  # type: ignore[assignment]
    outcome = await eng.emit(_event())
    assert outcome.verdict is Verdict.NONE
    assert not eng.hooks


def test_a_sync_emit_runs_the_hooks_of_the_one_entry_it_read(eng: Engine) -> None:
    # emit_sync reads its event's entry once: hooks removed right after that
    # read are still the ones in force for this call, as for emit().
    eng.on("before_tool_call", lambda event: block("old revision"))
    eng._table = _SwapDuringRead(eng, eng._table)  # type: ignore[assignment]
    assert eng.emit_sync(_event()).reason == "old revision"
    assert not eng.hooks
    assert not eng.emit_sync(_event()).blocked


async def test_the_hooks_in_force_when_emit_is_called_are_the_ones_that_run(eng: Engine) -> None:
    ran: list[str] = []

    def guard(event: BeforeToolCall) -> Any:
        ran.append("guard")
        return block("guarded")

    handle = eng.on("before_tool_call", guard)
    pending = eng.emit(_event())
    handle.unregister()  # after the call, before the await
    assert (await pending).blocked
    assert ran == ["guard"]
    # And the other way round: a hook added after the call is for later events.
    pending = eng.emit(_event())
    eng.on("before_tool_call", guard)
    assert not (await pending).blocked
    assert (await eng.emit(_event())).blocked
    task = asyncio.create_task(eng.emit(_event()))
    eng.replace_hooks([])
    assert (await task).blocked


async def test_the_shared_no_hook_outcome_cannot_be_changed_by_a_caller(eng: Engine) -> None:
    other = Engine()
    try:
        ev = _event()
        shared = eng.emit_sync(ev)
        with pytest.raises(AttributeError):
            shared.verdict = Verdict.BLOCK  # type: ignore[misc]
        with pytest.raises(AttributeError):
            (await eng.emit(ev)).reason = "changed"  # type: ignore[misc]
        assert other.emit_sync(ev).verdict is Verdict.NONE
        assert (await other.emit(ev)).reason is None
    finally:
        other.close()


class _BrokenSink:
    def dispatched(self, outcome: Any) -> None:
        raise OSError("disk full")

    def failed(self, record: Any) -> None:
        raise OSError("disk full")


@pytest.mark.parametrize("hooked", ["lean", "general", "async"])
async def test_a_sink_that_raises_neither_reaches_the_host_nor_starves_other_sinks(
        hooked: str, caplog: pytest.LogCaptureFixture) -> None:
    from interlock.testing import RecordingSink

    good = RecordingSink()
    engine = Engine(sinks=[_BrokenSink(), good])
    try:
        engine.on("before_tool_call", lambda ev: 1 / 0, name="broken")  # a failure record
        if hooked == "general":
            engine.on("before_tool_call", lambda ev: None, name="watcher", shadow=True)
        if hooked == "async":
            async def deny(event: BeforeToolCall) -> Any:
                await asyncio.sleep(0)
                return block("no")
            engine.on("before_tool_call", deny, name="deny")
        ev = _event()
        out = await engine.emit(ev) if hooked == "async" else engine.emit_sync(ev)
        assert out.blocked  # the broken check fails closed, whatever the sinks do
        assert [o.name for o in good.outcomes] == ["before_tool_call"]
        assert [f.hook for f in good.failures] == ["code:broken"]
        assert "disk full" in caplog.text
    finally:
        engine.close()


@pytest.mark.parametrize("matcher", [None, "terminal"])
async def test_an_outcome_names_the_revision_whose_hooks_ran(eng: Engine, matcher: Any) -> None:
    eng.on("before_tool_call", lambda event: None, name="a", matcher=matcher)
    ran_at = eng.revision
    pending = eng.emit(_event())
    eng.on("before_tool_call", lambda event: block("b"), name="b")  # a new revision
    outcome = await pending
    assert [r.hook for r in outcome.hooks] == ["code:a"]
    assert outcome.revision == ran_at != eng.revision
    assert eng.emit_sync(_event()).revision == eng.revision


def test_emit_still_reads_as_an_async_api_to_tools_that_ask(eng: Engine) -> None:
    from unittest.mock import AsyncMock, MagicMock

    assert asyncio.iscoroutinefunction(eng.emit)
    assert isinstance(MagicMock(spec=Engine).emit, AsyncMock)


def test_decisions_and_outcomes_are_built_with_keywords_and_subclass_freely() -> None:
    from interlock import Decision, Outcome

    with pytest.raises(TypeError):
        Decision(Verdict.BLOCK, "no", "try --dry-run")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Outcome("before_tool_call")  # type: ignore[misc]

    class Tagged(Decision, frozen=True):  # type: ignore[misc]
        tag: str

    class Traced(Outcome):  # type: ignore[misc]
        request_id: str

    assert Tagged(verdict=Verdict.BLOCK, tag="t").tag == "t"
    assert Traced(name="before_tool_call", request_id="r").request_id == "r"
