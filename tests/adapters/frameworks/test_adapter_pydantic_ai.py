"""pydantic-ai's own agent loop, driven by its FunctionModel, under the project's policy."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from adapter_project import audit, session
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from interlock import ConfigError, block, context, modify
from interlock.adapters import DecisionNotSupported, Policy, PolicyStopped
from interlock.adapters.pydantic_ai import Interlock

RAN: list[tuple[str, dict[str, Any]]] = []


def calls(tool: str, args: dict[str, Any]) -> FunctionModel:
    """A model that calls ``tool`` once, then answers with what the tool returned."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for m in messages for p in getattr(m, "parts", [])
                    if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(returned[-1].model_response_str())])
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id="call-1")])

    return FunctionModel(model)


def agent(tool: str, args: dict[str, Any], sid: str) -> Agent[None, Any]:
    a: Agent[None, Any] = Agent(calls(tool, args), output_type=[str, DeferredToolRequests],
                                capabilities=[Interlock(policy=Policy("pydantic-ai",
                                                                      session_id=sid))])

    def make(name: str) -> None:
        def tool_fn(**kwargs: Any) -> str:
            RAN.append((name, kwargs))
            return "token=abc123" if name == "read_secret" else f"{name} ran with {kwargs}"

        tool_fn.__name__ = name
        a.tool_plain(name=name)(tool_fn)

    for name in ("delete_file", "shout", "weather", "deploy", "explode", "read_secret"):
        make(name)
    return a


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


async def test_a_blocked_call_never_runs_and_the_model_reads_the_reason(project):
    sid = session()
    out = (await agent("delete_file", {"path": "a.txt"}, sid).run("delete a.txt")).output
    assert RAN == []
    error = json.loads(out)
    assert error["error"] == "tool call blocked"
    assert error["reason"] == "deleting files is not allowed"
    assert error["hint"] == "move it to archive/ instead"
    assert error["hook"] == "project:policy"
    rows = audit(sid)
    assert ("before_tool_call", "block", "delete_file", "project:policy") in rows


async def test_a_modifier_changes_the_args_the_tool_runs_with(project):
    await agent("shout", {"text": "hello"}, session()).run("shout hello")
    assert RAN == [("shout", {"text": "HELLO"})]


async def test_after_tool_call_rewrites_the_result_the_model_reads(project):
    out = (await agent("read_secret", {}, session()).run("read it")).output
    assert RAN == [("read_secret", {})]
    assert "abc123" not in out
    assert "[redacted by policy]" in out


async def test_context_reaches_the_model_beside_the_result(project):
    out = (await agent("weather", {"city": "Oslo"}, session()).run("weather?")).output
    assert "weather ran with" in out
    assert '<hook-context hook="project:policy">' in out
    assert "Celsius" in out


async def test_ask_defers_to_a_person_and_runs_once_approved(project):
    a = agent("deploy", {"env": "prod"}, session())
    first = await a.run("deploy prod")
    assert isinstance(first.output, DeferredToolRequests)
    (pending,) = first.output.approvals
    assert pending.tool_name == "deploy"
    assert first.output.metadata[pending.tool_call_id]["reason"] == "deploys need a person"
    assert RAN == []
    second = await a.run(message_history=first.all_messages(),
                        deferred_tool_results=DeferredToolResults(
                            approvals={pending.tool_call_id: True}))
    assert RAN == [("deploy", {"env": "prod"})]
    assert "deploy ran with" in second.output


@pytest.mark.parametrize(("answer", "reason"), [
    (False, "denied by the user"), (ToolDenied("not on a Friday"), "not on a Friday")])
async def test_a_denied_call_is_denied_and_blocked(project, answer, reason):
    """A person's denial fires permission_denied, then after_tool_call as a blocked
    call, once, as the reference agent does."""
    sid = session()
    p = Policy("pydantic-ai", session_id=sid)
    seen: list[tuple[str, str, dict[str, Any], Any]] = []
    p.engine.on("permission_denied",
                lambda e: seen.append((e.name, e.tool_name, e.args, e.reason)))
    p.engine.on("after_tool_call",
                lambda e: seen.append((e.name, e.tool_name, e.args, (e.status, e.result))))
    a = agent("deploy", {"env": "prod"}, sid)
    first = await a.run("deploy prod")
    (pending,) = first.output.approvals
    second = await a.run(message_history=first.all_messages(),
                        deferred_tool_results=DeferredToolResults(
                            approvals={pending.tool_call_id: answer}))
    assert RAN == []
    told = "not on a Friday" if reason == "not on a Friday" else ToolDenied().message
    assert second.output == told
    assert p.engine.drain()
    assert seen == [("permission_denied", "deploy", {"env": "prod"}, reason),
                    ("after_tool_call", "deploy", {"env": "prod"}, ("blocked", told))]


async def test_a_crashing_fail_closed_hook_blocks_the_call(project):
    sid = session()
    out = (await agent("explode", {}, sid).run("go")).output
    assert RAN == []
    error = json.loads(out)
    assert error["error"] == "tool call blocked"
    assert error["hook"] == "project:policy"
    rows = audit(sid)
    assert any(e == "before_tool_call" and v == "block" and s == "explode"
               for e, v, s, _ in rows)


async def test_a_permission_rule_denies_the_rewritten_call(project):
    out = (await agent("shout", {"text": "deploy production"}, session()).run("shout")).output
    assert RAN == []
    error = json.loads(out)
    assert (error["reason"], error["hook"]) == ("a permission rule denies it", "permissions")


async def _streams_a_secret(messages: list[ModelMessage], info: AgentInfo) -> Any:
    yield "secret sk-live-123 text"


def _says_a_secret(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("secret sk-live-123 text")])


def redacting(sid: str) -> Agent[None, str]:
    policy = Policy("pydantic-ai", session_id=sid)
    policy.engine.on("after_llm_call", lambda e: modify(text="[redacted]"), modifies=True)
    return Agent(FunctionModel(_says_a_secret, stream_function=_streams_a_secret),
                 capabilities=[Interlock(policy=policy)])


async def test_after_llm_call_rewrites_the_text_of_a_run(project):
    assert (await redacting(session()).run("go")).output == "[redacted]"


async def test_a_text_rewrite_a_stream_cannot_take_ends_the_streamed_run(project):
    with pytest.raises(DecisionNotSupported, match="after_llm_call"):
        async with redacting(session()).run_stream("go") as streamed:
            await streamed.get_output()


def _answers(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name,
                                             {"text": "secret sk-live-123"}, tool_call_id="o1")])


async def _streams_an_answer(messages: list[ModelMessage], info: AgentInfo) -> Any:
    from pydantic_ai.models.function import DeltaToolCall

    yield {0: DeltaToolCall(name=info.output_tools[0].name, tool_call_id="o1",
                            json_args='{"text": "secret sk-live-123"}')}


async def test_an_output_rewrite_a_stream_cannot_take_ends_the_streamed_run(project):
    # run_stream's output is the streamed output tool call's, not after_llm_call's
    # rewrite of it: the run ends instead of handing out the original.
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("after_llm_call", lambda e: modify(tool_calls=[
        {**c, "args": {"text": "[redacted]"}} for c in e.tool_calls]), modifies=True)
    a = Agent(FunctionModel(_answers, stream_function=_streams_an_answer), output_type=Answer,
              capabilities=[Interlock(policy=policy)])
    assert (await a.run("go")).output == Answer(text="[redacted]")
    with pytest.raises(DecisionNotSupported, match="after_llm_call"):
        async with a.run_stream("go") as streamed:
            await streamed.get_output()


def echo(sid: str) -> tuple[Policy, Agent[None, str], list[list[str]]]:
    """An agent whose model answers with every user prompt it read, recorded."""
    seen: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts = [str(p.content) for m in messages for p in getattr(m, "parts", [])
                   if isinstance(p, UserPromptPart)]
        seen.append(prompts)
        return ModelResponse(parts=[TextPart(" | ".join(prompts))])

    policy = Policy("pydantic-ai", session_id=sid)
    return policy, Agent(FunctionModel(model), capabilities=[Interlock(policy=policy)]), seen


async def test_user_input_block_ends_the_run_before_the_model(project):
    policy, a, seen = echo(session())
    policy.engine.on("user_input", lambda e: block("no secrets asked"))
    with pytest.raises(PolicyStopped, match="no secrets asked"):
        await a.run("what is the password?")
    assert seen == []


async def test_user_input_rewrite_and_context_reach_the_model(project):
    policy, a, seen = echo(session())
    policy.engine.on("user_input", lambda e: modify(text=e.text.replace("sk-123", "[key]")),
                     modifies=True)
    policy.engine.on("user_input", lambda e: context("answer briefly"))
    result = await a.run("use key sk-123")
    (prompts,) = seen
    assert prompts[0] == "use key [key]"
    assert "answer briefly" in prompts[1]
    assert "sk-123" not in str(result.all_messages())


async def test_tool_result_persist_can_withhold_a_result(project):
    sid = session()
    policy = Policy("pydantic-ai", session_id=sid)
    policy.engine.on("tool_result_persist", lambda e: block("not for the transcript"))
    withheld = Agent(calls("weather", {"city": "Oslo"}),
                     capabilities=[Interlock(policy=policy)])
    withheld.tool_plain(name="weather")(lambda city: f"sunny in {city}")
    result = await withheld.run("weather?")
    assert "sunny" not in str(result.all_messages())
    assert "tool result withheld" in result.output


async def test_a_gate_hook_on_an_event_pydantic_ai_never_fires_refuses_the_run(project):
    policy, a, seen = echo(session())
    policy.engine.on("subagent_stop", lambda e: block("not yet"))
    with pytest.raises(ConfigError, match="subagent_stop, which the pydantic-ai adapter"):
        await a.run("hi")
    assert seen == []


def test_a_user_input_rewrite_with_no_prompt_part_to_replace_is_refused():
    from types import SimpleNamespace

    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from interlock.adapters._core import RunInput
    from interlock.adapters.pydantic_ai import _apply_input

    request = SimpleNamespace(messages=[ModelRequest(parts=[UserPromptPart("changed already")])])
    with pytest.raises(DecisionNotSupported, match="user_input"):
        _apply_input(request, "the password is hunter2",  # type: ignore[arg-type]
                     RunInput(text="the password is [redacted]", context=""))
