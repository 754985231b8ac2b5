"""The OpenAI Agents SDK's own Runner, driven by its ScriptedModel: how a tool's failure,
a final output, a handed-off agent's end and the session's end meet the policy."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("agents")

from adapter_project import session
from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.items import ToolCallOutputItem
from agents.testing.model import ScriptedModel, assistant_message, function_call

from interlock import block, context, modify, retry, stop
from interlock.adapters import DecisionNotSupported, Policy, PolicyStopped
from interlock.adapters.openai_agents import Interlock

set_tracing_disabled(True)

FAILS: list[str] = []
"""Errors the flaky tool raises, one per call, before it succeeds."""
CALLS: list[str] = []


@function_tool
def flaky(path: str) -> str:
    """Read a file that may not be there yet."""
    CALLS.append(path)
    if FAILS:
        raise OSError(FAILS.pop(0))
    return f"read {path}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    FAILS.clear()
    CALLS.clear()


def policy() -> Policy:
    return Policy("openai-agents", session_id=session())


def tool_run(interlock: Interlock) -> tuple[Agent[Any], ScriptedModel]:
    model = ScriptedModel([[function_call("flaky", {"path": "a.txt"}, call_id="c1")],
                           [assistant_message("done")]])
    return Agent(name="assistant", model=model, tools=interlock.tools([flaky])), model


def output(result: Any) -> str:
    (item,) = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    return str(item.output)


# -- tool_error -------------------------------------------------------------------
async def test_a_tool_error_hook_rewrites_the_error_the_model_reads(project):
    p = policy()
    seen: list[tuple[str, str, int]] = []

    def rewrite(e: Any) -> Any:
        seen.append((e.tool_name, e.error, e.attempt))
        return modify(error="the file is not there yet", context="try again in a minute")

    p.engine.on("tool_error", rewrite, modifies=True)
    interlock = Interlock(policy=p)
    agent, model = tool_run(interlock)
    FAILS.append("No such file: /home/me/a.txt")
    result = await Runner.run(agent, "read a.txt", hooks=interlock)
    assert seen == [("flaky", "OSError: No such file: /home/me/a.txt", 1)]
    assert output(result).startswith("the file is not there yet")
    assert "try again in a minute" in output(result)
    assert "/home/me" not in json.dumps(model.last_call.input, default=str)


async def test_a_tool_error_hook_retries_the_tool(project):
    p = policy()
    p.engine.on("tool_error", lambda e: retry() if e.attempt == 1 else None)
    gated: list[str] = []
    p.engine.on("before_tool_call", lambda e: gated.append(e.tool_name))
    interlock = Interlock(policy=p)
    agent, _ = tool_run(interlock)
    FAILS.append("not yet")
    result = await Runner.run(agent, "read a.txt", hooks=interlock)
    assert CALLS == ["a.txt", "a.txt"]
    assert output(result) == "read a.txt"
    assert gated == ["flaky", "flaky"]  # a retry passes before_tool_call again


async def test_retries_are_capped_and_the_last_error_reaches_the_model(project):
    p = policy()
    p.engine.on("tool_error", lambda e: retry())
    interlock = Interlock(policy=p)
    agent, _ = tool_run(interlock)
    FAILS.extend(["one", "two", "three", "four"])
    result = await Runner.run(agent, "read a.txt", hooks=interlock)
    assert len(CALLS) == 3
    # The SDK's own failure message, as without a hook.
    assert output(result) == "An error occurred while running the tool. Please try again."


@pytest.mark.parametrize("judged", [True, False])
async def test_after_tool_call_sees_a_failed_call_as_an_error(project, judged):
    p = policy()
    statuses: list[str] = []
    p.engine.on("after_tool_call", lambda e: statuses.append(e.status))
    if judged:
        p.engine.on("tool_error", lambda e: None)
    interlock = Interlock(policy=p)
    agent, _ = tool_run(interlock)
    FAILS.append("boom")
    await Runner.run(agent, "read a.txt", hooks=interlock)
    assert statuses == ["error"]


@function_tool(failure_error_function=None)
def strict(path: str) -> str:
    """A tool whose failure ends the run."""
    CALLS.append(path)
    raise OSError("disk gone")


async def test_a_tool_set_to_raise_is_judged_once_and_still_raises(project):
    p = policy()
    seen: list[int] = []
    p.engine.on("tool_error", lambda e: seen.append(e.attempt))
    interlock = Interlock(policy=p)
    model = ScriptedModel([[function_call("strict", {"path": "a"}, call_id="c1")]])
    agent = Agent(name="assistant", model=model, tools=interlock.tools([strict]))
    with pytest.raises(Exception, match="disk gone"):
        await Runner.run(agent, "read a", hooks=interlock)
    assert seen == [1]


async def test_a_tool_set_to_raise_raises_while_no_hook_is_on_tool_error(project):
    # As without the adapter: the run ends with the tool's error, and neither the
    # model nor after_tool_call reads an "ok" result of None.
    p = policy()
    statuses: list[str] = []
    p.engine.on("after_tool_call", lambda e: statuses.append(e.status))
    interlock = Interlock(policy=p)
    model = ScriptedModel([[function_call("strict", {"path": "a"}, call_id="c1")],
                           [assistant_message("done")]])
    agent = Agent(name="assistant", model=model, tools=interlock.tools([strict]))
    with pytest.raises(Exception, match="disk gone"):
        await Runner.run(agent, "read a", hooks=interlock)
    assert statuses == []


async def test_a_rewrite_of_an_error_no_model_reads_ends_the_run(project):
    # The tool raises out of the run: the model would never read the rewrite.
    p = policy()
    p.engine.on("tool_error", lambda e: modify(error="softened"), modifies=True)
    interlock = Interlock(policy=p)
    model = ScriptedModel([[function_call("strict", {"path": "a"}, call_id="c1")]])
    agent = Agent(name="assistant", model=model, tools=interlock.tools([strict]))
    with pytest.raises(DecisionNotSupported, match="tool_error"):
        await Runner.run(agent, "read a", hooks=interlock)


async def test_a_hand_made_function_tool_that_raises_meets_tool_error(project):
    async def invoke(ctx: Any, raw: str) -> str:
        CALLS.append(raw)
        raise RuntimeError("backend down")

    hand_made = FunctionTool(name="fetch", description="Fetch.", on_invoke_tool=invoke,
                             params_json_schema={"type": "object", "properties": {},
                                                 "additionalProperties": False})
    p = policy()
    p.engine.on("tool_error", lambda e: modify(error=f"fetch failed: {e.error}"),
                modifies=True)
    interlock = Interlock(policy=p)
    model = ScriptedModel([[function_call("fetch", {}, call_id="c1")],
                           [assistant_message("done")]])
    agent = Agent(name="assistant", model=model, tools=interlock.tools([hand_made]))
    result = await Runner.run(agent, "fetch", hooks=interlock)
    assert output(result) == "fetch failed: RuntimeError: backend down"


# -- before_stop and subagent_stop --------------------------------------------------
async def test_before_stop_sees_the_final_output(project):
    p = policy()
    seen: list[tuple[str | None, str | None]] = []
    p.engine.on("before_stop", lambda e: seen.append((e.last_message, e.prompt)))
    interlock = Interlock(policy=p)
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("all done")]]))
    result = await Runner.run(agent, "finish it", hooks=interlock)
    assert result.final_output == "all done"
    assert seen == [("all done", "finish it")]


@pytest.mark.parametrize("decision", [block("run the tests first"),
                                      context("remember the tests")])
async def test_before_stop_cannot_keep_the_run_going_so_the_run_ends(project, decision):
    # block on before_stop means "keep working"; the SDK's run cannot be sent
    # back to its model once a final output is chosen, so the run ends instead
    # of returning the output the policy refused.
    p = policy()
    p.engine.on("before_stop", lambda e: decision)
    interlock = Interlock(policy=p)
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("all done")]]))
    with pytest.raises(DecisionNotSupported, match="before_stop"):
        await Runner.run(agent, "finish it", hooks=interlock)


async def test_stop_on_before_stop_ends_the_run(project):
    p = policy()
    p.engine.on("before_stop", lambda e: stop("that answer leaks a secret"))
    interlock = Interlock(policy=p)
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("hunter2")]]))
    with pytest.raises(PolicyStopped, match="leaks a secret"):
        await Runner.run(agent, "the password?", hooks=interlock)


def handoff_run(interlock: Interlock) -> Agent[Any]:
    billing = Agent(name="billing", model=ScriptedModel([[assistant_message("billed")]]))
    model = ScriptedModel([[function_call("transfer_to_billing", {}, call_id="h1")]])
    return Agent(name="triage", model=model, handoffs=[billing])


async def test_subagent_stop_fires_when_the_handed_off_agent_ends(project):
    p = policy()
    seen: list[tuple[str, str | None]] = []
    p.engine.on("subagent_stop", lambda e: seen.append((e.child_session_id, e.result)))
    stops: list[str | None] = []
    p.engine.on("before_stop", lambda e: stops.append(e.last_message))
    interlock = Interlock(policy=p)
    result = await Runner.run(handoff_run(interlock), "bill me", hooks=interlock)
    assert result.final_output == "billed"
    assert seen == [("billing", "billed")]
    assert stops == ["billed"]  # the handed-off agent's output ends the whole run


async def test_subagent_stop_block_ends_the_run(project):
    p = policy()
    p.engine.on("subagent_stop", lambda e: block("check the invoice first"))
    interlock = Interlock(policy=p)
    with pytest.raises(DecisionNotSupported, match="subagent_stop"):
        await Runner.run(handoff_run(interlock), "bill me", hooks=interlock)


async def test_the_first_agent_ending_is_no_subagent_stop(project):
    p = policy()
    seen: list[str] = []
    p.engine.on("subagent_stop", lambda e: seen.append(e.child_session_id))
    interlock = Interlock(policy=p)
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("hi")]]))
    await Runner.run(agent, "hi", hooks=interlock)
    assert seen == []


# -- session_end ----------------------------------------------------------------------
async def test_aclose_ends_the_session(project):
    p = policy()
    ended: list[str] = []
    p.engine.on("session_end", lambda e: ended.append(e.reason))
    interlock = Interlock(policy=p)
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("hi")]]))
    await Runner.run(agent, "hi", hooks=interlock)
    assert ended == []  # a run's end is agent_end; the session goes on
    await interlock.aclose()
    await interlock.aclose()  # once only
    assert p.engine.drain()
    assert ended == ["exit"]


async def test_a_session_that_never_started_does_not_end(project):
    p = policy()
    ended: list[str] = []
    p.engine.on("session_end", lambda e: ended.append(e.reason))
    async with Interlock(policy=p):
        pass
    assert p.engine.drain()
    assert ended == []


async def test_a_run_after_the_session_ended_starts_a_new_one(project):
    p = policy()
    started: list[str] = []
    p.engine.on("session_start", lambda e: started.append(e.source))
    interlock = Interlock(policy=p)
    for _ in range(2):
        agent = Agent(name="a", model=ScriptedModel([[assistant_message("hi")]]))
        await Runner.run(agent, "hi", hooks=interlock)
        interlock.close()
    assert started == ["startup", "startup"]


# -- agent_end on a run the policy ends -------------------------------------------------
@pytest.mark.parametrize(("event", "decision", "status"), [
    ("before_llm_call", stop("budget spent"), "stopped"),
    ("before_tool_call", stop("no more tools"), "stopped"),
    ("before_stop", block("keep going"), "error"),
])
async def test_a_run_the_policy_ends_fires_agent_end_once(project, event, decision, status):
    p = policy()
    p.engine.on(event, lambda e: decision)
    ended: list[str] = []
    p.engine.on("agent_end", lambda e: ended.append(e.status))
    interlock = Interlock(policy=p)
    agent, _ = tool_run(interlock)
    with pytest.raises((PolicyStopped, DecisionNotSupported)):
        await Runner.run(agent, "read a.txt", hooks=interlock)
    assert p.engine.drain()
    assert ended == [status]


async def test_a_run_refused_before_its_agent_started_fires_no_agent_end(project):
    p = policy()
    p.engine.on("user_input", lambda e: block("not that"))
    ended: list[str] = []
    p.engine.on("agent_end", lambda e: ended.append(e.status))
    interlock = Interlock(policy=p)
    agent, _ = tool_run(interlock)
    with pytest.raises(PolicyStopped):
        await Runner.run(agent, "read a.txt", hooks=interlock)
    assert p.engine.drain()
    assert ended == []


# -- user_input's modify and context, through RunConfig.call_model_input_filter ----------
def sent(model: ScriptedModel) -> list[str]:
    """The user messages of each model call, as text."""
    return [json.dumps([i for i in call.input if isinstance(i, dict) and i.get("role") == "user"])
            for call in model.calls]


async def test_a_user_input_rewrite_is_what_the_model_reads(project):
    p = policy()
    p.engine.on("user_input", lambda e: modify(text=e.text.replace("hunter2", "[secret]")),
                modifies=True)
    interlock = Interlock(policy=p)
    agent, model = tool_run(interlock)
    result = await Runner.run(agent, "my password is hunter2; read a.txt", hooks=interlock,
                              run_config=RunConfig(call_model_input_filter=interlock.model_input))
    assert result.final_output == "done"
    assert len(model.calls) == 2  # every call of the run, not the first only
    for text in sent(model):
        assert "hunter2" not in text
        assert "my password is [secret]; read a.txt" in text


async def test_session_and_input_context_reach_the_model(project):
    p = policy()
    p.engine.on("session_start", lambda e: context("the user is on call"))
    p.engine.on("user_input", lambda e: context("answer briefly"))
    interlock = Interlock(policy=p)
    agent, model = tool_run(interlock)
    await Runner.run(agent, "read a.txt", hooks=interlock,
                     run_config=RunConfig(call_model_input_filter=interlock.model_input))
    for text in sent(model):
        assert "read a.txt" in text
        assert "the user is on call" in text
        assert "answer briefly" in text


async def test_a_rewrite_with_no_input_filter_ends_the_run_before_the_model(project):
    p = policy()
    p.engine.on("user_input", lambda e: modify(text="something else"), modifies=True)
    interlock = Interlock(policy=p)
    agent, model = tool_run(interlock)
    with pytest.raises(DecisionNotSupported, match="call_model_input_filter"):
        await Runner.run(agent, "read a.txt", hooks=interlock)
    assert model.calls == ()


async def test_respond_on_user_input_ends_the_run(project):
    from interlock import respond

    p = policy()
    p.engine.on("user_input", lambda e: respond("we are closed"))
    interlock = Interlock(policy=p)
    agent, model = tool_run(interlock)
    with pytest.raises(DecisionNotSupported, match="respond"):
        await Runner.run(agent, "read a.txt", hooks=interlock,
                         run_config=RunConfig(call_model_input_filter=interlock.model_input))
    assert model.calls == ()


async def test_context_on_an_input_of_several_messages_ends_the_run(project):
    p = policy()
    p.engine.on("user_input", lambda e: context("answer briefly"))
    interlock = Interlock(policy=p)
    agent, model = tool_run(interlock)
    given = [{"role": "user", "content": "read a.txt"}, {"role": "user", "content": "now"}]
    with pytest.raises(DecisionNotSupported, match="one text message"):
        await Runner.run(agent, given, hooks=interlock,
                         run_config=RunConfig(call_model_input_filter=interlock.model_input))
    assert model.calls == ()


async def test_a_run_resumed_by_other_hooks_is_no_subagent_stop(project):
    # The project's policy asks for deploy; the approved run resumes with a new
    # Interlock, whose first agent is the one that ends.
    seen: list[str] = []

    def hooks() -> Interlock:
        p = policy()
        p.engine.on("subagent_stop", lambda e: seen.append(e.child_session_id))
        return Interlock(policy=p)

    @function_tool
    def deploy(env: str) -> str:
        """Deploy."""
        return f"deployed {env}"

    first = hooks()
    model = ScriptedModel([[function_call("deploy", {"env": "prod"}, call_id="c1")],
                           [assistant_message("done")]])
    agent = Agent(name="assistant", model=model, tools=first.tools([deploy]))
    paused = await Runner.run(agent, "deploy", hooks=first)
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    result = await Runner.run(agent, state, hooks=hooks())
    assert result.final_output == "done"
    assert seen == []


async def test_a_streamed_run_meets_the_same_ends(project):
    p = policy()
    p.engine.on("user_input", lambda e: modify(text="read b.txt"), modifies=True)
    p.engine.on("tool_error", lambda e: retry() if e.attempt == 1 else None)
    p.engine.on("before_stop", lambda e: stop("not that answer"))
    interlock = Interlock(policy=p)
    agent, model = tool_run(interlock)
    FAILS.append("not yet")
    streamed = Runner.run_streamed(
        agent, "read a.txt", hooks=interlock,
        run_config=RunConfig(call_model_input_filter=interlock.model_input))
    with pytest.raises(PolicyStopped, match="not that answer"):
        async for _ in streamed.stream_events():
            pass
    assert CALLS == ["a.txt", "a.txt"]
    assert all("read b.txt" in text and "read a.txt" not in text for text in sent(model))


# -- runs at the same time on one Interlock ------------------------------------------------
async def test_runs_at_the_same_time_each_get_their_own_input_rewrite(project):
    # Run "a" redacts its input; run "b", which changes nothing, starts before a's
    # first model call: a's model still reads a's rewrite.
    p = policy()
    p.engine.on("user_input", lambda e: modify(text=e.text.replace("hunter2", "[secret]")),
                modifies=True)
    interlock = Interlock(policy=p)
    models = {n: ScriptedModel([[assistant_message(f"{n} done")]]) for n in "ab"}
    b_started = asyncio.Event()

    async def after_b_started(data: Any) -> Any:
        if data.agent.name == "a":
            await b_started.wait()
        else:
            b_started.set()
        return await interlock.model_input(data)

    config = RunConfig(call_model_input_filter=after_b_started)
    await asyncio.gather(*(
        Runner.run(Agent(name=n, model=models[n]), given, hooks=interlock, run_config=config)
        for n, given in (("a", "my password is hunter2"), ("b", "hello"))))
    assert sent(models["a"]) == [json.dumps([{"content": "my password is [secret]",
                                              "role": "user"}])]
    assert sent(models["b"]) == [json.dumps([{"content": "hello", "role": "user"}])]


async def test_a_tool_call_keeps_its_own_gate_when_another_run_uses_its_call_id(project):
    # Both models name their call "c1"; run a's (delete_file) is blocked by the
    # project's policy, run b's is not. b's gate is made after a's, and a's call
    # goes on before b's.
    ran: list[str] = []
    b_asked, a_invoked = asyncio.Event(), asyncio.Event()

    async def a_waits(ctx: Any, args: Any, call_id: str) -> bool:
        await b_asked.wait()
        return False

    async def b_waits(ctx: Any, args: Any, call_id: str) -> bool:
        b_asked.set()
        await a_invoked.wait()
        return False

    @function_tool(needs_approval=a_waits)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(f"delete {path}")
        return "deleted"

    @function_tool(needs_approval=b_waits)
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(f"read {path}")
        return "read"

    interlock = Interlock(policy=policy())
    (a_tool,) = interlock.tools([delete_file])
    assert isinstance(a_tool, FunctionTool)
    invoke = a_tool.on_invoke_tool

    async def invoked(ctx: Any, raw: str) -> Any:
        a_invoked.set()
        return await invoke(ctx, raw)

    a_tool.on_invoke_tool = invoked

    def run(name: str, tool: Any) -> Any:
        model = ScriptedModel([[function_call(tool.name, {"path": "notes.txt"}, call_id="c1")],
                               [assistant_message("done")]])
        agent = Agent(name=name, model=model, tools=[tool])
        return Runner.run(agent, f"{tool.name} notes.txt", hooks=interlock)

    a, _ = await asyncio.gather(run("a", a_tool), run("b", *interlock.tools([read_file])))
    assert ran == ["read notes.txt"]
    assert "deleting files is not allowed" in output(a)


async def test_a_tool_error_hook_that_arrives_while_the_tool_runs_is_asked(project):
    # Nothing listened on tool_error as the call began (a hook came with a reload
    # while the tool ran): its retry still applies.
    p = policy()
    interlock = Interlock(policy=p)
    seen: list[int] = []

    @function_tool
    def slow(path: str) -> str:
        """Fails once, as a tool_error hook arrives."""
        CALLS.append(path)
        if len(CALLS) == 1:
            p.engine.on("tool_error", lambda e: seen.append(e.attempt) or retry())
            raise OSError("not yet")
        return f"read {path}"

    model = ScriptedModel([[function_call("slow", {"path": "a.txt"}, call_id="c1")],
                           [assistant_message("done")]])
    agent = Agent(name="assistant", model=model, tools=interlock.tools([slow]))
    result = await Runner.run(agent, "read a.txt", hooks=interlock)
    assert seen == [1]
    assert CALLS == ["a.txt", "a.txt"]
    assert output(result) == "read a.txt"


async def test_an_input_rewrite_a_nested_handoff_history_would_undo_ends_the_run(project):
    # nest_handoff_history folds the run's input into a summary for the next agent,
    # where model_input cannot change it: its model would read the original.
    p = policy()
    p.engine.on("user_input", lambda e: modify(text=e.text.replace("hunter2", "[secret]")),
                modifies=True)
    interlock = Interlock(policy=p)
    second = ScriptedModel([[assistant_message("done")]])
    first = ScriptedModel([[function_call("transfer_to_b", {}, call_id="h1")]])
    agent = Agent(name="a", model=first, handoffs=[Agent(name="b", model=second)])
    with pytest.raises(DecisionNotSupported, match="nest_handoff_history"):
        await Runner.run(agent, "my password is hunter2", hooks=interlock, run_config=RunConfig(
            call_model_input_filter=interlock.model_input, nest_handoff_history=True))
    assert second.calls == ()
    assert "hunter2" not in json.dumps([call.input for call in first.calls])
