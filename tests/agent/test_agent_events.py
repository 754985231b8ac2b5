"""Every catalog event fires from the reference agent at its documented point,
with the documented payload (docs/events.md: no event exists only on paper).

The gateway events and config_change are fired by the gateway and the
registry; every other event has a test here, and a test checks that list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.agent import (
    GATEWAY_OR_REGISTRY,
    Recorder,
    call,
    isolated_home,  # noqa: F401 - autouse fixture
    make_agent,
)
from interlock import Engine, block, modify
from interlock.agent.permissions import rule
from interlock.engine.catalog import BY_NAME

COVERED: set[str] = set()


def covers(*names: str):  # type: ignore[no-untyped-def]
    COVERED.update(names)
    return lambda fn: fn


@pytest.fixture
def rec(eng: Engine) -> Recorder:
    return Recorder(eng)


@covers("session_start", "model_select", "user_input", "before_agent_start", "turn_start",
        "before_llm_call", "after_llm_call", "turn_end", "before_stop", "agent_end")
async def test_a_plain_run_fires_the_run_events_in_order(eng, rec, tmp_path):
    agent, _model = make_agent(eng, [{"text": "hello there"}], tmp_path)
    result = await agent.run("hi")
    assert result.ok
    assert result.text == "hello there"
    sid = agent.session.id
    assert rec.names() == ["session_start", "model_select", "user_input", "before_agent_start",
                           "turn_start", "before_llm_call", "after_llm_call", "turn_end",
                           "before_stop", "agent_end"]
    assert all(e.session_id == sid and e.cwd == str(tmp_path.resolve()) for e in rec.seen)
    assert rec.one("session_start").source == "startup"
    assert rec.one("model_select").model == "scripted"
    assert rec.one("user_input").text == "hi"
    start = rec.one("before_agent_start")
    assert start.prompt == "hi"
    assert "careful coding agent" in start.system_prompt
    llm = rec.one("before_llm_call")
    assert llm.model == "scripted"
    assert llm.messages[-1] == {"role": "user", "content": "hi"}
    after = rec.one("after_llm_call")
    assert (after.text, after.tool_calls, after.synthetic) == ("hello there", [], False)
    assert rec.one("turn_start").turn_index == 0
    assert rec.one("turn_end").tool_calls == 0
    assert rec.one("before_stop").last_message == "hello there"
    end = rec.one("agent_end")
    assert (end.status, end.final_text) == ("completed", "hello there")
    # turn-scoped events carry the turn id; session-level ones do not
    turn_ids = {e.turn_id for e in rec.seen if e.name in ("turn_start", "before_llm_call",
                                                          "after_llm_call", "turn_end")}
    assert len(turn_ids) == 1
    assert None not in turn_ids
    assert rec.one("session_start").turn_id is None


@covers("before_tool_call", "after_tool_call", "tool_result_persist")
async def test_tool_events_carry_one_call_id(eng, rec, tmp_path):
    steps = [{"tool_calls": [call("terminal", command="echo out")]}, {"text": "done"}]
    agent, _ = make_agent(eng, steps, tmp_path)
    await agent.run("go")
    before, after = rec.one("before_tool_call"), rec.one("after_tool_call")
    persist = rec.one("tool_result_persist")
    assert before.tool_name == "terminal"
    assert before.args == {"command": "echo out"}
    assert before.tool_call_id
    assert before.tool_call_id == after.tool_call_id \
        == persist.tool_call_id
    assert after.status == "ok"
    assert after.result == {"exit_code": 0, "output": "out\n"}
    assert after.duration_ms > 0
    assert persist.result == after.result
    names = rec.names()
    assert names.index("before_tool_call") < names.index("after_tool_call") \
        < names.index("tool_result_persist") < names.index("turn_end")
    assert rec.of("turn_end")[0].tool_calls == 1


@covers("tool_error")
async def test_tool_error_fires_when_a_tool_fails(eng, rec, tmp_path):
    steps = [{"tool_calls": [call("read_file", path="missing.txt")]}, {"text": "ok"}]
    agent, _ = make_agent(eng, steps, tmp_path)
    await agent.run("read it")
    err = rec.one("tool_error")
    assert (err.tool_name, err.args, err.attempt) == ("read_file", {"path": "missing.txt"}, 1)
    assert "no such file: missing.txt" in err.error
    assert rec.one("after_tool_call").status == "error"


@covers("llm_error")
async def test_llm_error_fires_when_the_model_fails(eng, rec, tmp_path):
    steps = [{"error": "upstream overloaded api_key=sk-abcdefghijklmnopqrstuvwxyz",
              "status_code": 503}]
    agent, _ = make_agent(eng, steps, tmp_path)
    result = await agent.run("hi")
    assert result.status == "error"
    assert "upstream overloaded" in result.text
    err = rec.one("llm_error")
    assert (err.status_code, err.attempt, err.model) == (503, 1, "scripted")
    assert "sk-abcdef" not in err.error
    assert "[REDACTED]" in err.error
    assert rec.one("agent_end").status == "error"


@covers("permission_request")
async def test_permission_request_fires_for_an_ask_rule(eng, rec, tmp_path):
    eng.on("permission_request", lambda e: None)
    steps = [{"tool_calls": [call("terminal", command="git status")]}, {"text": "ok"}]
    agent, _ = make_agent(eng, steps, tmp_path,
                          permissions=[rule("terminal", "git *", "ask")])
    await agent.run("status")
    req = rec.one("permission_request")
    assert (req.tool_name, req.args, req.reason) == (
        "terminal", {"command": "git status"}, "a permission rule asks")
    assert req.tool_call_id == rec.one("before_tool_call").tool_call_id


@covers("permission_denied")
async def test_permission_denied_fires_when_nobody_can_answer(eng, rec, tmp_path):
    steps = [{"tool_calls": [call("terminal", command="make deploy")]}, {"text": "ok"}]
    agent, _ = make_agent(eng, steps, tmp_path,
                          permissions=[rule("terminal", "make *", "deny")])
    await agent.run("deploy")
    denied = rec.one("permission_denied")
    assert (denied.tool_name, denied.reason) == ("terminal", "denied by a permission rule")
    assert rec.one("after_tool_call").status == "blocked"


@covers("notification")
async def test_notification_fires_while_a_person_is_asked(eng, rec, tmp_path):
    asked = []
    steps = [{"tool_calls": [call("terminal", command="git push")]}, {"text": "ok"}]
    agent, _ = make_agent(eng, steps, tmp_path, ask_person=lambda p: asked.append(p) or True,
                          permissions=[rule("terminal", "git push*", "ask")])
    await agent.run("push")
    note = rec.one("notification")
    assert note.kind == "permission_prompt"
    assert "terminal needs permission" in note.message
    assert asked[0].tool_name == "terminal"
    assert rec.names().index("notification") < rec.names().index("after_tool_call")


@covers("before_compaction", "after_compaction")
async def test_compaction_events_fire_past_the_token_budget(eng, rec, tmp_path):
    steps = [{"tool_calls": [call("terminal", command="seq 1 400")]},
             {"tool_calls": [call("terminal", command="echo two")]},
             {"text": "done"}]
    agent, _ = make_agent(eng, steps, tmp_path, token_budget=300, keep_recent=2)
    await agent.run("count")
    before, after = rec.one("before_compaction"), rec.one("after_compaction")
    assert before.trigger == "auto"
    assert before.tokens > 300
    assert before.message_count >= 3
    assert after.messages_before == before.message_count
    assert after.messages_after < after.messages_before
    assert after.summary.startswith("- user: count")
    names = rec.names()
    assert names[names.index("after_compaction") + 1] == "before_llm_call"
    assert len(agent.session.messages) < 7  # the stored transcript was compacted too


@covers("subagent_start", "subagent_stop")
async def test_subagent_events_and_hooks_fire_inside_the_child(eng, rec, tmp_path):
    steps = [{"tool_calls": [call("delegate", task="count files")]},
             {"tool_calls": [call("list_dir", path=".")]},  # the child's turns
             {"text": "3 files"},
             {"text": "the child says 3 files"}]
    agent, _ = make_agent(eng, steps, tmp_path)
    result = await agent.run("delegate it")
    assert result.text == "the child says 3 files"
    start, stop = rec.one("subagent_start"), rec.one("subagent_stop")
    parent = agent.session.id
    assert start.task == "count files"
    assert start.session_id == parent
    assert start.depth == 0
    assert stop.child_session_id == start.child_session_id
    assert stop.result == "3 files"
    child = [e for e in rec.seen if e.session_id == start.child_session_id]
    assert {e.name for e in child} >= {"session_start", "user_input", "before_tool_call",
                                      "after_tool_call", "before_stop", "session_end"}
    assert all(e.parent_session_id == parent and e.depth == 1 for e in child)
    tool = next(e for e in child if e.name == "before_tool_call")
    assert tool.tool_name == "list_dir"


@covers("command", "session_reset", "session_end", "session_finalize")
async def test_reset_command_ends_the_old_session_and_starts_a_new_one(eng, rec, tmp_path):
    agent, _ = make_agent(eng, [{"text": "hi"}], tmp_path)
    await agent.run("hi")
    old = agent.session.id
    reply = await agent.command("/reset")
    assert reply == f"new session {agent.session.id}"
    assert agent.session.id != old
    cmd = rec.one("command")
    assert (cmd.command, cmd.arguments, cmd.session_id) == ("reset", "", old)
    assert rec.one("session_reset").reason == "/reset"
    end, fin = rec.one("session_end"), rec.one("session_finalize")
    assert end.session_id == fin.session_id == old
    assert end.reason == "reset"
    starts = rec.of("session_start")
    assert [s.source for s in starts] == ["startup", "clear"]
    assert starts[1].session_id == agent.session.id
    names = rec.names()
    assert names.index("session_reset") < names.index("session_end") \
        < names.index("session_finalize") < len(names) - 1 - names[::-1].index("session_start")


async def test_model_command_fires_model_select_with_what_was_requested(eng, rec, tmp_path):
    agent, _ = make_agent(eng, [], tmp_path)
    await agent.start()
    assert await agent.command("/model big-model") == "model: big-model"
    sel = rec.of("model_select")[-1]
    assert (sel.model, sel.requested) == ("big-model", "big-model")
    assert agent.session.model == "big-model"


@covers("task_created", "task_completed")
async def test_todo_fires_task_events(eng, rec, tmp_path):
    steps = [{"tool_calls": [call("todo", action="add", title="write tests")]},
             {"tool_calls": [call("todo", action="complete", id="t1")]},
             {"text": "done"}]
    agent, _ = make_agent(eng, steps, tmp_path)
    await agent.run("plan")
    created, done = rec.one("task_created"), rec.one("task_completed")
    assert (created.task_id, created.title) == ("t1", "write tests")
    assert (done.task_id, done.title) == ("t1", "write tests")
    assert agent.session.todos == [{"id": "t1", "title": "write tests", "done": True}]


@covers("file_changed")
async def test_file_changed_fires_for_watched_paths_only(eng, rec, tmp_path):
    eng.on("session_start", lambda e: modify(watch_paths=["src"]), modifies=True)
    steps = [{"tool_calls": [call("write_file", path="src/a.py", content="x = 1\n"),
                             call("write_file", path="notes.txt", content="n")]},
             {"tool_calls": [call("edit_file", path="src/a.py", old="1", new="2")]},
             {"text": "done"}]
    agent, _ = make_agent(eng, steps, tmp_path)
    await agent.run("edit")
    changes = [(Path(e.path).name, e.change, e.tool_name) for e in rec.of("file_changed")]
    assert changes == [("a.py", "created", "write_file"), ("a.py", "modified", "edit_file")]
    assert (tmp_path / "src/a.py").read_text() == "x = 2\n"


@covers("cwd_changed")
async def test_cwd_changed_fires_when_the_terminal_moves(eng, rec, tmp_path):
    (tmp_path / "sub").mkdir()
    steps = [{"tool_calls": [call("terminal", command="cd sub")]},
             {"tool_calls": [call("terminal", command="pwd")]},
             {"text": "done"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("move")
    moved = rec.one("cwd_changed")
    assert (moved.old_cwd, moved.new_cwd) == (str(tmp_path.resolve()),
                                              str((tmp_path / "sub").resolve()))
    assert agent.cwd == (tmp_path / "sub").resolve()
    assert rec.of("before_tool_call")[1].cwd == str((tmp_path / "sub").resolve())
    assert str(tmp_path / "sub") in model.calls[2].messages[-1]["content"]


async def test_session_start_can_block_the_session(eng, rec, tmp_path):
    eng.on("session_start", lambda e: block("maintenance window"))
    agent, model = make_agent(eng, [], tmp_path)
    result = await agent.run("hi")
    assert result.status == "blocked"
    assert "maintenance window" in result.text
    assert "user_input" not in rec.names()
    assert model.calls == []


def test_every_event_outside_the_gateway_and_registry_has_an_end_to_end_test():
    assert set(BY_NAME) - GATEWAY_OR_REGISTRY == COVERED
