"""LangChain's run edges under the policy: the run's end, a tool or model call that
failed, the final answer, the model choice, and a hook answering the input itself
(docs/adapters.md, LangChain). Each runs through create_agent's own loop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("langchain")

from adapter_project import audit, session
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import Field

from interlock import block, context, modify, respond, retry, stop
from interlock.adapters import DecisionNotSupported, Policy, PolicyStopped
from interlock.adapters.langchain import FIRES, InterlockMiddleware

RAN: list[str] = []


class Scripted(GenericFakeChatModel):
    """LangChain's scripted chat model, keeping what each call read; an Exception in
    the script is raised instead of answered."""

    seen: list[list[str]] = Field(default_factory=list)

    def __init__(self, replies: list[AIMessage | Exception]) -> None:
        super().__init__(messages=iter(replies))

    def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:  # type: ignore[override]
        return self

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append([str(m.content) for m in messages])
        reply = next(self.messages)
        if isinstance(reply, Exception):
            raise reply
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def flaky(path: str) -> str:
    """Fails the first time it runs."""
    RAN.append(path)
    if len(RAN) == 1:
        raise OSError(f"disk busy reading {path} (token=sk-live-1234567890abcdef)")
    return f"read {path}"


@tool
def fine(path: str) -> str:
    """Always works."""
    RAN.append(path)
    return f"read {path}"


@tool
def broken(path: str) -> str:
    """Always fails."""
    RAN.append(path)
    raise OSError("disk on fire")


def calls(name: str, *after: AIMessage | Exception) -> list[AIMessage | Exception]:
    return [AIMessage("", tool_calls=[{"id": "c1", "name": name, "args": {"path": "a"}}]),
            *(after or [AIMessage("done")])]


def run(policy: Policy, model: Scripted, prompt: str = "go", *, mode: str = "sync",
        response_format: Any = None, middleware: list[Any] | None = None,
        **options: Any) -> Any:
    """One run through ``invoke`` (mode "sync") or ``ainvoke`` ("async")."""
    agent = create_agent(model, tools=[flaky, broken, fine], response_format=response_format,
                         middleware=middleware or [InterlockMiddleware(policy=policy, **options)])
    given = {"messages": [{"role": "user", "content": prompt}]}
    return agent.invoke(given) if mode == "sync" else asyncio.run(agent.ainvoke(given))


BOTH = pytest.mark.parametrize("mode", ["sync", "async"])


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_session_end_fires_when_the_middleware_closes_not_at_each_run(project):
    policy = Policy("langchain", session_id=session())
    seen: list[str] = []
    policy.engine.on("session_start", lambda e: seen.append("start"))
    policy.engine.on("session_end", lambda e: seen.append(f"end:{e.reason}"))
    middleware = InterlockMiddleware(policy=policy)
    with middleware:
        run(policy, Scripted([AIMessage("hi")]), middleware=[middleware])
        run(policy, Scripted([AIMessage("hi again")]), middleware=[middleware])
        assert policy.engine.drain(10)
        assert seen == ["start"]
    assert policy.engine.drain(10)
    assert seen == ["start", "end:exit"]
    middleware.close()
    assert policy.engine.drain(10)
    assert seen == ["start", "end:exit"], "a session ends once"
    run(policy, Scripted([AIMessage("new")]), middleware=[middleware])
    assert policy.engine.drain(10)
    assert seen == ["start", "end:exit", "start"]
    assert "session_end" in FIRES


@BOTH
def test_tool_error_retry_runs_the_tool_again_through_before_tool_call(project, mode):
    sid = session()
    policy = Policy("langchain", session_id=sid)
    seen: list[tuple[str, int]] = []
    policy.engine.on("tool_error", lambda e: seen.append((e.error, e.attempt)) or retry())
    gated: list[str] = []
    policy.engine.on("before_tool_call", lambda e: gated.append(e.tool_name))
    result = run(policy, Scripted(calls("flaky")), mode=mode)
    assert RAN == ["a", "a"]
    assert gated == ["flaky", "flaky"]
    ((error, attempt),) = seen
    assert attempt == 1
    assert "disk busy" in error
    assert "sk-live-1234567890abcdef" not in error
    (message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert message.content == "read a"
    assert any(e == "tool_error" and v == "retry" and s == "flaky"
               for e, v, s, _ in audit(sid, want=5))


async def test_tool_error_rewrite_and_context_reach_the_model_and_the_run_goes_on(project):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("tool_error", lambda e: modify(error="the disk failed; try later"),
                     modifies=True)
    policy.engine.on("tool_error", lambda e: context("do not retry today"))
    model = Scripted(calls("broken"))
    result = await create_agent(model, tools=[broken], middleware=[
        InterlockMiddleware(policy=policy)]).ainvoke(
        {"messages": [{"role": "user", "content": "go"}]})
    (message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert message.status == "error"
    assert message.content.startswith("the disk failed; try later")
    assert "do not retry today" in message.content
    assert "disk on fire" not in str(result["messages"])
    assert result["messages"][-1].content == "done"


def test_a_tool_error_no_hook_answers_is_raised_as_langchain_raises_it(project):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("tool_error", lambda e: None)
    with pytest.raises(OSError, match="disk on fire"):
        run(policy, Scripted(calls("broken")))


@BOTH
def test_a_tool_error_retry_stops_at_the_cap(project, mode):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("tool_error", lambda e: retry())
    with pytest.raises(OSError, match="disk on fire"):
        run(policy, Scripted(calls("broken")), mode=mode)
    assert RAN == ["a", "a", "a"]


@BOTH
def test_llm_error_retry_calls_the_model_again(project, mode):
    sid = session()
    policy = Policy("langchain", session_id=sid)
    attempts: list[int] = []
    policy.engine.on("llm_error", lambda e: attempts.append(e.attempt) or retry())
    model = Scripted([ConnectionError("upstream 503"), AIMessage("recovered")])
    result = run(policy, model, mode=mode)
    assert attempts == [1]
    assert result["messages"][-1].content == "recovered"
    assert len(model.seen) == 2
    assert any(e == "llm_error" and v == "retry" for e, v, _, _ in audit(sid, want=3))


@BOTH
def test_an_llm_error_no_hook_retries_is_raised(project, mode):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("llm_error", lambda e: None)
    with pytest.raises(ConnectionError, match="upstream 503"):
        run(policy, Scripted([ConnectionError("upstream 503"), AIMessage("never")]), mode=mode)


@BOTH
def test_model_select_switches_the_model_of_a_call(project, mode):
    policy = Policy("langchain", session_id=session())
    chosen: list[str] = []
    policy.engine.on("model_select", lambda e: chosen.append(e.model) or modify(model="small"),
                     modifies=True)
    small = Scripted([AIMessage("from the small model")])
    big = Scripted([AIMessage("from the big model")])
    result = run(policy, big, models={"small": small}, mode=mode)
    assert result["messages"][-1].content == "from the small model"
    assert big.seen == []
    assert len(small.seen) == 1
    assert len(chosen) == 1


def test_a_model_select_to_a_model_langchain_cannot_make_is_refused(project):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("model_select", lambda e: modify(model="no-such-provider:nothing"),
                     modifies=True)
    with pytest.raises(DecisionNotSupported, match="model_select"):
        run(policy, Scripted([AIMessage("never")]))


@BOTH
def test_before_stop_block_sends_the_reason_back_and_the_model_keeps_working(project, mode):
    sid = session()
    policy = Policy("langchain", session_id=sid)
    counts: list[int] = []

    def not_yet(event: Any) -> Any:
        counts.append(event.block_count)
        return block("run the tests first") if event.block_count == 0 else None

    policy.engine.on("before_stop", not_yet)
    model = Scripted([AIMessage("done"), AIMessage("tests pass, done")])
    result = run(policy, model, mode=mode)
    assert counts == [0, 1]
    assert any("run the tests first" in m for m in model.seen[1])
    assert result["messages"][-1].content == "tests pass, done"
    assert any(isinstance(m, HumanMessage) and "run the tests first" in str(m.content)
               for m in result["messages"])
    assert any(e == "before_stop" and v == "block" for e, v, _, _ in audit(sid, want=4))


def test_before_stop_is_not_asked_while_the_model_calls_tools(project):
    policy = Policy("langchain", session_id=session())
    asked: list[str | None] = []
    policy.engine.on("before_stop", lambda e: asked.append(e.last_message))
    run(policy, Scripted(calls("fine", AIMessage("finished"))))
    assert asked == ["finished"]


def test_context_on_an_allowed_stop_is_refused(project):
    policy = Policy("langchain", session_id=session())
    policy.engine.on("before_stop", lambda e: context("remember this"))
    with pytest.raises(DecisionNotSupported, match="before_stop"):
        run(policy, Scripted([AIMessage("done")]))


async def test_user_input_respond_answers_without_the_model(project):
    sid = session()
    policy = Policy("langchain", session_id=sid)
    policy.engine.on("user_input", lambda e: respond("We are closed on Sundays."))
    ended: list[str | None] = []
    policy.engine.on("agent_end", lambda e: ended.append(e.final_text))
    model = Scripted([AIMessage("never")])
    result = await create_agent(model, tools=[flaky], middleware=[
        InterlockMiddleware(policy=policy)]).ainvoke(
        {"messages": [{"role": "user", "content": "open today?"}]})
    assert model.seen == []
    assert isinstance(result["messages"][-1], AIMessage)
    assert result["messages"][-1].content == "We are closed on Sundays."
    assert policy.engine.drain(10)
    assert ended == ["We are closed on Sundays."]
    assert any(e == "user_input" and v == "respond" for e, v, _, _ in audit(sid))


def test_a_gate_hook_on_subagent_stop_still_refuses_the_run(project):
    from interlock import ConfigError

    policy = Policy("langchain", session_id=session())
    policy.engine.on("subagent_stop", lambda e: block("not yet"))
    with pytest.raises(ConfigError, match="subagent_stop, which the langchain adapter"):
        run(policy, Scripted([AIMessage("hi")]))


def test_the_error_text_a_hook_sees_is_json_safe(project):
    policy = Policy("langchain", session_id=session())
    seen: list[str] = []
    policy.engine.on("tool_error", lambda e: seen.append(json.dumps(e.args)) or None)
    with pytest.raises(OSError, match="disk on fire"):
        run(policy, Scripted(calls("broken")))
    assert seen == ['{"path": "a"}']


def test_before_stop_is_asked_on_a_structured_output(project):
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    policy = Policy("langchain", session_id=session())
    asked: list[str | None] = []
    policy.engine.on("before_stop", lambda e: asked.append(e.last_message) or (
        block("check it twice") if len(asked) == 1 else None))
    model = Scripted([
        AIMessage("", tool_calls=[{"id": "o1", "name": "Answer", "args": {"text": "first"}}]),
        AIMessage("", tool_calls=[{"id": "o2", "name": "Answer", "args": {"text": "second"}}]),
    ])
    result = run(policy, model, response_format=ToolStrategy(Answer))
    assert len(asked) == 2
    assert any("check it twice" in m for m in model.seen[1])
    assert result["structured_response"] == Answer(text="second")


def redacting_policy() -> Policy:
    policy = Policy("langchain", session_id=session())
    policy.engine.on("after_llm_call", lambda e: modify(
        text=e.text.replace("hunter2", "[secret]")), modifies=True)
    return policy


@pytest.mark.parametrize("how", ["messages", "events"])
def test_a_text_rewrite_on_a_streamed_reply_is_refused_not_dropped(project, how):
    # The stream's consumer reads the model's tokens as they come, before
    # after_llm_call's rewrite: the run ends instead of the consumer reading both.
    agent = create_agent(Scripted([AIMessage("the password is hunter2")]),
                         middleware=[InterlockMiddleware(policy=redacting_policy())])
    given = {"messages": [{"role": "user", "content": "the password?"}]}

    async def events() -> None:
        async for _ in agent.astream_events(given, version="v2"):
            pass

    def consume() -> None:
        if how == "messages":
            list(agent.stream(given, stream_mode="messages"))
        else:
            asyncio.run(events())

    with pytest.raises(DecisionNotSupported, match="streamed"):
        consume()


def test_a_text_rewrite_applies_on_a_stream_of_state_updates(project):
    agent = create_agent(Scripted([AIMessage("the password is hunter2")]),
                         middleware=[InterlockMiddleware(policy=redacting_policy())])
    given = {"messages": [{"role": "user", "content": "the password?"}]}
    seen = json.dumps([str(m.content) for update in agent.stream(given, stream_mode="updates")
                       for step in update.values() if step for m in step.get("messages", [])])
    assert "hunter2" not in seen
    assert "the password is [secret]" in seen


class Backup(Scripted):
    model_name: str = "backup"


def test_listed_last_the_middleware_judges_each_call_another_middleware_makes(project):
    # LangChain runs middleware=[...] outside in: a fallback listed before the
    # policy calls the model through it each time (docs/adapters.md, LangChain).
    from langchain.agents.middleware import ModelFallbackMiddleware

    policy = Policy("langchain", session_id=session())
    models: list[str] = []
    policy.engine.on("before_llm_call", lambda e: models.append(e.model) or (
        block("no backup provider") if e.model == "backup" else None))
    failed: list[str] = []
    policy.engine.on("llm_error", lambda e: failed.append(e.error) or None)
    backup = Backup([AIMessage("from the backup")])
    agent = create_agent(Scripted([ConnectionError("upstream 503")]), middleware=[
        ModelFallbackMiddleware(backup), InterlockMiddleware(policy=policy)])
    with pytest.raises(PolicyStopped, match="no backup provider"):
        agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert models == ["Scripted", "backup"]
    assert failed == ["ConnectionError: upstream 503"]
    assert backup.seen == []


def test_a_stop_passes_through_a_retry_middleware_around_the_policy(project):
    # ModelRetryMiddleware retries any exception, then answers with its text: the
    # policy's stop is LangGraph's control flow, which it lets through unretried.
    from langchain.agents.middleware import ModelRetryMiddleware

    policy = Policy("langchain", session_id=session())
    policy.engine.on("after_llm_call", lambda e: stop("the reply leaks a key"))
    model = Scripted([AIMessage("key=abc"), AIMessage("key=def"), AIMessage("key=ghi")])
    agent = create_agent(model, middleware=[
        ModelRetryMiddleware(initial_delay=0, jitter=False), InterlockMiddleware(policy=policy)])
    with pytest.raises(PolicyStopped, match="leaks a key"):
        agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert len(model.seen) == 1


@BOTH
def test_a_tool_call_stop_passes_through_a_tool_error_middleware(project, mode):
    from langchain.agents.middleware import ToolErrorMiddleware

    policy = Policy("langchain", session_id=session())
    policy.engine.on("before_tool_call", lambda e: stop("not on a Sunday"))
    model = Scripted(calls("fine"))
    with pytest.raises(PolicyStopped, match="not on a Sunday"):
        run(policy, model, mode=mode, middleware=[
            ToolErrorMiddleware(on_error=lambda e, r: f"failed: {e}"),
            InterlockMiddleware(policy=policy)])
    assert RAN == []
    assert len(model.seen) == 1


def test_a_text_rewrite_of_a_hook_answer_applies_on_a_message_stream(project):
    # A before_llm_call respond streams nothing from a model: its rewrite applies.
    policy = redacting_policy()
    policy.engine.on("before_llm_call", lambda e: respond("the password is hunter2"))
    model = Scripted([AIMessage("never")])
    agent = create_agent(model, middleware=[InterlockMiddleware(policy=policy)])
    streamed = [str(chunk.content) for chunk, _ in agent.stream(
        {"messages": [{"role": "user", "content": "the password?"}]}, stream_mode="messages")]
    assert model.seen == []
    assert streamed == ["the password is [secret]"]


@BOTH
def test_a_rewrite_of_the_structured_output_is_not_dropped(project, mode):
    # LangChain parses the structured output inside the model call, before
    # after_llm_call: a rewrite of the reply must not leave the parsed original as the
    # run's structured_response.
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    policy = Policy("langchain", session_id=session())
    policy.engine.on("after_llm_call", lambda e: modify(tool_calls=[
        {**c, "args": {"text": c["args"]["text"].replace("hunter2", "[secret]")}}
        for c in e.tool_calls]), modifies=True)
    model = Scripted([AIMessage("", tool_calls=[
        {"id": "o1", "name": "Answer", "args": {"text": "the password is hunter2"}}])])
    with pytest.raises(DecisionNotSupported, match="structured output"):
        run(policy, model, mode=mode, response_format=ToolStrategy(Answer))


class Whole(Scripted):
    """Answers in one piece on a stream too (a reply that only calls tools has no
    text to stream)."""

    disable_streaming: bool = True


@tool
def read_secret(path: str) -> str:
    """Reads a secret."""
    return "key sk-live-123"


def test_a_result_rewrite_on_a_stream_of_events_is_refused_not_dropped(project):
    # astream_events hands its consumer the tool's own output (on_tool_end) before
    # after_tool_call's rewrite: the run ends instead of the consumer reading it.
    policy = Policy("langchain", session_id=session())
    policy.engine.on("after_tool_call", lambda e: modify(result="[redacted]"), modifies=True)

    def agent() -> Any:
        model = Whole([AIMessage("", tool_calls=[{"id": "c1", "name": "read_secret",
                                                   "args": {"path": "a"}}]), AIMessage("done")])
        return create_agent(model, tools=[read_secret],
                            middleware=[InterlockMiddleware(policy=policy)])

    given = {"messages": [{"role": "user", "content": "the key?"}]}

    async def events() -> None:
        async for _ in agent().astream_events(given, version="v2"):
            pass

    with pytest.raises(DecisionNotSupported, match="streamed"):
        asyncio.run(events())
    # A stream of messages carries the tool's result as the middleware left it.
    streamed = [str(m.content) for m, _ in agent().stream(given, stream_mode="messages")]
    assert "sk-live-123" not in json.dumps(streamed)
    assert any("redacted" in m for m in streamed)
