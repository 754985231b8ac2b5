"""Decisions and how they merge (docs/engine.md)."""

from __future__ import annotations

import pytest

from interlock import Verdict, approve, ask, block, context, modify, respond, skip, stop
from interlock.events import BeforeToolCall, MessageReceived
from interlock.testing import fire


def tool(engine, command="ls", **kw):
    return engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": command},
                                           session_id="s1", **kw))


@pytest.mark.parametrize(
    ("answers", "expected", "winner"),
    [
        ([None, None], Verdict.NONE, None),
        ([approve("a"), ask("b")], Verdict.ASK, 1),
        ([ask("b"), approve("a")], Verdict.ASK, 0),
        ([approve("a"), respond({"r": 1})], Verdict.RESPOND, 1),
        ([respond(1), ask("x"), approve("y")], Verdict.RESPOND, 0),
        ([approve("a"), block("b")], Verdict.BLOCK, 1),
        ([approve("a"), stop("s")], Verdict.STOP, 1),
        ([approve("first"), approve("second")], Verdict.APPROVE, 0),  # tie: earliest
        ([ask("first"), ask("second")], Verdict.ASK, 0),
    ],
)
def test_precedence_and_ties(engine, answers, expected, winner):
    for i, answer in enumerate(answers):
        engine.on("before_tool_call", lambda ev, a=answer: a, name=f"h{i}")
    out = tool(engine)
    assert out.verdict is expected
    if winner is None:
        assert out.hook is None
    else:
        assert out.hook.name == f"h{winner}"
        assert out.reason == answers[winner].reason


def test_losing_decisions_are_audited_as_superseded(engine, sink):
    engine.on("before_tool_call", lambda ev: approve("ok"), name="a")
    engine.on("before_tool_call", lambda ev: ask("hmm"), name="b")
    engine.on("before_tool_call", lambda ev: None, name="c")
    out = tool(engine)
    statuses = {r.hook: r.status.value for r in out.hooks}
    assert statuses == {"code:a": "superseded", "code:b": "applied", "code:c": "none"}
    assert sink.outcomes[-1] is out


def test_block_ends_the_event_later_hooks_do_not_run(engine):
    ran = []
    engine.on("before_tool_call", lambda ev: ran.append("a") or block("no"), name="a")
    engine.on("before_tool_call", lambda ev: ran.append("b") or stop("halt"), name="b")
    out = tool(engine)
    assert out.verdict is Verdict.BLOCK
    assert ran == ["a"]


def test_stop_before_block_wins(engine):
    engine.on("before_tool_call", lambda ev: stop("halt"), name="a")
    engine.on("before_tool_call", lambda ev: block("no"), name="b")
    assert tool(engine).verdict is Verdict.STOP


def test_later_hook_can_still_block_after_approve(engine):
    # more hooks means more coverage, never more bypass (docs/engine.md, Phases)
    engine.on("before_tool_call", lambda ev: approve("fine"), name="a", priority=-5)
    engine.on("before_tool_call", lambda ev: block("not fine"), name="b")
    out = tool(engine)
    assert out.verdict is Verdict.BLOCK
    assert out.hook.name == "b"


def test_skip_ends_message_received(engine):
    ran = []
    engine.on("message_received", lambda ev: skip("spam"), name="a")
    engine.on("message_received", lambda ev: ran.append(1) or block("x"), name="b")
    out = engine.emit_sync(MessageReceived(text="buy now", sender_id="u1"))
    assert out.verdict is Verdict.SKIP
    assert out.ends
    assert ran == []


def test_contexts_kept_in_order_across_phases(engine):
    engine.on("before_tool_call", lambda ev: context("check-2"), name="c2", priority=5)
    engine.on("before_tool_call", lambda ev: context("check-1"), name="c1", priority=1)
    engine.on("before_tool_call", lambda ev: modify(args=ev.args, context="mod"),
              name="m", modifies=True, priority=10)
    out = tool(engine)
    assert [t for _, t in out.contexts] == ["mod", "check-1", "check-2"]
    text = out.context_text()
    assert text.index("mod") < text.index("check-1") < text.index("check-2")
    assert '<hook-context hook="code:c1">' in text


def test_context_is_capped_and_wrapped(engine):
    engine.on("before_tool_call", lambda ev: context("x" * 20_000), name="big")
    text = tool(engine).context_text(cap=100)
    assert "truncated 19900 characters" in text
    assert text.startswith('<hook-context hook="code:big">')


def test_contexts_after_the_ending_hook_are_dropped(engine):
    engine.on("before_tool_call", lambda ev: block("no", context="why"), name="a")
    engine.on("before_tool_call", lambda ev: context("never"), name="b")
    out = tool(engine)
    assert [t for _, t in out.contexts] == ["why"]


def test_tool_block_error_shape(engine):
    engine.on("before_tool_call", lambda ev: block("dangerous", hint="use ls"), name="guard")
    out = tool(engine, "rm -rf /")
    assert out.tool_block_error() == {
        "error": "tool call blocked",
        "tool_name": "terminal",
        "reason": "dangerous",
        "hint": "use ls",
        "hook": "code:guard",
    }


def test_respond_value_is_carried(engine):
    engine.on("before_tool_call", lambda ev: respond({"stdout": "cached"}), name="cache")
    out = tool(engine)
    assert out.verdict is Verdict.RESPOND
    assert out.value == {"stdout": "cached"}


def test_outcome_json_shape(engine):
    engine.on("before_tool_call", lambda ev: modify(args={"command": "ls -l"}),
              name="m", modifies=True)
    engine.on("before_tool_call", lambda ev: approve("ok", context="c"), name="a")
    data = tool(engine).to_dict()
    assert data["event"] == "before_tool_call"
    assert data["decision"] == "approve"
    assert data["changes"] == {"args": {"command": "ls -l"}}
    assert data["context"] == [{"hook": "code:a", "text": "c"}]
    assert [h["hook"] for h in data["hooks"]] == ["code:m", "code:a"]
    assert set(data) >= {"reason", "hint", "hook", "value", "session_id", "revision"}


def test_outcome_with_only_changes_reports_modify(engine):
    engine.on("before_tool_call", lambda ev: modify(args={"command": "ls -l"}),
              name="m", modifies=True)
    assert tool(engine).to_dict()["decision"] == "modify"


def test_fire_helper_builds_from_fields(engine):
    engine.on("user_input", lambda ev: block("no") if ev.text == "bad" else None)
    assert fire(engine, "user_input", text="bad").blocked
    assert not fire(engine, "user_input", text="good").blocked
