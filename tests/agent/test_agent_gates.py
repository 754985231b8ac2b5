"""Every gate decision takes effect in the agent exactly as docs/agent.md says."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from helpers.agent import (
    Recorder,
    call,
    isolated_home,  # noqa: F401 - autouse fixture
    make_agent,
    tool_messages,
)
from interlock import Engine, approve, ask, block, context, modify, respond, retry, stop
from interlock.agent.permissions import rule


async def test_a_blocked_tool_returns_the_structured_error_and_after_tool_call_fires(
        eng, tmp_path):
    eng.on("before_tool_call", lambda e: block("destructive; token=sk-abcdefghijklmnop12345",
                                               hint="delete one file"),
           matcher="terminal", name="no-rm")
    statuses = []
    eng.on("after_tool_call", lambda e: statuses.append((e.status, e.result)))
    steps = [{"tool_calls": [call("terminal", command="touch marker")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert not (tmp_path / "marker").exists()
    error = json.loads(tool_messages(model, 1)[0]["content"])
    assert error == {"error": "tool call blocked", "tool_name": "terminal",
                     "reason": "destructive; token=[REDACTED]", "hint": "delete one file",
                     "hook": "code:no-rm"}
    assert statuses == [("blocked", error)]


async def test_modified_args_are_used_and_revalidated_against_the_schema(eng, tmp_path):
    eng.on("before_tool_call", lambda e: modify(args={"command": "echo safer"}),
           modifies=True, name="rewrite")
    steps = [{"tool_calls": [call("terminal", command="echo original")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert json.loads(tool_messages(model, 1)[0]["content"])["output"] == "safer\n"

    bad = Engine()
    bad.on("before_tool_call", lambda e: modify(args={"command": 42}), modifies=True,
           name="breaks-schema")
    steps = [{"tool_calls": [call("terminal", command="touch marker")]}, {"text": "ok"}]
    agent, model = make_agent(bad, steps, tmp_path)
    await agent.run("go")
    bad.close()
    # An invalid change is the hook's failure; fail closed on before_tool_call = block.
    error = json.loads(tool_messages(model, 1)[0]["content"])
    assert error["error"] == "tool call blocked"
    assert "breaks-schema" in error["reason"]
    assert not (tmp_path / "marker").exists()


async def test_respond_skips_execution_and_returns_the_value(eng, tmp_path):
    eng.on("before_tool_call", lambda e: respond({"cached": True}))
    rec = Recorder(eng)
    steps = [{"tool_calls": [call("terminal", command="touch marker")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert not (tmp_path / "marker").exists()
    assert json.loads(tool_messages(model, 1)[0]["content"]) == {"cached": True}
    assert rec.one("after_tool_call").status == "responded"


async def test_context_goes_into_the_user_message_wrapped_capped_and_apart(eng, tmp_path):
    eng.on("user_input", lambda e: context("A" * 50), name="notes")
    eng.on("before_agent_start", lambda e: context("from start"), name="starter")
    eng.on("before_llm_call", lambda e: context("per call"), name="percall")
    agent, model = make_agent(eng, [{"text": "ok"}], tmp_path, context_cap=20)
    await agent.run("hello")
    system, user = model.calls[0].messages
    assert "from start" not in system["content"]
    assert "AAAA" not in system["content"]
    assert user["content"].startswith("hello\n\n")
    assert '<hook-context hook="code:notes">\n' + "A" * 20 + "... [truncated 30 characters]" \
        in user["content"]
    assert '<hook-context hook="code:starter">\nfrom start\n</hook-context>' in user["content"]
    assert '<hook-context hook="code:percall">\nper call\n</hook-context>' in user["content"]
    stored = agent.session.messages[0]
    assert stored["content"] == "hello"  # the user's words stay the user's
    assert "code:notes" in stored["hook_context"]
    assert "per call" not in stored["hook_context"]


async def test_tool_event_context_goes_into_that_tools_result(eng, tmp_path):
    eng.on("before_tool_call", lambda e: context(f"about {e.args['command']}"), name="ctx")
    eng.on("after_tool_call", lambda e: context("after note"), name="after")
    steps = [{"tool_calls": [call("terminal", command="echo a"),
                             call("terminal", command="echo b")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    a, b = tool_messages(model, 1)
    assert "about echo a" in a["content"]
    assert "about echo b" not in a["content"]
    assert "about echo b" in b["content"]
    assert "after note" in b["content"]
    user = [m for m in model.calls[1].messages if m["role"] == "user"]
    assert all("about echo" not in m["content"] for m in user)


async def test_stop_ends_the_run_and_keeps_the_session_consistent(eng, tmp_path):
    eng.on("before_tool_call", lambda e: stop("budget exhausted"), name="budget")
    steps = [{"tool_calls": [call("terminal", command="echo 1"),
                             call("terminal", command="echo 2")]}]
    agent, model = make_agent(eng, steps, tmp_path)
    result = await agent.run("go")
    assert result.status == "stopped"
    assert result.text == "stopped by code:budget: " \
        "budget exhausted"
    model.assert_done()
    calls = agent.session.messages[1]["tool_calls"]
    results = [m for m in agent.session.messages if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in calls]
    reloaded = agent.store.load(agent.session.id)
    assert reloaded.messages == agent.session.messages


async def test_a_tool_error_retry_goes_back_through_the_gates_and_is_capped(eng, tmp_path):
    attempts = []
    eng.on("tool_error", lambda e: retry("try again"), name="retrier")

    def gate(e):
        attempts.append(e.args["path"])
        return None

    eng.on("before_tool_call", gate)
    steps = [{"tool_calls": [call("read_file", path="missing.txt")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path, tool_retry_cap=2)
    await agent.run("go")
    assert attempts == ["missing.txt"] * 3  # first try + 2 capped retries, each gated
    assert "no such file" in json.loads(tool_messages(model, 1)[0]["content"])["error"]

    # The retry is gated: a check that blocks the second attempt wins.
    guarded = Engine()
    guarded.on("tool_error", lambda e: retry())
    seen = []
    guarded.on("before_tool_call", lambda e: block("once is enough") if seen.append(1) or
               len(seen) > 1 else None)
    agent, model = make_agent(guarded, steps, tmp_path)
    await agent.run("go")
    guarded.close()
    assert json.loads(tool_messages(model, 1)[0]["content"])["reason"] == "once is enough"


async def test_tool_error_modify_rewrites_the_error(eng, tmp_path):
    eng.on("tool_error", lambda e: modify(error="friendlier"), modifies=True)
    steps = [{"tool_calls": [call("read_file", path="missing.txt")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert json.loads(tool_messages(model, 1)[0]["content"]) == {"error": "friendlier"}


async def test_an_llm_error_retry_goes_back_through_before_llm_call_and_is_capped(
        eng, tmp_path):
    eng.on("llm_error", lambda e: retry("be brief"))
    calls = []
    eng.on("before_llm_call", lambda e: calls.append(1))
    steps = [{"error": "boom"}, {"error": "boom"}, {"error": "boom"}]
    agent, model = make_agent(eng, steps, tmp_path, llm_retry_cap=2)
    result = await agent.run("go")
    assert result.status == "error"
    assert len(calls) == 3
    model.assert_done()
    assert "be brief" in model.calls[1].messages[-1]["content"]

    ok = Engine()
    ok.on("llm_error", lambda e: retry())
    agent, model = make_agent(ok, [{"error": "flaky"}, {"text": "fine"}], tmp_path)
    assert (await agent.run("go")).text == "fine"
    ok.close()


async def test_a_synthetic_reply_passes_after_llm_call_and_the_tool_gates(eng, tmp_path):
    eng.on("before_llm_call", lambda e: respond(
        {"text": "cached", "tool_calls": [{"name": "terminal", "args": {"command": "rm x"}}]})
           if len(e.messages) == 2 else None, name="cache")
    seen = []
    eng.on("after_llm_call", lambda e: seen.append((e.synthetic, e.text)))
    eng.on("before_tool_call", lambda e: block("no rm"), matcher="terminal")
    agent, model = make_agent(eng, [{"text": "real"}], tmp_path)
    result = await agent.run("go")
    assert seen == [(True, "cached"), (False, "real")]
    assert len(model.calls) == 1  # the synthetic reply replaced the first call
    blocked = json.loads(agent.session.messages[2]["content"])
    assert blocked["reason"] == "no rm"
    assert result.text == "real"


async def test_after_llm_call_can_rewrite_tool_calls_and_block(eng, tmp_path):
    eng.on("after_llm_call", lambda e: modify(tool_calls=[]) if e.tool_calls else None,
           modifies=True)
    steps = [{"text": "t", "tool_calls": [call("terminal", command="touch marker")]}]
    agent, _ = make_agent(eng, steps, tmp_path)
    assert (await agent.run("go")).text == "t"
    assert not (tmp_path / "marker").exists()

    blocker = Engine()
    blocker.on("after_llm_call", lambda e: block("leaks data"))
    agent, _ = make_agent(blocker, [{"text": "secret"}], tmp_path)
    result = await agent.run("go")
    blocker.close()
    assert result.status == "blocked"
    assert "leaks data" in result.text


async def test_text_is_not_streamed_before_after_llm_call_hooks_pass_it(eng, tmp_path):
    order = []
    agent, _ = make_agent(eng, [{"text": "one two three"}], tmp_path,
                          on_text=lambda t: order.append(("text", t)))
    await agent.run("go")
    assert [t for _k, t in order] == ["one ", "two ", "three"]  # streamed in deltas

    order.clear()
    eng.on("after_llm_call", lambda e: (order.append(("hook", e.text)),
                                        modify(text=e.text.upper()))[1], modifies=True)
    agent, _ = make_agent(eng, [{"text": "one two three"}], tmp_path,
                          on_text=lambda t: order.append(("text", t)))
    await agent.run("go")
    assert order == [("hook", "one two three"), ("text", "ONE TWO THREE")]


async def test_several_tool_calls_run_concurrently_and_each_is_gated(eng, tmp_path):
    arrived = 0
    both = asyncio.Event()

    async def barrier(e):
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both.set()
        # Only returns if the other call's gate is running at the same time.
        await asyncio.wait_for(both.wait(), 5)
        return block("no b") if e.args["command"] == "echo b" else None

    eng.on("before_tool_call", barrier)
    steps = [{"tool_calls": [call("terminal", command="echo a"),
                             call("terminal", command="echo b")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    a, b = tool_messages(model, 1)
    assert json.loads(a["content"])["output"] == "a\n"
    assert json.loads(b["content"])["reason"] == "no b"


async def test_approve_skips_permission_request_and_ask_blocks_when_nobody_answers(
        eng, tmp_path):
    requests = []
    eng.on("permission_request", lambda e: requests.append(e.tool_name))
    eng.on("before_tool_call", lambda e: approve() if "ok" in e.args["command"] else
           ask("risky"))
    steps = [{"tool_calls": [call("terminal", command="echo ok"),
                             call("terminal", command="echo risky")]}, {"text": "done"}]
    agent, model = make_agent(eng, steps, tmp_path,
                              permissions=[rule("terminal", "*", "ask")])
    await agent.run("go")
    ok, risky = (json.loads(m["content"]) for m in tool_messages(model, 1))
    assert ok["output"] == "ok\n"  # approve skipped the ask rule's permission_request
    assert requests == ["terminal"]
    assert risky["error"] == "tool call blocked"
    assert "no person can answer" in risky["reason"]


async def test_ask_goes_to_a_person_in_interactive_runs(eng, tmp_path):
    eng.on("before_tool_call", lambda e: ask("sure?"))
    answers = iter([True, False])
    prompts = []

    async def person(prompt):
        prompts.append(prompt.reason)
        return next(answers)

    steps = [{"tool_calls": [call("terminal", command="echo yes")]},
             {"tool_calls": [call("terminal", command="echo no")]}, {"text": "done"}]
    agent, model = make_agent(eng, steps, tmp_path, ask_person=person)
    await agent.run("go")
    assert prompts == ["sure?", "sure?"]
    assert json.loads(tool_messages(model, 1)[0]["content"])["output"] == "yes\n"
    assert json.loads(tool_messages(model, 2)[1]["content"])["reason"] == "denied by the user"


async def test_permission_request_hooks_decide_for_the_person_and_add_rules(eng, tmp_path):
    eng.on("permission_request", lambda e: modify(permission_updates=[
        {"tool": "terminal", "pattern": "git *", "action": "allow"}]), modifies=True)
    eng.on("before_tool_call", lambda e: ask("check"))
    steps = [{"tool_calls": [call("terminal", command="git --version")]}, {"text": "done"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert "git version" in json.loads(tool_messages(model, 1)[0]["content"])["output"]
    assert agent.policy.decide("terminal", {"command": "git log"}) == "allow"


async def test_a_subagent_keeps_the_rules_its_session_added(eng, tmp_path):
    """A deny rule a hook added to the session (permission_updates) binds the
    subagents it delegates to, also ones started before it was added."""
    eng.on("before_tool_call", lambda e: ask("check") if e.args.get("command") == "true"
           else None)
    eng.on("permission_request", lambda e: modify(permission_updates=[
        {"tool": "terminal", "pattern": "touch *", "action": "deny"}]), modifies=True)
    eng.on("permission_request", lambda e: approve("fine"))
    steps = [{"tool_calls": [call("terminal", command="true")]},  # adds the deny
             {"tool_calls": [call("delegate", task="make a file")]},
             {"tool_calls": [call("terminal", command="touch child")]},
             {"text": "child done"},
             {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert not (tmp_path / "child").exists()
    assert "permission rule" in json.loads(tool_messages(model, 3)[0]["content"])["reason"]
    # the child's own additions stay its own: the parent's rules are unchanged
    assert [(r.tool, r.pattern, r.action) for r in agent.policy.rules] == [
        ("terminal", "touch *", "deny")]


async def test_declarative_rules_are_the_policy_of_non_interactive_runs(eng, tmp_path):
    rules = [rule("terminal", "git *", "allow"),
             rule("terminal", "curl *", "deny"),
             rule("write_file", "*", "ask")]
    eng.on("before_tool_call", lambda e: ask("hook asks"), matcher="terminal")
    steps = [{"tool_calls": [call("terminal", command="git --version"),
                             call("terminal", command="curl example.com"),
                             call("write_file", path="a.txt", content="x")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path, permissions=rules)
    await agent.run("go")
    git, curl, write = (json.loads(m["content"]) for m in tool_messages(model, 1))
    assert "git version" in git["output"]  # the hook asked; the allow rule answered
    assert curl["reason"] == "denied by a permission rule"
    assert "no person can answer" in write["reason"]
    assert not (tmp_path / "a.txt").exists()


async def test_a_rule_s_refusal_is_recorded_as_a_dispatch_of_its_own(eng, tmp_path):
    """The audit log and metrics see what a rule refused, as behind the bridges and
    adapters (docs/agent.md, Permissions). Before: no row said so."""
    from interlock.testing import RecordingSink

    sink = RecordingSink()
    eng.add_sink(sink)
    rules = [rule("terminal", "curl *", "deny"), rule("write_file", "*", "ask")]
    steps = [{"tool_calls": [call("terminal", command="curl example.com"),
                             call("write_file", path="a.txt", content="x"),
                             call("terminal", command="true")]}, {"text": "ok"}]
    agent, _ = make_agent(eng, steps, tmp_path, permissions=rules)
    await agent.run("go")
    ruled = [(o.event.tool_name, o.verdict.value, o.reason) for o in sink.outcomes
             if o.hook is not None and o.hook.qualified_name == "code:permissions"]
    assert ruled == [
        ("terminal", "block", "denied by a permission rule"),
        ("write_file", "block", "a permission rule asks; no person can answer in a "
                                "non-interactive run")]


async def test_an_allow_rule_covers_a_command_line_only_command_by_command(eng, tmp_path):
    rules = [rule("terminal", "git *", "allow"), rule("terminal", "touch *", "deny")]
    eng.on("before_tool_call", lambda e: ask("hook asks"), matcher="terminal")
    steps = [{"tool_calls": [call("terminal", command="git --version && git --version"),
                             call("terminal", command="git --version; echo x > pwned"),
                             call("terminal", command="git log $(touch pwned2)")]},
             {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path, permissions=rules)
    await agent.run("go")
    both, chained, substituted = (json.loads(m["content"]) for m in tool_messages(model, 1))
    assert both["output"].count("git version") == 2
    assert "no person can answer" in chained["reason"]
    assert substituted["reason"] == "denied by a permission rule"
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "pwned2").exists()


async def test_needs_approval_tools_are_refused_without_a_person_or_rule(eng, tmp_path):
    from interlock.models.tooling import ToolSpec

    ran = []
    tool = ToolSpec("deploy", "deploy", {"type": "object"}, lambda a, c: ran.append(1),
                    needs_approval=True)
    model_steps = [{"tool_calls": [call("deploy")]}, {"text": "ok"}]
    from interlock.agent import Agent, AgentOptions
    from interlock.testing import ScriptedModel

    model = ScriptedModel(model_steps)
    agent = Agent(eng, model, options=AgentOptions(cwd=tmp_path), extra_tools=[tool])
    await agent.run("ship it")
    assert ran == []
    assert "deploy needs approval" in json.loads(tool_messages(model, 1)[0]["content"])["reason"]


@pytest.mark.parametrize("tool_call", [
    call("write_file", path=".interlock/config.toml", content="[hooks]"),
    call("edit_file", path=".interlock/hooks/guard/HOOK.md", old="a", new="b"),
    call("terminal", command="echo off > .interlock/config.toml"),
    call("terminal", command="rm -rf $INTERLOCK_HOME"),
    call("terminal", command="cd .interlock && ls"),
    call("write_file", path="../x/.state/sessions.db", content="x"),
    # The file tools do not expand $VARS: "$HOME/.." is a folder named "$HOME"
    # and its parent, the project itself. The check must resolve it the same way.
    call("write_file", path="$HOME/../.interlock/config.toml", content="[hooks]"),
    call("edit_file", path="$NOPE/../.interlock/config.toml", old="keep", new="x"),
])
async def test_protected_paths_are_refused_even_when_a_hook_approves(eng, tmp_path, tool_call):
    (tmp_path / ".interlock").mkdir()
    (tmp_path / ".interlock/config.toml").write_text("keep")
    if tool_call["args"].get("path", "").startswith("../x"):
        tool_call["args"]["path"] = str(tmp_path / ".state/sessions.db")
    eng.on("before_tool_call", lambda e: approve("trusted"))
    agent, model = make_agent(eng, [{"tool_calls": [tool_call]}, {"text": "ok"}], tmp_path)
    await agent.run("go")
    error = json.loads(tool_messages(model, 1)[0]["content"])
    assert error["error"] == "tool call blocked"
    assert error["hook"] == "engine"
    assert "protected" in error["reason"]
    assert (tmp_path / ".interlock/config.toml").read_text() == "keep"


async def test_before_stop_block_keeps_working_and_is_capped(eng, tmp_path):
    eng.on("before_stop", lambda e: block("run the tests first"))
    steps = [{"text": f"done {i}"} for i in range(9)]
    agent, model = make_agent(eng, steps, tmp_path)
    result = await agent.run("go")
    model.assert_done()  # 8 blocks in a row, then the cap lets it stop
    assert result.text == "done 8"
    assert "run the tests first" in model.calls[1].messages[-1]["content"]
    stored = agent.session.messages[2]
    assert stored["content"] == ""
    assert "code:" in stored["hook_context"]


async def test_user_input_block_modify_and_respond(eng, tmp_path):
    eng.on("user_input", lambda e: block("no profanity") if "darn" in e.text else None)
    eng.on("user_input", lambda e: respond("pong") if e.text == "ping" else None)
    eng.on("user_input", lambda e: modify(text=e.text.replace("pls", "please")),
           modifies=True)
    agent, model = make_agent(eng, [{"text": "ok"}], tmp_path)
    assert (await agent.run("darn")).status == "blocked"
    reply = await agent.run("ping")
    assert (reply.status, reply.text) == ("responded", "pong")
    await agent.run("pls help")
    assert model.calls[0].messages[-1]["content"] == "please help"
    model.assert_done()


async def test_before_agent_start_modifies_the_system_prompt(eng, tmp_path):
    eng.on("before_agent_start", lambda e: modify(system_prompt="Be terse."), modifies=True)
    agent, model = make_agent(eng, [{"text": "ok"}], tmp_path)
    await agent.run("go")
    assert model.calls[0].messages[0] == {"role": "system", "content": "Be terse."}


async def test_before_llm_call_can_change_messages_and_params_or_block(eng, tmp_path):
    eng.on("before_llm_call", lambda e: modify(params={"temperature": 0}), modifies=True)
    agent, model = make_agent(eng, [{"text": "ok"}], tmp_path)
    await agent.run("go")
    assert model.calls[0].params == {"temperature": 0}

    blocker = Engine()
    blocker.on("before_llm_call", lambda e: block("over budget"))
    agent, model = make_agent(blocker, [], tmp_path)
    result = await agent.run("go")
    blocker.close()
    assert result.status == "blocked"
    assert model.calls == []


async def test_model_select_and_commands_are_gated(eng, tmp_path):
    eng.on("model_select", lambda e: modify(model="small") if e.requested == "huge" else None,
           modifies=True)
    eng.on("command", lambda e: block("not here"), matcher="command:compact")
    eng.on("command", lambda e: respond("hi from a hook"), matcher="command:hello")
    agent, _ = make_agent(eng, [], tmp_path)
    await agent.start()
    assert await agent.command("/model huge") == "model: small (a hook chose it instead of huge)"
    assert (await agent.command("/compact")).startswith("/compact blocked: not here")
    assert await agent.command("/hello") == "hi from a hook"
    assert (await agent.command("/nope")).startswith("unknown command /nope")


async def test_subagent_start_can_block_or_change_the_task_and_stop_keeps_it_working(
        eng, tmp_path):
    eng.on("subagent_start", lambda e: modify(task=e.task + " (be quick)"), modifies=True)
    stops = []
    eng.on("subagent_stop", lambda e: (stops.append(e.result),
                                       block("double-check") if len(stops) == 1 else None)[1])
    steps = [{"tool_calls": [call("delegate", task="sum")]},
             {"match": r"sum \(be quick\)$", "text": "42?"},
             {"match": "double-check", "text": "42"},
             {"match": '"result": "42"', "text": "child said 42"}]
    agent, model = make_agent(eng, steps, tmp_path)
    assert (await agent.run("go")).text == "child said 42"
    assert stops == ["42?", "42"]
    model.assert_done()

    blocker = Engine()
    blocker.on("subagent_start", lambda e: block("no children"))
    agent, model = make_agent(blocker, [{"tool_calls": [call("delegate", task="x")]},
                                        {"text": "ok"}], tmp_path)
    await agent.run("go")
    blocker.close()
    assert "no children" in tool_messages(model, 1)[0]["content"]


async def test_task_created_can_be_blocked(eng, tmp_path):
    eng.on("task_created", lambda e: block("too many tasks"))
    steps = [{"tool_calls": [call("todo", action="add", title="x")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert "too many tasks" in tool_messages(model, 1)[0]["content"]
    assert agent.session.todos == []


async def test_tool_result_persist_and_after_tool_call_change_what_is_kept(eng, tmp_path):
    eng.on("after_tool_call", lambda e: modify(result={"shortened": True}), modifies=True)
    eng.on("tool_result_persist", lambda e: modify(result={"stored": e.result}), modifies=True)
    steps = [{"tool_calls": [call("terminal", command="echo long")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert json.loads(tool_messages(model, 1)[0]["content"]) == {"stored": {"shortened": True}}

    blocker = Engine()
    blocker.on("after_tool_call", lambda e: block("result leaks secrets"))
    agent, model = make_agent(blocker, [*steps[:1], {"text": "ok"}], tmp_path)
    await agent.run("go")
    blocker.close()
    result = json.loads(tool_messages(model, 1)[0]["content"])
    assert result["error"] == "tool result blocked"
    assert "leaks secrets" in result["reason"]


async def test_mcp_tools_are_named_by_server_and_matchers_select_them(eng, tmp_path):
    from interlock.agent import Agent, AgentOptions, ToolRegistry
    from interlock.models.tooling import ToolSpec
    from interlock.testing import ScriptedModel

    def issue(args, ctx):
        return {"issue": args["n"]}

    tools = ToolRegistry([ToolSpec("mcp__github__get_issue", "get", {"type": "object"}, issue),
                          ToolSpec("mcp__jira__get_issue", "get", {"type": "object"}, issue)])
    eng.on("before_tool_call", lambda e: block("no github"), matcher="mcp__github__*")
    model = ScriptedModel([{"tool_calls": [call("mcp__github__get_issue", n=1),
                                           call("mcp__jira__get_issue", n=2)]}, {"text": "ok"}])
    agent = Agent(eng, model, options=AgentOptions(cwd=tmp_path), tools=tools)
    await agent.run("go")
    gh, jira = (json.loads(m["content"]) for m in tool_messages(model, 1))
    assert gh["reason"] == "no github"
    assert jira == {"issue": 2}
    with pytest.raises(Exception, match="mcp__<server>__<tool>"):
        ToolRegistry([ToolSpec("github.get", "x", {"type": "object"}, issue)])


async def test_subagents_nest_only_to_the_depth_cap(eng, tmp_path):
    steps = [{"tool_calls": [call("delegate", task="a")]},
             {"tool_calls": [call("delegate", task="b")]},  # depth 1 may not delegate
             {"text": "child done"},
             {"text": "parent done"}]
    agent, model = make_agent(eng, steps, tmp_path, max_depth=1)
    assert (await agent.run("go")).text == "parent done"
    child_result = next(m for m in model.calls[2].messages if m["role"] == "tool")
    assert "unknown tool 'delegate'" in child_result["content"]


async def test_a_symlink_into_a_protected_path_is_refused(eng, tmp_path):
    (tmp_path / ".interlock").mkdir()
    (tmp_path / ".interlock/config.toml").write_text("keep")
    (tmp_path / "innocent.txt").symlink_to(tmp_path / ".interlock/config.toml")
    steps = [{"tool_calls": [call("write_file", path="innocent.txt", content="pwned")]},
             {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    assert "protected" in json.loads(tool_messages(model, 1)[0]["content"])["reason"]
    assert (tmp_path / ".interlock/config.toml").read_text() == "keep"


async def test_a_permission_prompt_nobody_answers_in_time_is_a_denial(eng, tmp_path):
    async def away(prompt):
        await asyncio.Event().wait()

    steps = [{"tool_calls": [call("terminal", command="touch x")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path, ask_person=away, permission_timeout=0.1,
                              permissions=[rule("terminal", "*", "ask")])
    await agent.run("go")
    reason = json.loads(tool_messages(model, 1)[0]["content"])["reason"]
    assert reason == "nobody answered the permission prompt within 0.1s"
    assert not (tmp_path / "x").exists()


async def test_a_provider_that_crashes_is_an_llm_error_not_a_crash(eng, tmp_path):
    errors = []
    eng.on("llm_error", lambda e: errors.append(e.error))

    def broken(request):
        raise KeyError("choices")

    agent, _ = make_agent(eng, [broken], tmp_path)
    result = await agent.run("go")
    assert result.status == "error"
    assert errors == ["the model provider failed: KeyError: 'choices'"]


@pytest.mark.parametrize("refusal", ["hook fails closed", "person says no"])
async def test_suggested_permission_updates_count_only_once_a_call_is_allowed(
        eng, tmp_path, refusal):
    # A "remember this choice" modifier on permission_request must not loosen
    # the policy when the request itself is refused: the next call of a tool
    # that needs approval is asked about again, and never runs unasked.
    from interlock.agent import Agent, AgentOptions
    from interlock.models.tooling import ToolSpec
    from interlock.testing import ScriptedModel

    ran: list[str] = []
    deploy = ToolSpec("deploy", "deploy", {"type": "object"},
                      lambda a, c: ran.append(a.get("to", "")), needs_approval=True)
    eng.on("permission_request", lambda e: modify(permission_updates=[
        {"tool": "deploy", "pattern": "*", "action": "allow"}]), modifies=True,
        name="suggest")
    if refusal == "hook fails closed":
        def guard(event):
            raise RuntimeError("policy service down")
        eng.on("permission_request", guard, name="guard")
    asked: list[str] = []

    def person(prompt):
        asked.append(prompt.args["to"])
        return False

    steps = [{"tool_calls": [call("deploy", to="first")]},
             {"tool_calls": [call("deploy", to="second")]},
             {"text": "done"}]
    agent = Agent(eng, ScriptedModel(steps), extra_tools=[deploy], options=AgentOptions(
        cwd=tmp_path, ask_person=person if refusal == "person says no" else None))
    await agent.run("go")
    assert ran == []  # the suggestion did not stick
    assert agent.policy.decide("deploy", {}) is None
    if refusal == "person says no":
        assert asked == ["first", "second"]


@pytest.mark.parametrize("answer", [True, False])
async def test_a_suggested_permission_update_sticks_only_if_the_person_says_yes(
        eng, tmp_path, answer):
    eng.on("permission_request", lambda e: modify(permission_updates=[
        {"tool": "terminal", "pattern": "echo *", "action": "allow"}]), modifies=True)
    eng.on("before_tool_call", lambda e: ask("check"))
    steps = [{"tool_calls": [call("terminal", command="echo one > one.txt")]},
             {"text": "done"}]
    agent, _ = make_agent(eng, steps, tmp_path, ask_person=lambda p: answer)
    await agent.run("go")
    assert (tmp_path / "one.txt").exists() is answer
    remembered = agent.policy.decide("terminal", {"command": "echo two"})
    assert (remembered == "allow") is answer


async def test_a_call_runs_in_the_directory_its_hooks_judged_it_in(eng, tmp_path):
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    proj.mkdir()
    outside.mkdir()
    judged: list[str] = []
    sibling_ran = asyncio.Event()

    async def sandbox(event):
        await asyncio.wait_for(sibling_ran.wait(), 10)  # a slow judge; the sibling runs meanwhile
        judged.append(event.cwd)
        inside = (Path(event.cwd) / event.args["path"]).resolve().is_relative_to(proj)
        return None if inside else block("outside the project")

    eng.on("before_tool_call", sandbox, matcher="write_file")
    eng.on("after_tool_call", lambda e: sibling_ran.set(), matcher="terminal")
    steps = [{"tool_calls": [call("write_file", path="evil.sh", content="x"),
                             call("terminal", command=f"cd {outside}")]},
             {"text": "done"}]
    agent, _ = make_agent(eng, steps, proj, store=False)
    await agent.run("go")
    assert judged == [str(proj)]
    assert (proj / "evil.sh").exists()
    assert not (outside / "evil.sh").exists()


async def test_a_stop_from_one_call_keeps_its_siblings_from_starting(eng, tmp_path):
    eng.on("before_tool_call",
           lambda e: stop("exfiltration attempt") if "secrets" in str(e.args) else None)
    steps = [{"tool_calls": [call("read_file", path="secrets.txt"),
                             call("terminal", command="echo RAN > ran.txt")]},
             {"text": "done"}]
    agent, _ = make_agent(eng, steps, tmp_path)
    result = await agent.run("go")
    assert result.status.value == "stopped"
    assert not (tmp_path / "ran.txt").exists()


@pytest.mark.parametrize("read_only", [False, True])
async def test_a_tool_from_an_extension_cannot_name_a_protected_path(eng, tmp_path, read_only):
    from interlock.models.tooling import ToolSpec

    ran: list[str] = []
    shell = ToolSpec("bash", "an extension's shell", {"type": "object"},
                     lambda a, c: ran.append(a["command"]), source="extension:shelltool",
                     read_only=read_only)
    (tmp_path / ".interlock").mkdir()
    steps = [{"tool_calls": [call("bash", command="echo x > .interlock/config.toml")]},
             {"text": "ok"}]
    from interlock.agent import Agent, AgentOptions
    from interlock.testing import ScriptedModel

    model = ScriptedModel(steps)
    agent = Agent(eng, model, extra_tools=[shell],
                  options=AgentOptions(cwd=tmp_path, project_root=tmp_path))
    await agent.run("go")
    if read_only:  # declared read-only: judged by hooks alone, like read_file
        assert ran == ["echo x > .interlock/config.toml"]
        return
    assert ran == []
    error = json.loads(tool_messages(model, 1)[0]["content"])
    assert error["hook"] == "engine"
    assert "protected" in error["reason"]
