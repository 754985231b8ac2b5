"""LangChain's own agent loop (create_agent on LangGraph), driven by its fake chat
model, under the project's policy."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest

pytest.importorskip("langchain")

from adapter_project import audit, session
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from interlock import ConfigError, block, context, modify, stop
from interlock.adapters import DecisionNotSupported, Policy, PolicyStopped
from interlock.adapters.langchain import InterlockMiddleware

RAN: list[tuple[str, dict[str, Any]]] = []


class ToolCallingFake(GenericFakeChatModel):
    """LangChain's scripted chat model, with the tool binding create_agent asks for."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:  # type: ignore[override]
        return self


def _record(name: str, **kwargs: Any) -> str:
    RAN.append((name, kwargs))
    return "token=abc123" if name == "read_secret" else f"{name} ran with {kwargs}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return _record("delete_file", path=path)


@tool
def shout(text: str) -> str:
    """Say it loudly."""
    return _record("shout", text=text)


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return _record("weather", city=city)


@tool
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return _record("deploy", env=env)


@tool
def explode() -> str:
    """A tool whose policy hook crashes."""
    return _record("explode")


@tool
def read_secret() -> str:
    """Read a secret."""
    return _record("read_secret")


TOOLS = [delete_file, shout, weather, deploy, explode, read_secret]


def agent(name: str, args: dict[str, Any], sid: str, **options: Any) -> Any:
    model = ToolCallingFake(messages=iter([
        AIMessage(content="", tool_calls=[{"id": "call-1", "name": name, "args": args}]),
        AIMessage(content="done"),
    ]))
    return create_agent(model, tools=TOOLS, middleware=[
        InterlockMiddleware(policy=Policy("langchain", session_id=sid))], **options)


def tool_message(result: dict[str, Any]) -> ToolMessage:
    (message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    return message


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_a_blocked_call_never_runs_and_the_model_reads_the_reason(project):
    sid = session()
    result = agent("delete_file", {"path": "a.txt"}, sid).invoke(
        {"messages": [{"role": "user", "content": "delete a.txt"}]})
    assert RAN == []
    message = tool_message(result)
    assert message.status == "error"
    error = json.loads(message.content)
    assert (error["error"], error["reason"], error["hook"]) == (
        "tool call blocked", "deleting files is not allowed", "project:policy")
    assert ("before_tool_call", "block", "delete_file", "project:policy") in audit(sid)


async def test_a_modifier_changes_the_args_on_the_async_path(project):
    await agent("shout", {"text": "hello"}, session()).ainvoke(
        {"messages": [{"role": "user", "content": "shout"}]})
    assert RAN == [("shout", {"text": "HELLO"})]


def test_after_tool_call_rewrites_the_result(project):
    result = agent("read_secret", {}, session()).invoke(
        {"messages": [{"role": "user", "content": "read it"}]})
    content = tool_message(result).content
    assert RAN == [("read_secret", {})]
    assert "abc123" not in content
    assert "[redacted by policy]" in content


def test_context_reaches_the_model_beside_the_result(project):
    result = agent("weather", {"city": "Oslo"}, session()).invoke(
        {"messages": [{"role": "user", "content": "weather?"}]})
    content = tool_message(result).content
    assert content.startswith("weather ran with")
    assert '<hook-context hook="project:policy">' in content


def test_ask_pauses_the_graph_and_a_person_answers(project):
    config = {"configurable": {"thread_id": "t1"}}
    a = agent("deploy", {"env": "prod"}, session(), checkpointer=InMemorySaver())
    paused = a.invoke({"messages": [{"role": "user", "content": "deploy"}]}, config)
    (interrupt,) = paused["__interrupt__"]
    assert interrupt.value["reason"] == "deploys need a person"
    assert interrupt.value["tool_name"] == "deploy"
    assert RAN == []
    a.invoke(Command(resume=True), config)
    assert RAN == [("deploy", {"env": "prod"})]


def test_a_refusal_is_returned_to_the_model(project):
    """A person's refusal is the call's result, and after_tool_call sees it, as
    it sees every call (the reference agent's rule)."""
    config = {"configurable": {"thread_id": "t2"}}
    sid = session()
    a = agent("deploy", {"env": "prod"}, sid, checkpointer=InMemorySaver())
    a.invoke({"messages": [{"role": "user", "content": "deploy"}]}, config)
    done = a.invoke(Command(resume={"approved": False, "reason": "not on a Friday"}), config)
    assert RAN == []
    assert json.loads(tool_message(done).content)["reason"] == "not on a Friday"
    assert any(e == "after_tool_call" and s == "deploy" for e, _v, s, _h in audit(sid, want=3))


@pytest.mark.parametrize(("answer", "reason"), [
    (False, "denied by the user"),
    ({"approved": False, "reason": "not on a Friday"}, "not on a Friday")])
def test_a_refusal_is_denied_and_blocked(project, answer, reason):
    """A person's refusal fires permission_denied, then after_tool_call as a blocked
    call, once, as the reference agent does."""
    config = {"configurable": {"thread_id": "t3"}}
    sid = session()
    p = Policy("langchain", session_id=sid)
    seen: list[tuple[str, str, dict[str, Any], str]] = []
    p.engine.on("permission_denied",
                lambda e: seen.append((e.name, e.tool_name, e.args, e.reason)))
    p.engine.on("after_tool_call",
                lambda e: seen.append((e.name, e.tool_name, e.args, e.status)))
    a = agent("deploy", {"env": "prod"}, sid, checkpointer=InMemorySaver())
    a.invoke({"messages": [{"role": "user", "content": "deploy"}]}, config)
    done = a.invoke(Command(resume=answer), config)
    assert RAN == []
    assert json.loads(tool_message(done).content)["reason"] == reason
    assert p.engine.drain()
    assert seen == [("permission_denied", "deploy", {"env": "prod"}, reason),
                    ("after_tool_call", "deploy", {"env": "prod"}, "blocked")]


def test_a_crashing_fail_closed_hook_blocks_the_call(project):
    sid = session()
    result = agent("explode", {}, sid).invoke({"messages": [{"role": "user", "content": "go"}]})
    assert RAN == []
    assert json.loads(tool_message(result).content)["error"] == "tool call blocked"
    assert any(e == "before_tool_call" and v == "block" and s == "explode"
               for e, v, s, _ in audit(sid))


def test_stop_ends_the_run(project):
    engine_policy = Policy("langchain", session_id=session())
    engine_policy.engine.on("before_llm_call", lambda e: stop("enough"))
    model = ToolCallingFake(messages=iter([AIMessage(content="hi")]))
    a = create_agent(model, tools=TOOLS, middleware=[InterlockMiddleware(policy=engine_policy)])
    with pytest.raises(PolicyStopped, match="enough"):
        a.invoke({"messages": [{"role": "user", "content": "hi"}]})


def test_a_permission_rule_denies_the_rewritten_call(project):
    result = agent("shout", {"text": "deploy production"}, session()).invoke(
        {"messages": [{"role": "user", "content": "shout"}]})
    assert RAN == []
    error = json.loads(tool_message(result).content)
    assert (error["reason"], error["hook"]) == ("a permission rule denies it", "permissions")


@tool("read_secret")
def read_secret_state(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Read a secret into the graph's state, as LangGraph tools that return a Command do."""
    RAN.append(("read_secret_state", {}))
    return Command(update={"messages": [ToolMessage("token=abc123", tool_call_id=tool_call_id)]})


def command_agent(policy: Policy) -> Any:
    model = ToolCallingFake(messages=iter([
        AIMessage(content="", tool_calls=[{"id": "call-1", "name": "read_secret", "args": {}}]),
        AIMessage(content="done"),
    ]))
    return create_agent(model, tools=[read_secret_state],
                        middleware=[InterlockMiddleware(policy=policy)])


def test_after_tool_call_rewrites_a_result_inside_a_command(project):
    sid = session()
    result = command_agent(Policy("langchain", session_id=sid)).invoke(
        {"messages": [{"role": "user", "content": "read it"}]})
    assert RAN == [("read_secret_state", {})]
    content = tool_message(result).content
    assert "abc123" not in content
    assert "[redacted by policy]" in content


async def test_after_tool_call_blocks_a_result_inside_a_command_on_the_async_path(project):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("after_tool_call", lambda e: block("never show results"))
    result = await command_agent(policy).ainvoke(
        {"messages": [{"role": "user", "content": "read it"}]})
    message = tool_message(result)
    assert "abc123" not in message.content
    assert json.loads(message.content)["error"] == "tool result blocked"


def test_a_result_with_no_readable_tool_message_is_refused_while_a_hook_listens(project):
    from langgraph.prebuilt.tool_node import ToolCallRequest

    middleware = InterlockMiddleware(policy=Policy("langchain", session_id=session()))
    request = ToolCallRequest(tool_call={"id": "call-1", "name": "read_secret", "args": {}},
                              tool=read_secret, state={}, runtime=None)
    with pytest.raises(DecisionNotSupported, match="no ToolMessage"):
        middleware.wrap_tool_call(request, lambda r: Command(goto="elsewhere"))


class RecordingFake(ToolCallingFake):
    """The scripted model, keeping the conversation of each call."""

    seen: list[list[str]] = []

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        RecordingFake.seen.append([str(m.content) for m in messages])
        return super()._generate(messages, *args, **kwargs)


def test_user_input_block_ends_the_run_before_the_model(project):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("user_input", lambda e: block("no secrets asked")
                     if "password" in e.text else None)
    RecordingFake.seen = []
    a = create_agent(RecordingFake(messages=iter([AIMessage("hunter2")])), tools=TOOLS,
                     middleware=[InterlockMiddleware(policy=policy)])
    with pytest.raises(PolicyStopped, match="no secrets asked"):
        a.invoke({"messages": [{"role": "user", "content": "what is the password?"}]})
    assert RecordingFake.seen == []


async def test_user_input_rewrite_and_context_reach_the_model(project):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("user_input", lambda e: modify(text=e.text.replace("sk-123", "[key]")),
                     modifies=True)
    policy.engine.on("user_input", lambda e: context("answer briefly"))
    RecordingFake.seen = []
    a = create_agent(RecordingFake(messages=iter([AIMessage("ok")])), tools=TOOLS,
                     middleware=[InterlockMiddleware(policy=policy)])
    result = await a.ainvoke({"messages": [{"role": "user", "content": "use key sk-123"}]})
    (seen,) = RecordingFake.seen
    assert "use key [key]" in seen
    assert not any("sk-123" in m for m in seen)
    assert any("answer briefly" in m for m in seen)
    assert "sk-123" not in str(result["messages"])


def test_after_tool_call_sees_a_blocked_call(project):
    policy = Policy("langchain", session_id=session())
    statuses: list[str] = []
    policy.engine.on("after_tool_call", lambda e: statuses.append(e.status))
    model = ToolCallingFake(messages=iter([
        AIMessage(content="", tool_calls=[{"id": "c1", "name": "delete_file",
                                           "args": {"path": "a"}}]),
        AIMessage(content="done")]))
    create_agent(model, tools=TOOLS, middleware=[InterlockMiddleware(policy=policy)]).invoke(
        {"messages": [{"role": "user", "content": "delete a"}]})
    assert RAN == []
    assert statuses == ["blocked"]


def test_a_gate_hook_on_an_event_langchain_never_fires_refuses_the_run(project, caplog):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("turn_end", lambda e: None)
    # A chat gateway's messages have no counterpart in a framework's run: nothing to miss.
    policy.engine.on(["after_tool_call", "before_message_send"], lambda e: None)
    a = create_agent(ToolCallingFake(messages=iter([AIMessage("ok")])), tools=TOOLS,
                     middleware=[InterlockMiddleware(policy=policy)])
    a.invoke({"messages": [{"role": "user", "content": "hi"}]})
    assert "turn_end, which the langchain adapter never fires" in caplog.text
    assert "before_message_send, which the langchain adapter never fires" in caplog.text
    policy.engine.on("subagent_stop", lambda e: block("keep working"))
    with pytest.raises(ConfigError, match="subagent_stop, which the langchain adapter never "
                                          "fires"):
        a.invoke({"messages": [{"role": "user", "content": "hi"}]})


def test_a_result_with_no_readable_tool_message_is_refused_while_only_persist_listens(project):
    """tool_result_persist can block or rewrite the result too: a shape it cannot
    read is refused for it as for after_tool_call."""
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from interlock import Engine

    engine = Engine()
    engine.on("tool_result_persist", lambda e: None, name="redactor")
    middleware = InterlockMiddleware(policy=Policy("langchain", engine=engine,
                                                   session_id=session()))
    request = ToolCallRequest(tool_call={"id": "call-1", "name": "read_secret", "args": {}},
                              tool=read_secret, state={}, runtime=None)
    with pytest.raises(DecisionNotSupported, match="no ToolMessage"):
        middleware.wrap_tool_call(request, lambda r: Command(goto="elsewhere"))


@pytest.mark.parametrize("messages", [[], [AIMessage("hi")], "no id"])
def test_a_user_input_rewrite_with_no_prompt_message_to_replace_is_refused(messages):
    from langchain_core.messages import HumanMessage

    from interlock.adapters._core import RunInput
    from interlock.adapters.langchain import _input_update

    if messages == "no id":
        messages = [HumanMessage("the password is hunter2")]
    with pytest.raises(DecisionNotSupported, match="user_input"):
        _input_update({"messages": messages}, RunInput(text="the password is [redacted]",
                                                       context=""))


@tool("read_secret")
def read_secret_aside(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Read a secret into the graph's state, beside the tool's result."""
    from langchain_core.messages import HumanMessage

    RAN.append(("read_secret_aside", {}))
    return Command(update={"messages": [ToolMessage("read it", tool_call_id=tool_call_id),
                                        HumanMessage("token=abc123")]})


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_message_a_command_adds_beside_its_result_is_refused_while_a_hook_listens(
        project, mode):
    # after_tool_call judges the ToolMessage only: another message the tool adds to
    # the state would reach the model unjudged.
    import asyncio

    model = ToolCallingFake(messages=iter([
        AIMessage(content="", tool_calls=[{"id": "call-1", "name": "read_secret", "args": {}}]),
        AIMessage(content="done"),
    ]))
    agent = create_agent(model, tools=[read_secret_aside], middleware=[
        InterlockMiddleware(policy=Policy("langchain", session_id=session()))])
    given = {"messages": [{"role": "user", "content": "read it"}]}
    with pytest.raises(DecisionNotSupported, match="HumanMessage"):
        agent.invoke(given) if mode == "sync" else asyncio.run(agent.ainvoke(given))
