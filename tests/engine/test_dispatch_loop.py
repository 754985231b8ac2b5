"""The one dispatch loop: what the sync and async drivers must agree on."""

from __future__ import annotations

import asyncio

from interlock import Engine, block
from interlock.events import BeforeToolCall, SessionEnd
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


def test_field_matched_plans_are_cached_by_which_hooks_match_not_mixed_up() -> None:
    engine = Engine()
    engine.on("before_tool_call", lambda e: block("prod"), name="prod",
              matcher={"session_id": "prod-*"})
    engine.on("before_tool_call", lambda e: None, name="any", matcher={"session_id": "*-1"})
    for _ in range(3):  # the second and third rounds come from the cache
        prod = engine.emit_sync(BeforeToolCall(tool_name="t", session_id="prod-1"))
        dev = engine.emit_sync(BeforeToolCall(tool_name="t", session_id="dev-1"))
        other = engine.emit_sync(BeforeToolCall(tool_name="t", session_id="dev-2"))
        assert prod.blocked
        assert [r.hook for r in prod.hooks] == ["code:prod"]  # blocked before "any" ran
        assert not dev.blocked
        assert [r.hook for r in dev.hooks] == ["code:any"]
        assert not other.hooks


def test_registering_many_hooks_keeps_their_order() -> None:
    engine = Engine()
    for i in range(50):
        engine.on("before_tool_call", lambda e: None, name=f"h{i}", priority=-(i % 3))
    names = [h.name for h in engine.hooks]
    expected = sorted((f"h{i}" for i in range(50)), key=lambda n: (-(int(n[1:]) % 3), int(n[1:])))
    assert names == expected
    assert engine.revision == 50


def test_field_matched_plans_follow_the_text_the_matcher_reads() -> None:
    engine = Engine()
    engine.on("before_tool_call", lambda e: block("nested"), name="nested",
              matcher={"depth": "1"})
    for _ in range(2):  # the second round comes from the cache
        assert engine.emit_sync(BeforeToolCall(tool_name="t", depth=1)).blocked
        # Equal to 1 in Python, but the matcher reads the text "True".
        assert not engine.emit_sync(BeforeToolCall(tool_name="t", depth=True)).blocked
        assert not engine.emit_sync(BeforeToolCall(tool_name="t", depth=2)).blocked
