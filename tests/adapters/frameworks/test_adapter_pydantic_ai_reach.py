"""pydantic-ai's run edges under the policy: the run's end, a tool or model call that
failed, the final answer, the model choice, and a hook answering the input itself
(docs/adapters.md, pydantic-ai). Each runs through the agent's own loop with its
FunctionModel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from adapter_project import audit, session
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.realtime.codec import RealtimeConnection
from pydantic_ai.realtime.model import RealtimeModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import ExternalToolset

from interlock import ConfigError, block, context, modify, respond, retry
from interlock.adapters import DecisionNotSupported, Policy
from interlock.adapters.pydantic_ai import FIRES, Interlock

RAN: list[str] = []


def script(*replies: str | Exception, tool: str | None = None) -> tuple[FunctionModel,
                                                                         list[list[str]]]:
    """A model that calls ``tool`` first (when given), then answers with each reply in
    turn (raising an Exception one); records the text of each request it read."""
    seen: list[list[str]] = []
    queue = list(replies)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append([str(getattr(p, "content", "")) for m in messages
                     for p in getattr(m, "parts", [])
                     if isinstance(p, (UserPromptPart, RetryPromptPart, ToolReturnPart))])
        if tool is not None and len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart(tool, {"path": "a"}, tool_call_id="c1")])
        reply = queue.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return ModelResponse(parts=[TextPart(reply)])

    return FunctionModel(model), seen


def agent(policy: Policy, model: FunctionModel, capability: Interlock | None = None,
          **options: Any) -> Agent[None, str]:
    a: Agent[None, str] = Agent(
        model, capabilities=[capability or Interlock(policy=policy, **options)])

    @a.tool_plain
    def flaky(path: str) -> str:
        """Fails the first time it runs."""
        RAN.append(path)
        if len(RAN) == 1:
            raise OSError(f"disk busy reading {path} (token=sk-live-1234567890abcdef)")
        return f"read {path}"

    @a.tool_plain
    def broken(path: str) -> str:
        """Always fails."""
        RAN.append(path)
        raise OSError("disk on fire")

    @a.tool_plain
    def fine(path: str) -> str:
        """Always works."""
        RAN.append(path)
        return f"read {path}"

    return a


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


async def test_session_end_fires_when_the_capability_closes_not_at_each_run(project):
    policy = Policy("pydantic-ai", session_id=session())
    seen: list[str] = []
    policy.engine.on("session_start", lambda e: seen.append("start"))
    policy.engine.on("session_end", lambda e: seen.append(f"end:{e.reason}"))
    model, _ = script("hi", "hi again", "new")
    capability = Interlock(policy=policy)
    async with capability:
        await agent(policy, model, capability).run("go")
        await agent(policy, model, capability).run("again")
        assert policy.engine.drain(10)
        assert seen == ["start"]
    assert policy.engine.drain(10)
    assert seen == ["start", "end:exit"]
    await capability.aclose()
    assert policy.engine.drain(10)
    assert seen == ["start", "end:exit"], "a session ends once"
    await agent(policy, model, capability).run("a new session")
    assert policy.engine.drain(10)
    assert seen == ["start", "end:exit", "start"]
    assert "session_end" in FIRES


async def test_a_run_that_raises_leaves_the_session_open_until_close(project):
    policy = Policy("pydantic-ai", session_id=session())
    ended: list[str] = []
    policy.engine.on("session_end", lambda e: ended.append(e.reason))
    model, _ = script(tool="broken")
    capability = Interlock(policy=policy)
    with pytest.raises(OSError, match="disk on fire"):
        await agent(policy, model, capability).run("go")
    assert policy.engine.drain(10)
    assert ended == []
    capability.close()
    assert policy.engine.drain(10)
    assert ended == ["exit"]


async def test_tool_error_retry_runs_the_tool_again_through_before_tool_call(project):
    sid = session()
    policy = Policy("pydantic-ai", session_id=sid)
    seen: list[tuple[str, int]] = []
    policy.engine.on("tool_error", lambda e: seen.append((e.error, e.attempt)) or retry())
    gated: list[str] = []
    policy.engine.on("before_tool_call", lambda e: gated.append(e.tool_name))
    model, read = script("done", tool="flaky")
    await agent(policy, model).run("go")
    assert RAN == ["a", "a"]
    assert gated == ["flaky", "flaky"]
    ((error, attempt),) = seen
    assert attempt == 1
    assert "disk busy" in error
    assert "sk-live-1234567890abcdef" not in error
    assert "read a" in read[1]
    assert any(e == "tool_error" and v == "retry" and s == "flaky"
               for e, v, s, _ in audit(sid, want=5))


async def test_tool_error_rewrite_and_context_reach_the_model_and_the_run_goes_on(project):
    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("tool_error", lambda e: modify(error="the disk failed; try later"),
                     modifies=True)
    policy.engine.on("tool_error", lambda e: context("do not retry today"))
    model, read = script("done", tool="broken")
    result = await agent(policy, model).run("go")
    assert result.output == "done"
    returned = read[1][-1]
    assert "the disk failed; try later" in returned
    assert "do not retry today" in returned
    assert "disk on fire" not in str(result.all_messages())


async def test_a_tool_error_no_hook_answers_is_raised_as_pydantic_ai_raises_it(project):
    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("tool_error", lambda e: None)
    model, _ = script(tool="broken")
    with pytest.raises(OSError, match="disk on fire"):
        await agent(policy, model).run("go")


async def test_a_tool_error_retry_stops_at_the_cap(project):
    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("tool_error", lambda e: retry())
    model, _ = script(tool="broken")
    with pytest.raises(OSError, match="disk on fire"):
        await agent(policy, model).run("go")
    assert RAN == ["a", "a", "a"]


async def test_llm_error_retry_calls_the_model_again(project):
    sid = session()
    policy = Policy("pydantic-ai", session_id=sid)
    attempts: list[int] = []
    policy.engine.on("llm_error", lambda e: attempts.append(e.attempt) or retry())
    model, read = script(ConnectionError("upstream 503"), "recovered")
    result = await agent(policy, model).run("go")
    assert result.output == "recovered"
    assert attempts == [1]
    assert len(read) == 2
    assert any(e == "llm_error" and v == "retry" for e, v, _, _ in audit(sid, want=3))


async def test_an_llm_error_no_hook_retries_is_raised(project):
    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("llm_error", lambda e: None)
    model, _ = script(ConnectionError("upstream 503"), "never")
    with pytest.raises(ConnectionError, match="upstream 503"):
        await agent(policy, model).run("go")


async def test_model_select_switches_the_model_of_a_request(project):
    policy = Policy("pydantic-ai", session_id=session())
    chosen: list[str] = []
    policy.engine.on("model_select", lambda e: chosen.append(e.model) or modify(model="small"),
                     modifies=True)
    small, small_read = script("from the small model")
    big, big_read = script("from the big model")
    result = await agent(policy, big, models={"small": small}).run("go")
    assert result.output == "from the small model"
    assert big_read == []
    assert len(small_read) == 1
    assert len(chosen) == 1


async def test_a_model_select_to_a_model_pydantic_ai_cannot_make_is_refused(project):
    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("model_select", lambda e: modify(model="no-such-provider:nothing"),
                     modifies=True)
    model, _ = script("never")
    with pytest.raises(DecisionNotSupported, match="model_select"):
        await agent(policy, model).run("go")


async def test_before_stop_block_sends_the_reason_back_and_the_model_keeps_working(project):
    sid = session()
    policy = Policy("pydantic-ai", session_id=sid)
    counts: list[int] = []

    def not_yet(event: Any) -> Any:
        counts.append(event.block_count)
        return block("run the tests first") if event.block_count == 0 else None

    policy.engine.on("before_stop", not_yet)
    model, read = script("done", "tests pass, done")
    result = await agent(policy, model).run("go")
    assert counts == [0, 1]
    assert any("run the tests first" in text for text in read[1])
    assert result.output == "tests pass, done"
    assert any(e == "before_stop" and v == "block" for e, v, _, _ in audit(sid, want=4))


async def test_before_stop_is_not_asked_while_the_model_calls_tools(project):
    policy = Policy("pydantic-ai", session_id=session())
    asked: list[str | None] = []
    policy.engine.on("before_stop", lambda e: asked.append(e.last_message))
    model, _ = script("finished", tool="fine")
    await agent(policy, model).run("go")
    assert asked == ["finished"]


async def test_context_on_an_allowed_stop_is_refused(project):
    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("before_stop", lambda e: context("remember this"))
    model, _ = script("done")
    with pytest.raises(DecisionNotSupported, match="before_stop"):
        await agent(policy, model).run("go")


async def test_user_input_respond_answers_without_the_model(project):
    sid = session()
    policy = Policy("pydantic-ai", session_id=sid)
    policy.engine.on("user_input", lambda e: respond("We are closed on Sundays."))
    ended: list[str | None] = []
    policy.engine.on("agent_end", lambda e: ended.append(e.final_text))
    model, read = script("never")
    result = await agent(policy, model).run("open today?")
    assert read == []
    assert result.output == "We are closed on Sundays."
    assert policy.engine.drain(10)
    assert ended == ["We are closed on Sundays."]
    assert any(e == "user_input" and v == "respond" for e, v, _, _ in audit(sid))


async def test_a_gate_hook_on_subagent_stop_still_refuses_the_run(project):
    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("subagent_stop", lambda e: block("not yet"))
    model, read = script("hi")
    with pytest.raises(ConfigError, match="subagent_stop, which the pydantic-ai adapter"):
        await agent(policy, model).run("go")
    assert read == []


async def test_a_before_stop_block_ends_a_run_stream_which_takes_no_retry(project):
    """run_stream's output is the stream's and pydantic-ai retries none of it: the
    block cannot send the model back, so the run ends instead of stopping unasked."""
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    async def streams(messages: list[ModelMessage], info: AgentInfo) -> Any:
        yield "done"

    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on("before_stop", lambda e: block("run the tests first"))
    model, _ = script("done")
    a = agent(policy, FunctionModel(model.function, stream_function=streams))
    with pytest.raises(UnexpectedModelBehavior, match="retries are not supported"):
        async with a.run_stream("go") as streamed:
            await streamed.get_output()


async def test_llm_error_counts_the_failures_of_one_call_and_stops_retrying_at_the_cap(project):
    policy = Policy("pydantic-ai", session_id=session())
    attempts: list[int] = []
    policy.engine.on("llm_error", lambda e: attempts.append(e.attempt) or retry())
    model, read = script(*[ConnectionError("upstream 503")] * 4)
    a: Agent[None, str] = Agent(model, retries={"output": 5},
                                capabilities=[Interlock(policy=policy)])
    with pytest.raises(ConnectionError, match="upstream 503"):
        await a.run("go")
    assert attempts == [1, 2, 3]
    assert len(read) == 3


async def test_llm_error_attempt_counts_only_the_failures_of_the_call(project):
    """A retry the run used before (a before_stop block) is no failed model call."""
    policy = Policy("pydantic-ai", session_id=session())
    attempts: list[int] = []
    policy.engine.on("llm_error", lambda e: attempts.append(e.attempt) or retry())
    policy.engine.on("before_stop", lambda e: block("again") if e.block_count == 0 else None)
    model, _ = script("first", ConnectionError("upstream 503"), "second")
    a: Agent[None, str] = Agent(model, retries={"output": 5},
                                capabilities=[Interlock(policy=policy)])
    assert (await a.run("go")).output == "second"
    assert attempts == [1]


class _Quiet(RealtimeModel):
    """A realtime model whose connection says nothing and ends."""

    @property
    def model_name(self) -> str:
        return "quiet"

    @property
    def system(self) -> str:
        return "test"

    @asynccontextmanager
    async def connect(self, **kwargs: Any) -> AsyncIterator[RealtimeConnection]:
        class Silent(RealtimeConnection):
            async def send(self, content: Any) -> None:
                return None

            async def frames(self) -> AsyncIterator[Any]:
                return
                yield

        yield Silent()


@pytest.mark.filterwarnings("ignore:Capability `Interlock` implements")
@pytest.mark.parametrize("event", ["before_llm_call", "after_llm_call", "model_select",
                                   "llm_error", "before_stop", "user_input"])
async def test_a_realtime_session_refuses_a_gate_hook_on_what_it_never_asks(project, event):
    # A realtime session calls no model-request or output hook, and what the user
    # says in it is no run prompt: a hook that decides there would never be asked.
    policy = Policy("pydantic-ai", session_id=session())
    policy.engine.on(event, lambda e: None)
    a: Agent[None, str] = Agent(capabilities=[Interlock(policy=policy)])
    # A classic run first: the check is made per kind of run, not once per revision.
    model, _ = script("hello")
    await a.run("go", model=model)
    with pytest.raises(ConfigError, match=f"{event}, which the pydantic-ai adapter"):
        async with a.realtime(_Quiet()).session():
            pass


def external(*names: str) -> ExternalToolset[None]:
    """Tools the application runs itself: the run hands their calls out."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    return ExternalToolset([ToolDefinition(name=n, parameters_json_schema=schema) for n in names])


async def test_an_external_tool_call_passes_before_tool_call_before_it_is_handed_out(project):
    # The project's policy blocks delete_file: the model reads the block, and the
    # run does not hand the call to the application to run.
    policy = Policy("pydantic-ai", session_id=session())
    model, read = script("done", tool="delete_file")
    a: Agent[None, str | DeferredToolRequests] = Agent(
        model, capabilities=[Interlock(policy=policy)], toolsets=[external("delete_file")],
        output_type=[str, DeferredToolRequests])
    result = await a.run("delete a")
    assert result.output == "done"
    assert "deleting files is not allowed" in read[1][-1]


async def test_an_allowed_external_call_is_handed_out_and_a_deferring_tool_judged_once(project):
    policy = Policy("pydantic-ai", session_id=session())
    judged: list[str] = []
    policy.engine.on("before_tool_call", lambda e: judged.append(e.tool_name))
    model, _ = script("done", tool="lookup")
    a: Agent[None, str | DeferredToolRequests] = Agent(
        model, capabilities=[Interlock(policy=policy)], toolsets=[external("lookup")],
        output_type=[str, DeferredToolRequests])
    result = await a.run("look a up")
    assert isinstance(result.output, DeferredToolRequests)
    assert [c.tool_name for c in result.output.calls] == ["lookup"]

    model, _ = script("done", tool="later")
    result = await deferring(model, policy).run("later a")
    assert isinstance(result.output, DeferredToolRequests)
    assert judged == ["lookup", "later"]


def deferring(model: Any, policy: Policy) -> Agent[None, str | DeferredToolRequests]:
    """An agent under ``policy`` whose one tool, ``later``, defers itself
    (``CallDeferred``): the application runs it and gives its result back."""
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model, capabilities=[Interlock(policy=policy)], output_type=[str, DeferredToolRequests])

    @agent.tool_plain
    def later(path: str) -> str:
        """Runs elsewhere."""
        raise CallDeferred

    return agent


def redacting() -> tuple[Policy, list[Any]]:
    """A policy whose after_tool_call hook hides the key ``sk-live-123``, and the
    results that hook read."""
    policy = Policy("pydantic-ai", session_id=session())
    results: list[Any] = []
    policy.engine.on("after_tool_call", lambda e: results.append(e.result) or modify(
        result=str(e.result).replace("sk-live-123", "[key]")), modifies=True)
    return policy, results


@pytest.mark.parametrize("tool", ["lookup", "later"], ids=["external", "deferring-itself"])
async def test_a_deferred_call_s_result_passes_after_tool_call_before_the_model_reads_it(
        project, tool):
    # An external tool's call, or a function tool's that raised CallDeferred: the
    # application's result reaches the model only through after_tool_call.
    from pydantic_ai import DeferredToolResults

    policy, results = redacting()
    model, read = script("done", tool=tool)
    a = deferring(model, policy) if tool == "later" else Agent(
        model, capabilities=[Interlock(policy=policy)], toolsets=[external("lookup")],
        output_type=[str, DeferredToolRequests])
    paused = await a.run(f"{tool} a")
    assert isinstance(paused.output, DeferredToolRequests)
    result = await a.run(message_history=paused.all_messages(), deferred_tool_results=(
        DeferredToolResults(calls={"c1": "found key sk-live-123"})))
    assert result.output == "done"
    assert results == ["found key sk-live-123"]
    assert read[1][-1] == "found key [key]"
    assert "sk-live-123" not in str(result.all_messages())


async def test_a_deferred_call_handler_listed_first_still_lets_the_policy_judge_first(project):
    # HandleDeferredToolCalls runs external calls inline: before_tool_call judges each
    # call before the handler sees it, wherever the capability is listed.
    from pydantic_ai import DeferredToolResults
    from pydantic_ai.capabilities import HandleDeferredToolCalls

    handed: list[str] = []

    def run_them(ctx: Any, requests: DeferredToolRequests) -> DeferredToolResults:
        handed.extend(c.tool_name for c in requests.calls)
        return DeferredToolResults(calls={c.tool_call_id: "deleted" for c in requests.calls})

    policy = Policy("pydantic-ai", session_id=session())
    model, read = script("done", tool="delete_file")
    a: Agent[None, str] = Agent(model, toolsets=[external("delete_file")], capabilities=[
        HandleDeferredToolCalls(handler=run_them), Interlock(policy=policy)])
    assert (await a.run("delete a")).output == "done"
    assert handed == []
    assert "deleting files is not allowed" in read[1][-1]


async def test_a_deferring_tool_answered_inline_passes_after_tool_call(project):
    from pydantic_ai import DeferredToolResults
    from pydantic_ai.capabilities import HandleDeferredToolCalls

    def answer(ctx: Any, requests: DeferredToolRequests) -> DeferredToolResults:
        return DeferredToolResults(calls={c.tool_call_id: "found key sk-live-123"
                                          for c in requests.calls})

    policy, results = redacting()
    model, read = script("done", tool="later")
    a: Agent[None, str] = Agent(model, capabilities=[
        Interlock(policy=policy), HandleDeferredToolCalls(handler=answer)])

    @a.tool_plain
    def later(path: str) -> str:
        """Runs elsewhere."""
        raise CallDeferred

    result = await a.run("later a")
    assert result.output == "done"
    assert results == ["found key sk-live-123"]
    assert read[1][-1] == "found key [key]"
