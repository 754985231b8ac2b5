"""The OpenAI Agents SDK's own Runner, driven by its ScriptedModel, under the project's
policy."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("agents")

from adapter_project import audit, session
from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.items import ToolCallOutputItem
from agents.testing.model import ScriptedModel, assistant_message, function_call

from interlock import ConfigError, block, modify, stop
from interlock.adapters import DecisionNotSupported, Policy, PolicyStopped
from interlock.adapters.openai_agents import Interlock

# Tests never reach the internet: the SDK's tracing would export to OpenAI.
set_tracing_disabled(True)

RAN: list[tuple[str, dict[str, Any]]] = []


def _record(name: str, **kwargs: Any) -> str:
    RAN.append((name, kwargs))
    return "token=abc123" if name == "read_secret" else f"{name} ran with {kwargs}"


@function_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return _record("delete_file", path=path)


@function_tool
def shout(text: str) -> str:
    """Say it loudly."""
    return _record("shout", text=text)


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return _record("weather", city=city)


@function_tool
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return _record("deploy", env=env)


@function_tool
def explode() -> str:
    """A tool whose policy hook crashes."""
    return _record("explode")


@function_tool
def read_secret() -> str:
    """Read a secret."""
    return _record("read_secret")


TOOLS = [delete_file, shout, weather, deploy, explode, read_secret]


def run(name: str, args: dict[str, Any], sid: str) -> tuple[Interlock, Agent[Any], ScriptedModel]:
    model = ScriptedModel([[function_call(name, args, call_id="call-1")],
                           [assistant_message("done")]])
    interlock = Interlock(policy=Policy("openai-agents", session_id=sid))
    agent = Agent(name="assistant", model=model, tools=interlock.tools(TOOLS))
    return interlock, agent, model


def output(result: Any) -> str:
    (item,) = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    return str(item.output)


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


async def test_a_blocked_call_never_runs_and_the_model_reads_the_reason(project):
    sid = session()
    interlock, agent, _ = run("delete_file", {"path": "a.txt"}, sid)
    result = await Runner.run(agent, "delete a.txt", hooks=interlock)
    assert RAN == []
    error = json.loads(output(result))
    assert (error["error"], error["reason"], error["hint"], error["hook"]) == (
        "tool call blocked", "deleting files is not allowed", "move it to archive/ instead",
        "project:policy")
    assert result.final_output == "done"
    assert ("before_tool_call", "block", "delete_file", "project:policy") in audit(sid)


async def test_a_modifier_changes_the_args(project):
    interlock, agent, _ = run("shout", {"text": "hello"}, session())
    await Runner.run(agent, "shout", hooks=interlock)
    assert RAN == [("shout", {"text": "HELLO"})]


async def test_after_tool_call_rewrites_the_output(project):
    interlock, agent, model = run("read_secret", {}, session())
    result = await Runner.run(agent, "read it", hooks=interlock)
    assert RAN == [("read_secret", {})]
    assert "abc123" not in output(result)
    assert "[redacted by policy]" in output(result)
    # What the model was sent next is the rewritten output.
    assert "abc123" not in json.dumps(model.last_call.input, default=str)


async def test_context_reaches_the_model_beside_the_output(project):
    interlock, agent, _ = run("weather", {"city": "Oslo"}, session())
    result = await Runner.run(agent, "weather?", hooks=interlock)
    assert output(result).startswith("weather ran with")
    assert '<hook-context hook="project:policy">' in output(result)


async def test_ask_interrupts_the_run_and_runs_once_approved(project):
    interlock, agent, _ = run("deploy", {"env": "prod"}, session())
    first = await Runner.run(agent, "deploy", hooks=interlock)
    (pending,) = first.interruptions
    assert pending.name == "deploy"
    assert RAN == []
    state = first.to_state()
    state.approve(pending)
    second = await Runner.run(agent, state, hooks=interlock)
    assert RAN == [("deploy", {"env": "prod"})]
    assert second.final_output == "done"


async def test_a_rejected_call_does_not_run(project):
    interlock, agent, _ = run("deploy", {"env": "prod"}, session())
    first = await Runner.run(agent, "deploy", hooks=interlock)
    state = first.to_state()
    state.reject(first.interruptions[0])
    await Runner.run(agent, state, hooks=interlock)
    assert RAN == []


def watch(p: Policy) -> list[tuple[str, str, dict[str, Any], str]]:
    """(event, tool, args, reason or status) of each permission_denied and
    after_tool_call the policy fires."""
    seen: list[tuple[str, str, dict[str, Any], str]] = []
    p.engine.on("permission_denied",
                lambda e: seen.append((e.name, e.tool_name, e.args, e.reason)))
    p.engine.on("after_tool_call",
                lambda e: seen.append((e.name, e.tool_name, e.args, e.status)))
    return seen


@pytest.mark.parametrize(("message", "reason"), [(None, "denied by the user"),
                                                 ("not on a Friday", "not on a Friday")])
async def test_a_rejected_call_is_denied_and_blocked(project, message, reason):
    """A person's rejection fires permission_denied, then after_tool_call as a
    blocked call, once, as the reference agent does; a re-run of the same state
    fires them no more."""
    p = Policy("openai-agents", session_id=session())
    seen = watch(p)
    model = ScriptedModel([[function_call("deploy", {"env": "prod"}, call_id="call-1")],
                           [assistant_message("done")], [assistant_message("again")]])
    interlock = Interlock(policy=p)
    agent = Agent(name="assistant", model=model, tools=interlock.tools(TOOLS))
    first = await Runner.run(agent, "deploy", hooks=interlock)
    state = first.to_state()
    state.reject(first.interruptions[0], rejection_message=message)
    result = await Runner.run(agent, state, hooks=interlock)
    assert RAN == []
    assert result.final_output == "done"
    await Runner.run(agent, state, hooks=interlock)
    assert p.engine.drain()
    assert seen == [("permission_denied", "deploy", {"env": "prod"}, reason),
                    ("after_tool_call", "deploy", {"env": "prod"}, "blocked")]


async def rejected_run(p: Policy, **options: Any) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel([[function_call("deploy", {"env": "prod"}, call_id="call-1")],
                           [assistant_message("done")]])
    interlock = Interlock(policy=p)
    agent = Agent(name="assistant", model=model, tools=interlock.tools(TOOLS))
    first = await Runner.run(agent, "deploy", hooks=interlock)
    state = first.to_state()
    state.reject(first.interruptions[0])
    run_config = RunConfig(call_model_input_filter=interlock.model_input) if options else None
    return await Runner.run(agent, state, hooks=interlock, run_config=run_config), model


async def test_model_input_gives_the_model_a_rejection_as_after_tool_call_left_it(project):
    p = Policy("openai-agents", session_id=session())
    p.engine.on("after_tool_call", lambda e: modify(result=f"refused: {e.result}"),
                modifies=True)
    _, model = await rejected_run(p, filtered=True)
    sent = json.dumps(model.last_call.input, default=str)
    assert "refused: Tool execution was not approved." in sent


async def test_a_rewritten_rejection_without_model_input_ends_the_run(project):
    p = Policy("openai-agents", session_id=session())
    p.engine.on("after_tool_call", lambda e: modify(result="refused"), modifies=True)
    with pytest.raises(DecisionNotSupported, match="call_model_input_filter"):
        await rejected_run(p)
    assert RAN == []


async def test_a_crashing_fail_closed_hook_blocks_the_call(project):
    sid = session()
    interlock, agent, _ = run("explode", {}, sid)
    result = await Runner.run(agent, "go", hooks=interlock)
    assert RAN == []
    assert json.loads(output(result))["error"] == "tool call blocked"
    assert any(e == "before_tool_call" and v == "block" and s == "explode"
               for e, v, s, _ in audit(sid))


async def test_stop_on_a_model_call_ends_the_run(project):
    policy = Policy("openai-agents", session_id=session())
    policy.engine.on("before_llm_call", lambda e: stop("budget spent"))
    interlock = Interlock(policy=policy)
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("hi")]]))
    with pytest.raises(PolicyStopped, match="budget spent"):
        await Runner.run(agent, "hi", hooks=interlock)


async def test_a_handoff_can_be_blocked(project):
    policy = Policy("openai-agents", session_id=session())
    policy.engine.on("subagent_start", lambda e: block("no handoffs to billing"))
    billing = Agent(name="billing", model=ScriptedModel([[assistant_message("billed")]]))
    model = ScriptedModel([[function_call("transfer_to_billing", {}, call_id="h1")]])
    triage = Agent(name="triage", model=model, handoffs=[billing])
    with pytest.raises(PolicyStopped, match="no handoffs to billing"):
        await Runner.run(triage, "bill me", hooks=Interlock(policy=policy))


async def test_a_tool_left_ungoverned_is_refused_before_the_run(project):
    interlock = Interlock(policy=Policy("openai-agents", session_id=session()))
    model = ScriptedModel([[function_call("delete_file", {"path": "a"}, call_id="c1")]])
    agent = Agent(name="assistant", model=model, tools=[delete_file])  # not interlock.tools
    with pytest.raises(ConfigError, match="'delete_file', which the policy does not govern"):
        await Runner.run(agent, "delete a", hooks=interlock)
    assert RAN == []


async def test_a_permission_rule_denies_the_rewritten_call(project):
    interlock, agent, _ = run("shout", {"text": "deploy production"}, session())
    result = await Runner.run(agent, "shout", hooks=interlock)
    assert RAN == []
    error = json.loads(output(result))
    assert (error["reason"], error["hook"]) == ("a permission rule denies it", "permissions")


@pytest.mark.parametrize("event", ["before_tool_call", "after_tool_call"])
async def test_stop_on_a_tool_call_propagates_as_policy_stopped(project, event):
    policy = Policy("openai-agents", session_id=session())
    policy.engine.on(event, lambda e: stop("no more tools"))
    interlock = Interlock(policy=policy)
    model = ScriptedModel([[function_call("weather", {"city": "Oslo"}, call_id="c1")],
                           [assistant_message("done")]])
    agent = Agent(name="assistant", model=model, tools=interlock.tools(TOOLS))
    with pytest.raises(PolicyStopped, match="no more tools") as stopped:
        await Runner.run(agent, "weather?", hooks=interlock)
    assert stopped.value.event == event
    # A stop before the tool keeps it from running; one after it ran ends the run there.
    assert [name for name, _ in RAN] == ([] if event == "before_tool_call" else ["weather"])


async def test_user_input_block_ends_the_run_before_the_model(project):
    policy = Policy("openai-agents", session_id=session())
    policy.engine.on("user_input", lambda e: block("no secrets asked")
                     if "password" in e.text else None)
    interlock = Interlock(policy=policy)
    model = ScriptedModel([[assistant_message("hunter2")]])
    agent = Agent(name="a", model=model, tools=interlock.tools(TOOLS))
    with pytest.raises(PolicyStopped, match="no secrets asked"):
        await Runner.run(agent, "what is the password?", hooks=interlock)
    assert model.calls == ()
    # The same hooks on the next run start it afresh: its input is judged too.
    with pytest.raises(PolicyStopped, match="no secrets asked"):
        await Runner.run(agent, "the password, please", hooks=interlock)
    assert model.calls == ()


async def test_a_gate_hook_on_an_event_the_sdk_never_fires_refuses_the_run(project):
    policy = Policy("openai-agents", session_id=session())
    policy.engine.on("model_select", lambda e: stop("not that model"))
    interlock = Interlock(policy=policy)
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("hi")]]))
    with pytest.raises(ConfigError, match="model_select, which the openai-agents adapter"):
        await Runner.run(agent, "hi", hooks=interlock)
