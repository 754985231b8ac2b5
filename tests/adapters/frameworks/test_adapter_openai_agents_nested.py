"""What an OpenAI Agents SDK run reaches besides its first agent's tools: an agent used
as a tool (``Agent.as_tool``), whose nested run fires no hooks of its own, and a
handoff's ``on_handoff`` callback (docs/adapters.md, OpenAI Agents SDK). Each runs
through the SDK's own Runner with its ScriptedModel."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agents")

from adapter_project import session
from agents import Agent, Runner, function_tool, handoff, set_tracing_disabled
from agents.testing.model import ScriptedModel, assistant_message, function_call
from pydantic import BaseModel

from interlock import ConfigError, Engine, block
from interlock.adapters import Policy, PolicyStopped
from interlock.adapters.openai_agents import Interlock
from interlock.agent.permissions import rule

set_tracing_disabled(True)

RAN: list[Any] = []


@function_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(path)
    return "deleted"


@pytest.fixture
def engine() -> Iterator[Engine]:
    RAN.clear()
    engine = Engine()
    yield engine
    engine.close(timeout=2)


def _nested(tools: list[Any]) -> Agent[Any]:
    return Agent(name="inner", model=ScriptedModel([
        [function_call("delete_file", {"path": "/important"}, call_id="i1")],
        [assistant_message("done")]]), tools=tools)


async def test_an_agent_used_as_a_tool_with_ungoverned_tools_is_refused(engine):
    il = Interlock(policy=Policy("openai-agents", engine=engine, session_id=session()))
    outer = Agent(name="outer", model=ScriptedModel([
        [function_call("helper", {"input": "clean up"}, call_id="o1")],
        [assistant_message("ok")]]),
        tools=il.tools([_nested([delete_file]).as_tool("helper", "a helper")]))
    with pytest.raises(ConfigError, match="'inner' has the tool 'delete_file'"):
        await Runner.run(outer, "go", hooks=il)
    assert RAN == []


async def test_an_agent_used_as_a_tool_with_mcp_servers_is_refused(engine):
    il = Interlock(policy=Policy("openai-agents", engine=engine, session_id=session()))
    inner = _nested([])
    inner.mcp_servers = [object()]  # type: ignore[list-item]
    outer = Agent(name="outer", model=ScriptedModel([[assistant_message("ok")]]),
                  tools=il.tools([inner.as_tool("helper", "a helper")]))
    with pytest.raises(ConfigError, match="'inner' has MCP servers"):
        await Runner.run(outer, "go", hooks=il)


async def test_an_agent_used_as_a_tool_runs_its_governed_tools_through_the_policy(engine):
    seen: list[str] = []
    engine.on("before_tool_call", lambda e: seen.append(e.tool_name), name="watch")
    policy = Policy("openai-agents", engine=engine, session_id=session(),
                    rules=[rule("delete_file", "*", "deny")])
    il = Interlock(policy=policy)
    outer = Agent(name="outer", model=ScriptedModel([
        [function_call("helper", {"input": "clean up"}, call_id="o1")],
        [assistant_message("ok")]]),
        tools=il.tools([_nested(il.tools([delete_file])).as_tool("helper", "a helper")]))
    result = await Runner.run(outer, "go", hooks=il)
    assert result.final_output == "ok"
    assert RAN == []
    assert seen == ["helper", "delete_file"]


class Refund(BaseModel):
    account: str
    amount: int


async def _issue_refund(ctx: Any, data: Refund) -> None:
    RAN.append((data.account, data.amount))


def _triage(h: Any) -> Agent[Any]:
    return Agent(name="triage", model=ScriptedModel([
        [function_call(h.tool_name, {"account": "acct-9", "amount": 10000}, call_id="h1")]]),
        handoffs=[h])


async def test_a_handoff_object_not_given_through_interlock_is_refused(engine):
    il = Interlock(policy=Policy("openai-agents", engine=engine, session_id=session()))
    billing = Agent(name="billing", model=ScriptedModel([[assistant_message("refunded")]]))
    triage = _triage(handoff(billing, on_handoff=_issue_refund, input_type=Refund))
    with pytest.raises(ConfigError, match="handoff 'transfer_to_billing'"):
        await Runner.run(triage, "refund me", hooks=il)
    assert RAN == []


async def test_a_blocked_handoff_runs_no_on_handoff_callback(engine):
    asked: list[str] = []
    engine.on("subagent_start", lambda e: (asked.append(e.child_session_id),
                                           block("no handoffs"))[1], name="no-handoff")
    il = Interlock(policy=Policy("openai-agents", engine=engine, session_id=session()))
    billing = Agent(name="billing", model=ScriptedModel([[assistant_message("refunded")]]))
    triage = _triage(il.handoffs([handoff(billing, on_handoff=_issue_refund,
                                          input_type=Refund)])[0])
    with pytest.raises(PolicyStopped, match="no handoffs"):
        await Runner.run(triage, "refund me", hooks=il)
    assert RAN == []
    assert asked == ["billing"]


async def test_an_allowed_handoff_is_asked_once_then_its_callback_runs(engine):
    asked: list[str] = []
    engine.on("subagent_start", lambda e: asked.append(e.child_session_id), name="watch")
    il = Interlock(policy=Policy("openai-agents", engine=engine, session_id=session()))
    billing = Agent(name="billing", model=ScriptedModel([[assistant_message("refunded")]]))
    triage = _triage(il.handoffs([handoff(billing, on_handoff=_issue_refund,
                                          input_type=Refund)])[0])
    result = await Runner.run(triage, "refund me", hooks=il)
    assert result.final_output == "refunded"
    assert RAN == [("acct-9", 10000)]
    assert asked == ["billing"]


def _asking_outer(il: Interlock, hooks: Any) -> Agent[Any]:
    inner = Agent(name="inner", model=ScriptedModel([[assistant_message("the key is sk-1")]]))
    options = {"hooks": hooks} if hooks is not None else {}
    return Agent(name="outer", model=ScriptedModel([
        [function_call("helper", {"input": "find the key"}, call_id="o1")],
        [assistant_message("ok")]]), tools=il.tools([inner.as_tool("helper", "a helper",
                                                                     **options)]))


async def test_an_agent_used_as_a_tool_without_the_hooks_is_refused_while_a_model_gate_listens(
        engine):
    # The nested run of an agent used as a tool fires run hooks only when as_tool was
    # given them: a before_llm_call gate would silently not judge its model calls.
    models: list[int] = []
    engine.on("before_llm_call", lambda e: models.append(len(e.messages)), name="llm-gate")
    il = Interlock(policy=Policy("openai-agents", engine=engine, session_id=session()))
    with pytest.raises(ConfigError, match=r"'helper'.*hooks=interlock"):
        await Runner.run(_asking_outer(il, None), "go", hooks=il)
    assert models == []
    models.clear()
    result = await Runner.run(_asking_outer(il, il), "go", hooks=il)
    assert result.final_output == "ok"
    assert len(models) == 3, "the outer agent's two model calls and the inner one's"
