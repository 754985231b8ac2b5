"""The rules every adapter shares (interlock.adapters._core): no decision dropped,
stop ends the run, and `import interlock` stays free of every framework."""

from __future__ import annotations

import subprocess
import sys

import pytest

from interlock import Engine, ask, block, context, modify, respond, stop
from interlock.adapters import DecisionNotSupported, Policy, PolicyStopped

ENGINES: list[Engine] = []


@pytest.fixture(autouse=True)
def _close_engines():
    yield
    while ENGINES:
        ENGINES.pop().close(timeout=2)


def policy(event: str, decision, **options) -> Policy:
    engine = Engine()
    ENGINES.append(engine)
    engine.on(event, lambda e: decision, name="p", **options)
    return Policy("testing", engine=engine)


async def test_block_gives_the_structured_error_for_the_model():
    gate = await policy("before_tool_call", block("no", hint="try x")).before_tool("t", {})
    assert gate.action == "block"
    assert gate.value == {"error": "tool call blocked", "tool_name": "t", "reason": "no",
                          "hint": "try x", "hook": "code:p"}


async def test_modify_respond_ask_and_context_reach_the_gate():
    p = policy("before_tool_call", modify(args={"a": 2}, context="note"), modifies=True)
    gate = await p.before_tool("t", {"a": 1})
    assert (gate.action, gate.args) == ("run", {"a": 2})
    assert "note" in gate.context
    assert (await policy("before_tool_call", respond(7)).before_tool("t", {})).value == 7
    assert (await policy("before_tool_call", ask("why")).before_tool("t", {})).action == "ask"


async def test_ask_where_nobody_can_answer_is_not_dropped():
    with pytest.raises(DecisionNotSupported, match="'ask'"):
        await policy("before_tool_call", ask("why")).before_tool("t", {}, can_ask=False)


def test_stop_raises_policy_stopped_with_the_reason():
    with pytest.raises(PolicyStopped, match="enough") as err:
        policy("before_tool_call", stop("enough")).before_tool_sync("t", {})
    assert err.value.hook == "code:p"


@pytest.mark.parametrize("decision", [context("x"), block("b")])
def test_a_decision_the_point_cannot_apply_raises(decision):
    p = policy("before_llm_call", decision)
    outcome = p.emit_sync("before_llm_call")
    with pytest.raises(DecisionNotSupported, match="testing cannot apply"):
        p.apply(outcome, can=())


async def test_after_tool_modify_and_block():
    p = policy("after_tool_call", modify(result="clean"), modifies=True)
    assert (await p.after_tool("t", {}, "dirty")).result == "clean"
    blocked = await policy("after_tool_call", block("secret")).after_tool("t", {}, "x")
    assert blocked.result["error"] == "tool result blocked"


def test_importing_interlock_and_its_adapters_package_imports_no_framework():
    code = ("import sys, interlock, interlock.adapters; "
            "bad = [m for m in ('agents', 'langchain', 'langgraph', 'pydantic_ai', "
            "'claude_agent_sdk') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def ruled(decision, *rules) -> Policy:
    from interlock.agent.permissions import rule

    engine = Engine()
    ENGINES.append(engine)
    engine.on("before_tool_call", lambda e: decision, name="p")
    return Policy("testing", engine=engine, rules=[rule(*r) for r in rules])


async def test_a_deny_rule_blocks_with_no_hook_on_the_event():
    """With no hook on before_tool_call the engine's outcome is the shared
    no-hooks one, which holds no event: the rule must still see the tool's name."""
    from interlock.agent.permissions import rule

    engine = Engine()
    ENGINES.append(engine)
    policy = Policy("testing", engine=engine, rules=[rule("t", "*rm*", "deny")])
    assert (await policy.before_tool("t", {"c": "rm x"})).action == "block"
    assert policy.before_tool_sync("t", {"c": "rm x"}).action == "block"
    assert policy.before_tool_sync("t", {"c": "ls"}).action == "run"


async def test_a_rule_s_decision_is_recorded_as_a_dispatch_of_its_own():
    """The audit log and metrics see what the rule decided, not only the hooks'
    "none" (docs/agent.md, Permissions). Before: nothing recorded the deny."""
    from interlock.agent.permissions import rule
    from interlock.testing import RecordingSink

    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    ENGINES.append(engine)
    engine.on("before_tool_call", lambda e: None, name="quiet")
    policy = Policy("testing", engine=engine,
                    rules=[rule("t", "*rm*", "deny"), rule("t", "*push*", "ask")])
    assert (await policy.before_tool("t", {"c": "rm x"}, "c1")).action == "block"
    assert policy.before_tool_sync("t", {"c": "git push"}, "c2", can_ask=False).action == "block"
    assert policy.before_tool_sync("t", {"c": "ls"}, "c3").action == "run"
    ruled = [o for o in sink.outcomes if o.hook is not None and o.hook.name == "permissions"]
    assert [(o.verdict.value, o.reason, o.event.tool_call_id, o.event.args)  # type: ignore[union-attr]
            for o in ruled] == [
        ("block", "a permission rule denies it", "c1", {"c": "rm x"}),
        ("block", "a permission rule asks for approval, and testing offers no way to ask a "
                  "person here", "c2", {"c": "git push"})]
    # One row each, by the rules' own name, as the audit log writes them.
    assert [v for v in sink.verdicts() if v[1] == "code:permissions"] == [
        ("before_tool_call", "code:permissions", "block"),
        ("before_tool_call", "code:permissions", "block")]
    gate = await policy.before_tool("t", {"c": "git push"}, "c4")  # where a person can answer
    assert (gate.action, sink.outcomes[-1].verdict.value) == ("ask", "ask")


async def test_a_deny_rule_blocks_even_over_a_hooks_approve():
    from interlock import approve

    gate = await ruled(approve("fine"), ("t", "*rm*", "deny")).before_tool("t", {"c": "rm x"})
    assert gate.action == "block"
    assert gate.value["hook"] == "permissions"
    assert gate.value["reason"] == "a permission rule denies it"
    gate = await ruled(None, ("t", "*rm*", "deny")).before_tool("t", {"c": "ls"})
    assert gate.action == "run"


async def test_a_deny_rule_blocks_a_call_no_hook_said_anything_on():
    """The quiet outcome's short way out still reads the rules, on both paths."""
    policy = ruled(None, ("t", "*rm*", "deny"))
    assert (await policy.before_tool("t", {"c": "rm x"})).action == "block"
    assert policy.before_tool_sync("t", {"c": "rm x"}).action == "block"
    assert policy.before_tool_sync("t", {"c": "ls"}).action == "run"


async def test_an_ask_rule_asks_where_the_framework_can_and_blocks_where_it_cannot():
    from interlock import approve

    assert (await ruled(None, ("t", "*", "ask")).before_tool("t", {})).action == "ask"
    gate = await ruled(None, ("t", "*", "ask")).before_tool("t", {}, can_ask=False)
    assert gate.action == "block"
    assert "offers no way to ask" in gate.value["reason"]
    # A hook's approve answers an ask rule, as in the reference agent.
    assert (await ruled(approve("ok"), ("t", "*", "ask")).before_tool("t", {})).action == "run"
    assert (await ruled(None, ("t", "*", "allow")).before_tool("t", {})).action == "run"


def test_listens_is_false_for_an_event_no_hook_is_on_before_any_emit():
    """An adapter skips building costly fields, and refusing what no hook could
    read, for an event no hook is on: also before the engine's first emit and
    after a hook is added or removed."""
    engine = Engine()
    adapter = Policy("test", engine=engine)
    assert not adapter.listens("after_tool_call")
    handle = engine.on("after_tool_call", lambda e: None)
    assert adapter.listens("after_tool_call")
    assert not adapter.listens("before_llm_call")
    handle.unregister()
    assert not adapter.listens("after_tool_call")
