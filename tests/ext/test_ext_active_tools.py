"""Active tools: an extension narrows what the model sees, before_llm_call hooks
see and narrow the set, and a call to an inactive tool is refused by a named
engine hook that sinks audit (src/interlock/agent/active.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from helpers.agent import call, isolated_home, make_agent  # noqa: F401 - autouse fixture
from interlock import Engine, modify
from interlock.agent import Agent, AgentOptions, SessionStore
from interlock.agent.permissions import rule
from interlock.ext.loader import ExtensionContext, ExtensionSet
from interlock.testing import RecordingSink, ScriptedModel

STAND_IN = "code:engine.active-tools"


def offered(model: ScriptedModel, index: int) -> list[str]:
    return [t["function"]["name"] for t in model.calls[index].tools]


def load(engine: Engine, tmp_path: Path, register: Any, name: str = "narrow") -> ExtensionSet:
    exts = ExtensionSet(engine, home=tmp_path / "home", use_entry_points=False)
    info = exts.load(name, register)
    assert info.status == "loaded", info.message
    return exts


def build(engine: Engine, steps: list[Any], tmp_path: Path, **options: Any
          ) -> tuple[Agent, ScriptedModel]:
    return make_agent(engine, steps, tmp_path, **options)


def test_extension_narrows_tools_and_inactive_call_is_refused_and_audited(tmp_path: Path) -> None:
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    seen: dict[str, Any] = {}

    def register(ctx: ExtensionContext) -> None:
        def narrow(event: Any) -> None:
            seen["before"] = ctx.tools.active()
            seen["after"] = ctx.tools.set_active(["read_file", "list_dir"])

        def watch(event: Any) -> None:
            seen.setdefault("llm_tools", []).append(list(event.tools))

        ctx.on("session_start", narrow)
        ctx.on("before_llm_call", watch)

    exts = load(engine, tmp_path, register)
    (tmp_path / "a.txt").write_text("hello")
    agent, model = build(engine, [
        {"tool_calls": [call("terminal", command="echo hi")]},
        {"match": "not active", "text": "ok, no terminal"},
    ], tmp_path)
    result = asyncio.run(agent.run("go"))
    model.assert_done()
    assert result.text == "ok, no terminal"
    assert "terminal" in seen["before"]
    assert seen["after"] == ["read_file", "list_dir"]
    assert offered(model, 0) == ["read_file", "list_dir"]
    assert seen["llm_tools"][0] == ["read_file", "list_dir"]
    refusal = json.loads(next(m for m in model.calls[1].messages if m["role"] == "tool")["content"])
    assert refusal["error"] == "tool call blocked"
    assert refusal["hook"] == STAND_IN
    assert "'terminal' is not active" in refusal["reason"]
    assert "read_file, list_dir" in refusal["reason"]
    # The refusal went through the engine: the sink saw the block by the stand-in.
    blocks = [(o.name, r.hook, str(r.verdict)) for o in sink.outcomes for r in o.hooks
              if o.name == "before_tool_call"]
    assert (("before_tool_call", STAND_IN, "block")) in blocks
    exts.close()


def test_turn_scope_lasts_one_turn(tmp_path: Path) -> None:
    engine = Engine()
    calls = {"n": 0}

    def register(ctx: ExtensionContext) -> None:
        def first_turn_only(event: Any) -> None:
            calls["n"] += 1
            if calls["n"] == 1:
                ctx.tools.set_active(["read_file"], scope="turn")

        ctx.on("turn_start", first_turn_only)

    exts = load(engine, tmp_path, register)
    (tmp_path / "a.txt").write_text("hello")
    agent, model = build(engine, [
        {"tool_calls": [call("read_file", path="a.txt")]},
        {"text": "done"},
    ], tmp_path)
    asyncio.run(agent.run("go"))
    model.assert_done()
    assert offered(model, 0) == ["read_file"]
    assert "terminal" in offered(model, 1)
    assert "read_file" in offered(model, 1)
    assert agent.session.active_tools is None
    assert agent.active._handle is None  # the stand-in is gone once nothing is narrowed
    exts.close()


def test_before_llm_call_modifier_narrows_but_cannot_widen(tmp_path: Path) -> None:
    engine = Engine()

    def only_read(event: Any) -> Any:
        return modify(tools=[t for t in event.tools if t == "read_file"])

    handle = engine.on("before_llm_call", only_read, modifies=True)
    agent, model = build(engine, [
        {"tool_calls": [call("list_dir", path=".")]},
        {"match": "not active", "text": "refused"},
    ], tmp_path)
    asyncio.run(agent.run("go"))
    model.assert_done()
    assert offered(model, 0) == ["read_file"]
    assert offered(model, 1) == ["read_file"]
    handle.unregister()

    # Widening: the session has only read_file active; a modifier adding terminal
    # is an invalid change, so the fail-closed hook blocks the model call.
    sink = RecordingSink()
    engine2 = Engine(sinks=[sink])

    def widen(event: Any) -> Any:
        return modify(tools=[*event.tools, "terminal"])

    engine2.on("before_llm_call", widen, modifies=True)
    agent2, model2 = build(engine2, [], tmp_path / "two")
    agent2.active.set(["read_file"])
    result = asyncio.run(agent2.run("go"))
    assert result.status.value == "blocked"
    assert model2.calls == []
    assert any("only be narrowed" in f.error for f in sink.failures), sink.failures


def test_tool_denied_outright_is_not_offered_and_its_rule_still_answers(tmp_path: Path
                                                                       ) -> None:
    engine = Engine()
    agent, model = build(engine, [
        {"tool_calls": [call("terminal", command="ls")]},
        {"match": "denied by a permission rule", "text": "denied"},
    ], tmp_path, permissions=[rule("terminal", action="deny"),
                              rule("write_file", "*.py", "deny")])
    names = agent.active.names()
    assert "terminal" not in names
    assert "write_file" in names  # denied for some arguments only
    asyncio.run(agent.run("go"))
    model.assert_done()
    assert "terminal" not in offered(model, 0)
    assert agent.active._handle is None  # nothing narrowed: no stand-in
    agent.active.set(["terminal", "read_file"])
    assert agent.active.names() == ["read_file"]


def test_narrowing_from_a_tool_hook_applies_to_the_next_call(tmp_path: Path) -> None:
    engine = Engine()

    def register(ctx: ExtensionContext) -> None:
        def after_first(event: Any) -> None:
            ctx.tools.set_active(["read_file"])

        ctx.on("after_tool_call", after_first, matcher="list_dir")

    exts = load(engine, tmp_path, register)
    agent, model = build(engine, [
        {"tool_calls": [call("list_dir", path=".")]},
        {"tool_calls": [call("list_dir", path=".")]},
        {"match": "'list_dir' is not active", "text": "ok"},
    ], tmp_path)
    asyncio.run(agent.run("go"))
    model.assert_done()
    exts.close()


def test_new_session_gets_its_own_stand_in(tmp_path: Path) -> None:
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    agent, model = build(engine, [
        {"text": "first"},
        {"tool_calls": [call("read_file", path="x")]},
        {"match": "'read_file' is not active", "text": "refused"},
    ], tmp_path)
    agent.active.set(["read_file"])
    asyncio.run(agent.run("one"))
    old = agent.session.id

    async def second() -> None:
        await agent.command("/new")
        assert agent.session.id != old
        assert agent.session.active_tools is None  # a new session starts with every tool
        agent.active.set(["list_dir"])
        await agent.run("two")

    asyncio.run(second())
    model.assert_done()
    blocked = [o.event.session_id for o in sink.outcomes
               if o.name == "before_tool_call" and str(o.verdict) == "block"]
    assert blocked == [agent.session.id]


def test_bad_calls_say_what_to_do(tmp_path: Path) -> None:
    engine = Engine()
    agent, _model = build(engine, [], tmp_path)
    with pytest.raises(ValueError, match=r"unknown tool.*'nope'"):
        agent.active.set(["nope"])
    with pytest.raises(ValueError, match="scope must be one of session, turn"):
        agent.active.set(["read_file"], scope="forever")
    with pytest.raises(TypeError, match="list of tool names"):
        agent.active.set("read_file")

    def register(ctx: ExtensionContext) -> None:
        ctx.tools.active()

    exts = ExtensionSet(engine, home=tmp_path / "home", use_entry_points=False)
    info = exts.load("early", register)
    assert info.status == "failed"
    assert "no agent session is in scope" in info.message
    assert "not from register()" in info.message
    exts.close()


def test_session_scope_survives_resume(tmp_path: Path) -> None:
    engine = Engine()
    agent, _model = build(engine, [{"text": "hi"}], tmp_path)
    agent.active.set(["read_file"])
    asyncio.run(agent.run("go"))
    store = SessionStore(tmp_path / ".state" / "sessions.db")
    session = store.load(agent.session.id)
    assert session is not None
    assert session.active_tools == ["read_file"]
    model = ScriptedModel([{"text": "again"}])
    again = Agent(engine, model, options=AgentOptions(cwd=tmp_path, project_root=tmp_path),
                  store=store, session=session)
    asyncio.run(again.run("more"))
    assert offered(model, 0) == ["read_file"]


def test_subagent_cannot_widen_a_narrowed_session(tmp_path: Path) -> None:
    engine = Engine()
    agent, model = build(engine, [
        {"tool_calls": [call("delegate", task="run it", tools=["terminal"])]},
        {"match": "not active in this session", "text": "no"},
    ], tmp_path)
    agent.active.set(["read_file", "delegate"])
    asyncio.run(agent.run("go"))
    model.assert_done()
