"""The scripted model: steps from Python, JSON or YAML; records calls; loud when off-script."""

from __future__ import annotations

import pytest

from interlock.models import resolve_model
from interlock.models.tooling import ModelError, ModelRequest, ModelResponse, ToolCall
from interlock.testing import ScriptedModel, ScriptExhausted, ScriptMismatch, Step


def _req(text: str) -> ModelRequest:
    return ModelRequest(model="m", messages=[{"role": "user", "content": text}])


async def test_steps_reply_in_order_and_every_call_is_recorded():
    model = ScriptedModel([
        "plain text",
        {"text": "t", "tool_calls": [{"name": "terminal", "args": {"command": "ls"}}]},
        Step(text="from a Step"),
        lambda req: ModelResponse(text=f"echo {req.messages[-1]['content']}"),
    ])
    assert (await model.complete(_req("a"))).text == "plain text"
    second = await model.complete(_req("b"))
    assert second.tool_calls == [ToolCall("call_1_0", "terminal", {"command": "ls"})]
    assert second.finish_reason == "tool_calls"
    assert (await model.complete(_req("c"))).text == "from a Step"
    assert (await model.complete(_req("d"))).text == "echo d"
    assert [c.messages[-1]["content"] for c in model.calls] == ["a", "b", "c", "d"]
    model.assert_done()
    with pytest.raises(ScriptExhausted, match="no step left for call 5; last message: 'e'"):
        await model.complete(_req("e"))


async def test_recorded_calls_are_copies():
    model = ScriptedModel(["x"])
    request = _req("original")
    await model.complete(request)
    request.messages[0]["content"] = "changed later"
    assert model.calls[0].messages[0]["content"] == "original"


async def test_errors_and_matches():
    model = ScriptedModel([{"error": "rate limited", "status_code": 429},
                           {"match": "^yes", "text": "ok"}])
    with pytest.raises(ModelError, match="rate limited") as info:
        await model.complete(_req("a"))
    assert info.value.status_code == 429
    with pytest.raises(ScriptMismatch, match="step 1: expected the last message to match"):
        await model.complete(_req("no"))


async def test_stream_yields_words_then_the_response():
    model = ScriptedModel(["one two"])
    items = [i async for i in model.stream(_req("a"))]
    assert items[:-1] == ["one ", "two"]
    assert isinstance(items[-1], ModelResponse)
    assert items[-1].text == "one two"


def test_scripts_load_from_yaml_and_json_files(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "steps:\n  - text: hi\n    tool_calls:\n      - {name: list_dir, args: {path: .}}\n"
        "  - bye\n")
    model, name = resolve_model(f"scripted:{tmp_path / 's.yaml'}")
    assert name == "scripted:s"
    assert isinstance(model, ScriptedModel)
    assert model.remaining == 2
    (tmp_path / "s.json").write_text('[{"text": "hi"}]')
    assert ScriptedModel.from_file(tmp_path / "s.json").remaining == 1


def test_resolve_model_errors_are_clear(tmp_path):
    from interlock import ConfigError

    with pytest.raises(ConfigError, match="no model given"):
        resolve_model(None)
    with pytest.raises(ConfigError, match="unknown model provider 'nope'"):
        resolve_model("nope:x")
    with pytest.raises(ConfigError, match="cannot read the script"):
        resolve_model(f"scripted:{tmp_path / 'missing.yaml'}")
    assert resolve_model("ext:m", providers={"ext": lambda n: ScriptedModel([n])})[1] == "ext:m"


def test_run_agent_drives_the_reference_agent_in_one_call(tmp_path, monkeypatch):
    from interlock import Engine
    from interlock.testing import run_agent

    monkeypatch.setenv("INTERLOCK_STATE_DIR", str(tmp_path / "state"))
    engine = Engine()
    model = ScriptedModel([{"tool_calls": [{"name": "list_dir", "args": {}}]},
                           {"match": "entries", "text": "listed"}])
    result = run_agent(engine, model, "list", cwd=tmp_path)
    engine.close()
    assert (result.status, result.text) == ("completed", "listed")
    model.assert_done()
