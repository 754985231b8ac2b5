"""Sessions in SQLite: resumable by id, exportable as JSONL, consistent after
bad input (broken scripts, malformed or unknown tool calls, hanging tools)."""

from __future__ import annotations

import io
import json

import pytest

from helpers.agent import (
    call,
    isolated_home,  # noqa: F401 - autouse fixture
    make_agent,
    tool_messages,
)
from interlock import ConfigError, Engine, block
from interlock.agent import Agent, AgentOptions, SessionStore
from interlock.agent.replay import read_events, replay
from interlock.models.openai import MALFORMED
from interlock.models.tooling import ModelResponse, ToolCall
from interlock.testing import ScriptedModel


def _consistent(messages):
    """Every tool call has exactly one result, right after its assistant message."""
    pending: list[str] = []
    for msg in messages:
        if msg["role"] == "tool":
            assert msg["tool_call_id"] == pending.pop(0)
        else:
            assert not pending, f"results missing for {pending}"
            pending = [c["id"] for c in msg.get("tool_calls") or []]
    assert not pending


async def test_a_session_is_persisted_and_resumed_by_id(eng, tmp_path):
    steps = [{"tool_calls": [call("todo", action="add", title="ship")]}, {"text": "noted"}]
    agent, _ = make_agent(eng, steps, tmp_path)
    await agent.run("remember to ship")
    await agent.close()
    store = SessionStore(tmp_path / ".state" / "sessions.db")
    loaded = store.load(agent.session.id)
    assert loaded.messages == agent.session.messages
    assert loaded.todos == [{"id": "t1", "title": "ship", "done": False}]

    starts = []
    eng.on("session_start", lambda e: starts.append(e.source))
    model = ScriptedModel([{"match": "and now\\?", "text": "still shipping"}])
    resumed = Agent(eng, model, options=AgentOptions(cwd=tmp_path), store=store,
                    session=store.load(agent.session.id))
    result = await resumed.run("and now?")
    assert result.text == "still shipping"
    assert starts == ["resume"]
    sent = model.calls[0].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant",
                                         "user"]
    assert store.load(agent.session.id).messages[-1] == {"role": "assistant",
                                                         "content": "still shipping"}


async def test_secrets_are_redacted_before_they_reach_the_transcript(eng, tmp_path):
    (tmp_path / "k.env").write_text("OPENAI=sk-abcdefghijklmnopqrstuvwxyz123456\n")
    steps = [{"tool_calls": [call("read_file", path="k.env")]}, {"text": "ok"}]
    agent, model = make_agent(eng, steps, tmp_path)
    await agent.run("read it")
    assert "sk-abcdef" not in tool_messages(model, 1)[0]["content"]
    raw = (tmp_path / ".state" / "sessions.db").read_bytes()
    assert b"sk-abcdefghij" not in raw


async def test_a_transcript_exports_as_jsonl_and_replays_without_running_anything(
        eng, tmp_path):
    steps = [{"tool_calls": [call("terminal", command="touch made-by-run")]}, {"text": "ok"}]
    agent, _ = make_agent(eng, steps, tmp_path)
    await agent.run("make a file")
    out = io.StringIO()
    agent.store.export_jsonl(agent.session.id, out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert lines[0]["type"] == "session"
    assert lines[0]["id"] == agent.session.id
    assert [x["role"] for x in lines if x["type"] == "message"] == ["user", "assistant",
                                                                   "tool", "assistant"]
    events = [x for x in lines if x["type"] == "event"]
    assert "before_tool_call" in [e["name"] for e in events]
    assert all(e["outcome"]["decision"] == "none" for e in events)
    path = tmp_path / "t.jsonl"
    path.write_text(out.getvalue())
    (tmp_path / "made-by-run").unlink()

    # Same hooks: nothing differs. A new policy: the tool call would now be blocked.
    same = Engine()
    assert replay(same, read_events(path)).differences == []
    stricter = Engine()
    stricter.on("before_tool_call", lambda e: block("no touching") if "touch" in
                e.args["command"] else None, name="no-touch")
    report = replay(stricter, read_events(path))
    same.close()
    stricter.close()
    assert [(d.event, d.subject, d.before, d.after, d.hook) for d in report.differences] == [
        ("before_tool_call", "terminal", "none", "block", "code:no-touch")]
    assert report.evaluated > 5
    assert report.skipped_observe > 0
    assert not (tmp_path / "made-by-run").exists()  # nothing ran


def test_replay_reports_a_bad_transcript_line_clearly(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "event", "name": "before_tool_call", "payload": {}}\nnot json\n')
    with pytest.raises(ConfigError, match=r"t.jsonl:1: .*tool_name"):
        replay(Engine(), read_events(path), source=str(path))
    path.write_text('{"type": "session"}\nnot json\n')
    with pytest.raises(ConfigError, match=r"t.jsonl:2: not JSON"):
        list(read_events(path))


@pytest.mark.parametrize(("text", "suffix", "message"), [
    ("- text: [unclosed", ".yaml", r"s.yaml:\d+: invalid YAML"),
    ('[{"text": 1}]', ".json", r"s.json: steps\[0\].text: must be a string"),
    ('[{"tool_calls": [{"args": {}}]}]', ".json", r"steps\[0\].tool_calls\[0\]: .*'name'"),
    ('[{"txet": "hi"}]', ".json", r"steps\[0\]: unknown key\(s\) \['txet'\]"),
    ("{,", ".json", r"s.json:1: invalid JSON"),
    ("text: hi", ".yaml", "a script is a list of steps"),
])
def test_a_broken_script_file_gives_a_clear_error(tmp_path, text, suffix, message):
    path = tmp_path / f"s{suffix}"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        ScriptedModel.from_file(path)


async def test_malformed_and_unknown_tool_calls_get_clear_errors_and_the_run_goes_on(
        eng, tmp_path):
    def reply(_request):
        return ModelResponse(tool_calls=[
            ToolCall("a", "terminal", {MALFORMED: '{"command": "ls"'}),
            ToolCall("b", "teleport", {"to": "mars"}),
            ToolCall("c", "terminal", {"cmd": "ls"}),
        ])

    agent, model = make_agent(eng, [reply, {"text": "sorry"}], tmp_path)
    result = await agent.run("go")
    assert result.text == "sorry"
    bad_json, unknown, invalid = (json.loads(m["content"])["error"]
                                  for m in tool_messages(model, 1))
    assert "not a JSON object" in bad_json
    assert '{"command": "ls"' in bad_json
    assert unknown.startswith("unknown tool 'teleport'; available tools: terminal")
    assert "invalid arguments for terminal" in invalid
    assert "'command' is a required" in invalid
    _consistent(agent.session.messages)
    _consistent(agent.store.load(agent.session.id).messages)


@pytest.mark.slow
async def test_a_hanging_tool_is_killed_and_the_session_stays_resumable(eng, tmp_path):
    steps = [{"tool_calls": [call("terminal", command="sleep 30", timeout=0.3)]},
             {"text": "it hung"}]
    agent, model = make_agent(eng, steps, tmp_path)
    result = await agent.run("wait")
    assert result.text == "it hung"
    assert "timed out after 0.3s and was killed" in tool_messages(model, 1)[0]["content"]

    from interlock.models.tooling import ToolSpec

    async def hang(args, ctx):
        import asyncio

        await asyncio.Event().wait()

    tool = ToolSpec("hang", "never returns", {"type": "object"}, hang)
    model = ScriptedModel([{"tool_calls": [call("hang")]}, {"text": "moved on"}])
    agent = Agent(eng, model, options=AgentOptions(cwd=tmp_path, tool_timeout=0.2),
                  store=SessionStore(tmp_path / "db.sqlite"), extra_tools=[tool])
    assert (await agent.run("go")).text == "moved on"
    assert "did not finish within 0.2s" in tool_messages(model, 1)[0]["content"]
    _consistent(SessionStore(tmp_path / "db.sqlite").load(agent.session.id).messages)


async def test_a_short_or_long_script_fails_loudly(eng, tmp_path):
    agent, model = make_agent(eng, [{"tool_calls": [call("list_dir")]}], tmp_path)
    result = await agent.run("go")
    assert result.status == "error"
    assert "has no step left for call 2" in result.text
    _consistent(agent.store.load(agent.session.id).messages)

    model = ScriptedModel([{"text": "a"}, {"text": "b"}])
    with pytest.raises(AssertionError, match="1 step\\(s\\) left unused after 0"):
        ScriptedModel([{"text": "a"}]).assert_done()
    assert model.remaining == 2


async def test_a_script_step_match_is_checked(eng, tmp_path):
    agent, _ = make_agent(eng, [{"match": "^expected$", "text": "x"}], tmp_path)
    result = await agent.run("something else")
    assert result.status == "error"
    assert "expected the last message to match '^expected$'" in result.text


async def test_an_interrupted_run_is_repaired_on_load(tmp_path):
    store = SessionStore(tmp_path / "db.sqlite")
    from interlock.agent import Session

    session = Session(messages=[{"role": "user", "content": "go"},
                                {"role": "assistant", "content": None, "tool_calls": [
                                    {"id": "x1", "type": "function",
                                     "function": {"name": "terminal", "arguments": "{}"}}]}])
    store.save(session)
    loaded = store.load(session.id)
    _consistent(loaded.messages)
    assert "interrupted" in loaded.messages[-1]["content"]
    store.save(loaded)
    assert len(store.load(session.id).messages) == 3


def test_loading_an_unknown_session_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no session 'nope'"):
        SessionStore(tmp_path / "db.sqlite").load("nope")


def test_a_db_that_is_not_sqlite_is_one_clear_error(tmp_path) -> None:
    not_db = tmp_path / "notes.txt"
    not_db.write_text("root:x:0:0:root:/root:/bin/bash\n" * 50)
    with pytest.raises(ConfigError) as info:
        SessionStore(not_db)
    assert info.value.file == str(not_db)
    assert "cannot open it as a SQLite sessions database" in info.value.message
    assert "--db" in (info.value.fix or "")


def test_run_with_a_db_that_is_not_sqlite_prints_one_line(tmp_path) -> None:
    from typer.testing import CliRunner

    from interlock.hosts.cli import build_app

    not_db = tmp_path / "passwd"
    not_db.write_text("root:x:0:0:root:/root:/bin/bash\n" * 50)
    script = tmp_path / "script.json"
    script.write_text('[{"text": "hi"}]')
    result = CliRunner().invoke(build_app(), [  # type: ignore[arg-type]
        "run", "--db", str(not_db), "-m", f"scripted:{script}", "x"])
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert f"interlock: error: {not_db}: --db: cannot open it as a SQLite sessions " \
           "database (file is not a database)" in result.stderr
