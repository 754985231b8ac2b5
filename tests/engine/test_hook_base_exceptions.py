"""A hook that raises SystemExit, KeyboardInterrupt or GeneratorExit has crashed:
the failure is recorded like any crash, fails closed where the event says so,
and never ends the host (docs/engine.md, Failures)."""

from __future__ import annotations

import asyncio

import pytest

from interlock.events import BeforeToolCall, SessionStart

RAISED = [SystemExit(0), SystemExit(3), KeyboardInterrupt(), GeneratorExit()]


def call(engine):
    return engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "ls"},
                                           session_id="s"))


def _raiser(exc: BaseException):
    def hook(event):
        raise exc
    return hook


def crashed_closed(hook, name: str, lean: bool, sink, **options) -> None:
    """``hook`` as a fail-closed before_tool_call hook, on an engine with sinks or
    not (the fast path): the call is blocked as its crash, recorded as one."""
    from interlock import Engine

    engine = Engine() if lean else Engine(sinks=[sink])
    try:
        engine.on("before_tool_call", hook, name=name, on_error="closed", **options)
        out = call(engine)
    finally:
        engine.close()
    assert out.blocked
    assert "crash" in (out.reason or "")
    if not lean:
        assert [(f.hook, f.mode.value) for f in sink.failures] == [(f"code:{name}", "crash")]


@pytest.mark.parametrize("exc", RAISED, ids=repr)
@pytest.mark.parametrize("lean", [True, False], ids=["no-sinks", "sinks"])
def test_a_sync_hook_that_raises_a_base_exception_blocks_a_fail_closed_gate(exc, lean, sink):
    crashed_closed(_raiser(exc), "quitter", lean, sink)


@pytest.mark.parametrize("exc", RAISED, ids=repr)
async def test_an_async_hook_that_raises_a_base_exception_blocks(exc, engine, sink):
    async def hook(event):
        await asyncio.sleep(0)
        raise exc

    engine.on("before_tool_call", hook, name="aquitter", on_error="closed")
    out = await engine.emit(BeforeToolCall(tool_name="terminal", args={"command": "ls"},
                                           session_id="s"))
    assert out.blocked
    assert [f.mode.value for f in sink.failures] == ["crash"]


@pytest.mark.parametrize("exc", RAISED, ids=repr)
async def test_an_async_hook_that_raises_before_suspending_blocks(exc, engine, sink):
    async def hook(event):
        raise exc

    engine.on("before_tool_call", hook, name="early", on_error="closed")
    out = await engine.emit(BeforeToolCall(tool_name="terminal", args={"command": "ls"},
                                           session_id="s"))
    assert out.blocked


@pytest.mark.parametrize("exc", RAISED, ids=repr)
async def test_a_blocking_hook_that_raises_a_base_exception_in_its_thread_blocks(exc, engine):
    engine.on("before_tool_call", _raiser(exc), name="threaded", on_error="closed",
              blocking=True)
    out = await engine.emit(BeforeToolCall(tool_name="terminal", args={"command": "ls"},
                                           session_id="s"))
    assert out.blocked


def test_a_fail_open_observer_that_exits_does_not_end_the_host(engine, sink):
    engine.on("session_start", _raiser(SystemExit(1)), name="observer", on_error="open")
    out = engine.emit_sync(SessionStart(session_id="s", source="startup"))
    assert not out.blocked
    engine.close()
    assert [f.hook for f in sink.failures] == ["code:observer"]


async def test_cancellation_still_propagates(engine):
    started = asyncio.Event()

    async def slow(event):
        started.set()
        await asyncio.Event().wait()

    engine.on("before_tool_call", slow, name="slow", on_error="closed")
    task = asyncio.ensure_future(engine.emit(
        BeforeToolCall(tool_name="terminal", args={"command": "ls"}, session_id="s")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("modifies", [False, True], ids=["check", "modifier"])
@pytest.mark.parametrize("suspends", [True, False], ids=["suspended", "first-step"])
async def test_a_cancelled_error_a_hook_raises_itself_is_its_crash(modifies, suspends,
                                                                    engine, sink):
    # Nobody cancelled the hook or the dispatch: it awaited someone else's task
    # that was cancelled (or raised CancelledError). Passed on, it would end the
    # dispatch with no outcome and no failure record, as if the host had gone.
    async def hook(event):
        if not suspends:
            raise asyncio.CancelledError
        other = asyncio.ensure_future(asyncio.sleep(10))
        asyncio.get_running_loop().call_soon(other.cancel)
        await other

    engine.on("before_tool_call", hook, name="awaits", on_error="closed", modifies=modifies)
    out = await engine.emit(BeforeToolCall(tool_name="terminal", args={"command": "ls"},
                                           session_id="s"))
    assert out.blocked
    assert [(f.hook, f.mode.value) for f in sink.failures] == [("code:awaits", "crash")]


@pytest.mark.parametrize("lean", [True, False], ids=["no-sinks", "sinks"])
@pytest.mark.parametrize("modifies", [False, True], ids=["check", "modifier"])
def test_a_sync_hook_whose_own_event_loop_was_cancelled_has_crashed(lean, modifies, sink):
    # A sync hook that runs a coroutine of its own with asyncio.run(), in which
    # a task was cancelled: the CancelledError is the hook's, never a
    # cancellation of the dispatch (sync code is not cancelled by asyncio).
    def hook(event):
        async def inner():
            other = asyncio.ensure_future(asyncio.sleep(10))
            asyncio.get_running_loop().call_soon(other.cancel)
            await other
        asyncio.run(inner())

    crashed_closed(hook, "runs", lean, sink, modifies=modifies)
