"""The one dispatch loop: what the sync and async drivers must agree on."""

from __future__ import annotations

import asyncio

from interlock import Engine, block
from interlock.events import SessionEnd
from interlock.testing import RecordingSink


def test_a_shadow_hook_on_an_observe_event_runs_on_the_sync_facade() -> None:
    seen: list[str] = []
    engine = Engine()
    engine.on("session_end", lambda e: seen.append("check"), name="check")
    engine.on("session_end", lambda e: seen.append("shadow"), name="shadow", shadow=True)
    out = engine.emit_sync(SessionEnd(session_id="s"))
    assert seen == ["check", "shadow"]
    assert [r.hook for r in out.hooks] == ["code:check", "code:shadow"]


def test_a_shadow_hook_on_an_observe_event_runs_on_the_async_api() -> None:
    seen: list[str] = []
    engine = Engine()
    engine.on("session_end", lambda e: seen.append("check"), name="check")
    engine.on("session_end", lambda e: seen.append("shadow"), name="shadow", shadow=True)
    out = asyncio.run(engine.emit(SessionEnd(session_id="s")))
    assert seen == ["check", "shadow"]
    assert [r.hook for r in out.hooks] == ["code:check", "code:shadow"]


def test_a_failing_shadow_on_an_observe_event_is_recorded() -> None:
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    engine.on("session_end", lambda e: 1 / 0, name="broken", shadow=True)
    out = engine.emit_sync(SessionEnd(session_id="s"))
    assert [f.hook for f in sink.failures] == ["code:broken"]
    assert out.verdict.value == "none"
    assert block  # the import is used by later tests
