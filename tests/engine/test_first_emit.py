"""What the engine makes at its first use rather than at import (docs/engine.md,
Timers): made whole before anyone else can read it, whichever thread comes first."""

from __future__ import annotations

import asyncio
import sys
import threading
from types import FrameType
from typing import Any

import pytest

from interlock import Engine
from interlock.engine import dispatch
from interlock.events import BeforeToolCall
from interlock.testing import make


def test_a_first_emit_in_another_thread_does_not_hand_out_a_half_made_table(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing has emitted yet in this process: the no-hook outcomes are not made.
    monkeypatch.setattr(dispatch, "_SETTLED", None)
    build = dispatch._settled_outcomes
    code = dispatch._settled_outcomes.__code__
    made = [c for c in code.co_consts if hasattr(c, "co_code")]
    watched = {code, *made}
    paused, go = threading.Event(), threading.Event()
    steps: list[int] = []
    half = len(dispatch._PASSED) // 2

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            steps.append(frame.f_lineno)
            if len(steps) == half and not paused.is_set():  # some made, not all
                paused.set()
                assert go.wait(10)
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code in watched else None

    def first() -> None:
        sys.settrace(tracer)
        try:
            build()
        finally:
            sys.settrace(None)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert paused.wait(10)
        engine = Engine()
        last = make(list(dispatch._PASSED)[-1].spec.name)  # the last one made
        for event in (last, BeforeToolCall(tool_name="t", session_id="s")):
            outcome = asyncio.run(engine.emit(event))
            assert outcome.verdict.value == "none"
    finally:
        go.set()
        thread.join(10)
    assert len(dispatch._settled_outcomes()) == len(dispatch._PASSED)
