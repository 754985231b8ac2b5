"""What readers of an outcome see: its per-hook records and contexts are made
when first read (docs/engine.md, Phases of a gate event, Merge), so reading
must not change what another reader, or an equality test, sees."""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any

import pytest

from interlock import Engine, block, context, modify
from interlock.engine.outcome import Outcome
from interlock.events import BeforeToolCall

EXPECTED = [("code:c", "look")]


def _engine(**options: Any) -> Engine:
    engine = Engine(**options)
    engine.on("before_tool_call", lambda ev: context("look"), name="c")
    engine.on("before_tool_call", lambda ev: block("no"), name="b")
    return engine


def _event() -> BeforeToolCall:
    return BeforeToolCall(tool_name="terminal", args={"command": "ls"}, session_id="s1")


def _paused_in_contexts(read: Any, paused: threading.Event, go: threading.Event,
                        out: list[Any]) -> threading.Thread:
    """A thread that runs ``read()`` and stops inside ``Outcome.contexts`` after its
    first statement, until ``go`` is set."""
    code = Outcome.contexts.fget.__code__  # type: ignore[attr-defined]
    lines: list[int] = []

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            lines.append(frame.f_lineno)
            if len(lines) == 2:  # the first statement ran, the second is next
                paused.set()
                assert go.wait(10)
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if event == "call" and frame.f_code is code else None

    def run() -> None:
        sys.settrace(tracer)
        try:
            out.append(read())
        finally:
            sys.settrace(None)

    return threading.Thread(target=run)


@pytest.mark.parametrize("first", ["contexts", "raw"])
@pytest.mark.parametrize("timed", [False, True])
def test_two_readers_at_once_both_see_the_contexts(first: str, timed: bool) -> None:
    # The audit sink's writer thread reads an outcome while the host reads it too.
    outcome = _engine(timed=timed).emit_sync(_event())
    paused, go, out = threading.Event(), threading.Event(), []
    reader = _paused_in_contexts(lambda: list(getattr(outcome, first)), paused, go, out)
    reader.start()
    try:
        assert paused.wait(10)
        assert [r.status.value for r in outcome.raw] == ["applied", "applied"]
    finally:
        go.set()
        reader.join(10)
    if first == "contexts":
        assert out == [EXPECTED]
    assert list(outcome.contexts) == EXPECTED
    assert outcome.context_text()


def test_equal_outcomes_stay_equal_whatever_was_read() -> None:
    engine = _engine()  # untimed: timed outcomes differ in their latencies
    one, two = engine.emit_sync(_event()), engine.emit_sync(_event())
    assert one == two
    assert one.raw
    assert one == two
    assert two.contexts
    assert one == two


def test_outcomes_that_differ_are_not_equal() -> None:
    engine = Engine()
    engine.on("before_tool_call", lambda ev: context("look"), name="c")
    one = engine.emit_sync(_event())
    engine.on("before_tool_call", lambda ev: context("else"), name="d")
    two = engine.emit_sync(_event())
    assert one != two


@pytest.mark.parametrize("timed", [False, True])
def test_changes_are_the_restored_payload_after_a_check_mutates_it(timed: bool) -> None:
    # A modifier's rewrite, then a fail-open check that mutates it in place: the
    # payload is restored (docs/engine.md, Immutability), and so are the changes
    # a host applies (outcome.changes), the audit record's among them.
    engine = Engine(timed=timed)
    engine.on("before_tool_call", lambda ev: modify(args={"command": "ls", "flags": ["-l"]}),
              name="m", modifies=True)

    def meddle(ev: BeforeToolCall) -> None:
        ev.args["flags"].append("-R")

    engine.on("before_tool_call", meddle, name="c", on_error="open")
    outcome = engine.emit_sync(_event())
    assert outcome.final().args == {"command": "ls", "flags": ["-l"]}
    assert outcome.changes == {"args": {"command": "ls", "flags": ["-l"]}}
    assert outcome.to_record().changes == {"args": {"command": "ls", "flags": ["-l"]}}
