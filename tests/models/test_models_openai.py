"""The OpenAI-compatible client against a local fake server: real HTTP,
streaming and tool calls; and the agent driving it end to end."""

from __future__ import annotations

import json

import pytest

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture
from helpers.fake_openai import FakeOpenAI
from interlock import Engine, block
from interlock.agent import Agent, AgentOptions
from interlock.models import resolve_model
from interlock.models.openai import MALFORMED, OpenAIModel
from interlock.models.tooling import ModelError, ModelRequest, ModelResponse


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def _request(**kw):
    return ModelRequest(model="gpt-test", messages=[{"role": "user", "content": "hi"}], **kw)


async def test_a_completion_with_tool_calls(server):
    server.reply("let me check", tool_calls=[("terminal", {"command": "ls"})])
    model = OpenAIModel("gpt-test", base_url=server.base_url, api_key="sk-test-key")
    tools = [{"type": "function", "function": {"name": "terminal", "parameters": {}}}]
    reply = await model.complete(_request(tools=tools, params={"temperature": 0}))
    assert reply.text == "let me check"
    assert reply.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.args) for c in reply.tool_calls] == [
        ("call_0", "terminal", {"command": "ls"})]
    assert reply.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    sent = server.requests[0]
    assert sent["headers"]["authorization"] == "Bearer sk-test-key"
    assert sent["body"] == {"model": "gpt-test", "temperature": 0, "tools": tools,
                            "messages": [{"role": "user", "content": "hi"}]}


async def test_streaming_yields_deltas_then_the_assembled_reply(server):
    server.reply("streamed text here", tool_calls=[("read_file", {"path": "a.txt"})])
    model = OpenAIModel("gpt-test", base_url=server.base_url)
    items = [item async for item in model.stream(_request())]
    deltas, final = items[:-1], items[-1]
    assert len(deltas) > 2
    assert "".join(deltas) == "streamed text here"
    assert isinstance(final, ModelResponse)
    assert final.text == "streamed text here"
    assert [(c.name, c.args) for c in final.tool_calls] == [("read_file", {"path": "a.txt"})]
    assert server.requests[0]["body"]["stream"] is True
    assert "authorization" not in server.requests[0]["headers"]


async def test_malformed_tool_arguments_are_marked_not_fatal(server):
    server.reply(tool_calls=[("terminal", '{"command": "ls"')])
    model = OpenAIModel("gpt-test", base_url=server.base_url)
    reply = await model.complete(_request())
    assert reply.tool_calls[0].args == {MALFORMED: '{"command": "ls"'}


async def test_http_errors_become_model_errors_with_status_and_retry_after(server):
    server.error(429, "slow down, key sk-abcdefghijklmnopqrstuvwx", {"Retry-After": "7"})
    model = OpenAIModel("gpt-test", base_url=server.base_url)
    with pytest.raises(ModelError) as info:
        await model.complete(_request())
    assert info.value.status_code == 429
    assert info.value.retry_after == 7.0
    assert "HTTP 429: slow down" in str(info.value)
    assert "sk-abcdef" not in str(info.value)

    server.raw(b"this is not json")
    with pytest.raises(ModelError, match="malformed chat completion"):
        await model.complete(_request())
    server.error(500, "boom")
    with pytest.raises(ModelError, match="HTTP 500: boom"):
        _ = [x async for x in model.stream(_request())]


async def test_an_unreachable_server_is_a_model_error():
    model = OpenAIModel("gpt-test", base_url="http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(ModelError, match="cannot reach the model server"):
        await model.complete(_request())


def test_base_url_key_and_model_come_from_the_environment(monkeypatch, server):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("INTERLOCK_MODEL", "openai:local-llama")
    model, name = resolve_model(None)
    assert isinstance(model, OpenAIModel)
    assert name == "local-llama"
    assert (model.base_url, model.api_key) == (server.base_url, "env-key")
    flagged, _ = resolve_model("openai:x", base_url="http://other/v1", api_key="flag")
    assert (flagged.base_url, flagged.api_key) == ("http://other/v1", "flag")
    bare, name = resolve_model("qwen2")
    assert isinstance(bare, OpenAIModel)
    assert name == "qwen2"


async def test_the_agent_runs_against_the_fake_server_streaming_and_gated(server, tmp_path):
    server.reply("Looking.", tool_calls=[("terminal", {"command": "echo hi"}),
                                         ("terminal", {"command": "rm -rf /"})])
    server.reply("Done.")
    engine = Engine()
    engine.on("before_tool_call", lambda e: block("never") if "rm" in e.args["command"]
              else None)
    text: list[str] = []
    agent = Agent(engine, OpenAIModel("gpt-test", base_url=server.base_url),
                  options=AgentOptions(model="gpt-test", cwd=tmp_path, on_text=text.append))
    result = await agent.run("say hi")
    engine.close()
    assert result.text == "Done."
    assert "".join(text) == "Looking.Done."
    second = server.requests[1]["body"]
    assert second["stream"] is True
    assert [t["function"]["name"] for t in second["tools"]][:2] == ["terminal", "read_file"]
    results = [json.loads(m["content"]) for m in second["messages"] if m["role"] == "tool"]
    assert results[0]["output"] == "hi\n"
    assert results[1]["error"] == "tool call blocked"
