"""The secret-redaction hook: planted secrets never survive args, results,
stored results, model messages or outbound chat messages."""

from __future__ import annotations

import json

import pytest

from interlock import Engine
from interlock.bundled import load_handler, manifests
from interlock.events import make

# Built from parts so no whole token sits in the source.
SECRETS = {
    "openai": "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t",
    "anthropic": "sk-ant-api03-" + "Zy9xWv8uTs7rQp6oNm5l",
    "github": "ghp_" + "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2",
    "github_pat": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnop",
    "gitlab": "glpat-" + "xY7zW6vU5tS4rQ3pO2nM",
    "aws": "AKIA" + "QWERTYUIOPASDFGH",
    "slack": "xoxb-" + "2048-4096-aBcDeFgHiJkL",
    "google": "AIza" + "SyB1234567890abcdefghijklmnopqrstuv",
    "stripe": "sk_live_" + "51HabcdefghijKLMNOP",
    "huggingface": "hf_" + "qWeRtYuIoPaSdFgHjKlZxCvBnM123456",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJhbGljZSJ9." + "c2lnbmF0dXJlLXNpZ25hdHVyZQ",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + "IBAAKCAQEA\n"
                   "-----END RSA PRIVATE KEY-----",
    "url_password": "hunter2" + "hunter2",
    "bearer": "Bearer " + "f7a9c1e3b5d7f9a1c3e5b7d9",
}
URL_WITH_PASSWORD = f"postgres://app:{SECRETS['url_password']}@db.internal:5432/app"


def _texts() -> list[str]:
    return [v for k, v in SECRETS.items() if k != "url_password"] + [URL_WITH_PASSWORD]


def _leaks(value: object) -> list[str]:
    blob = json.dumps(value) if not isinstance(value, str) else value
    found = []
    for name, secret in SECRETS.items():
        probe = secret.split("\n")[1] if name == "private_key" else secret
        probe = probe.removeprefix("Bearer ")
        if probe in blob or probe in blob.replace("\\n", "\n"):
            found.append(name)
    return found


@pytest.fixture
def engine():
    eng = Engine()
    handler = load_handler("secret-redaction")
    meta = manifests()["secret-redaction"][1]
    eng.on(meta["events"], handler.handle, name="secret-redaction",
           modifies=meta["modifies"], priority=meta["priority"])
    yield eng
    eng.close()


def _final(engine: Engine, name: str, **fields: object):
    event = make(name, **fields)
    out = engine.emit_sync(event)
    assert not out.blocked
    return out.final(event)


def test_at_least_ten_formats_are_planted():
    assert len(SECRETS) >= 10
    assert set(_leaks({"all": _texts(), "u": URL_WITH_PASSWORD})) == set(SECRETS)


def test_tool_args_lose_their_secrets(engine):
    args = {"command": "deploy " + " ".join(_texts()),
            "env": {"API_TOKEN": "plain-looking-value", "OTHER": SECRETS["aws"]},
            "list": _texts()}
    final = _final(engine, "before_tool_call", tool_name="terminal", args=args)
    assert _leaks(final.args) == []
    assert "plain-looking-value" not in json.dumps(final.args)  # key named like a secret
    assert final.args["command"].startswith("deploy ")


def test_tool_results_and_stored_results_lose_their_secrets(engine):
    result = {"stdout": "\n".join(_texts()), "nested": [{"k": SECRETS["stripe"]}]}
    after = _final(engine, "after_tool_call", tool_name="read_file", result=result)
    assert _leaks(after.result) == []
    stored = _final(engine, "tool_result_persist", tool_name="read_file",
                    result="\n".join(_texts()))
    assert _leaks(stored.result) == []


def test_outbound_messages_and_model_messages_lose_their_secrets(engine):
    sent = _final(engine, "before_message_send", content="keys: " + " | ".join(_texts()))
    assert _leaks(sent.content) == []
    assert sent.content.startswith("keys: ")
    llm = _final(engine, "before_llm_call", model="m", messages=[
        {"role": "user", "content": "use " + SECRETS["openai"]},
        {"role": "tool", "content": URL_WITH_PASSWORD}])
    assert _leaks(llm.messages) == []


def test_clean_payloads_are_left_alone(engine):
    event = make("before_tool_call", tool_name="terminal", args={"command": "ls -la src"})
    out = engine.emit_sync(event)
    assert out.payload is None  # no modify, no copy
    assert out.final(event).args == {"command": "ls -la src"}


async def test_a_scripted_loop_never_lets_a_secret_reach_model_transcript_or_logs(
        engine, tmp_path, caplog):
    """A small agent loop driven by the engine: the model asks for a tool with a
    secret in its args, the tool returns more secrets, the result is stored and
    sent back to the model, and the answer goes out to a chat."""
    caplog.set_level("DEBUG")
    transcript = tmp_path / "transcript.jsonl"
    model_inputs: list[object] = []
    sent: list[str] = []
    tool_calls: list[dict] = []

    def tool(args: dict) -> dict:
        tool_calls.append(args)
        return {"stdout": "found:\n" + "\n".join(_texts())}

    # 1. the model requests a tool call carrying a secret
    call = make("before_tool_call", tool_name="terminal", tool_call_id="c1",
                args={"command": f"deploy --token {SECRETS['github']}"})
    out = await engine.emit(call)
    args = out.final(call).args
    # 2. the tool runs; its result passes after_tool_call and tool_result_persist
    after = make("after_tool_call", tool_name="terminal", tool_call_id="c1", args=args,
                 result=tool(args))
    result = (await engine.emit(after)).final(after).result
    persist = make("tool_result_persist", tool_name="terminal", tool_call_id="c1",
                   result=result)
    stored = (await engine.emit(persist)).final(persist).result
    with transcript.open("a") as fh:
        fh.write(json.dumps({"role": "tool", "content": stored}) + "\n")
    # 3. the next model call sees the transcript plus a user message with a secret
    messages = [json.loads(line) for line in transcript.read_text().splitlines()]
    messages.append({"role": "user", "content": f"also use {SECRETS['anthropic']}"})
    llm = make("before_llm_call", model="m", messages=messages)
    model_inputs.append((await engine.emit(llm)).final(llm).messages)
    # 4. the reply (which echoes a secret) goes out to a chat
    reply = make("before_message_send", content=f"Done. Token was {SECRETS['slack']}")
    sent.append((await engine.emit(reply)).final(reply).content)

    assert _leaks(tool_calls) == []
    assert _leaks(model_inputs) == []
    assert _leaks(transcript.read_text()) == []
    assert _leaks(sent) == []
    assert _leaks(caplog.text) == []
