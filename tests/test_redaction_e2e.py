"""Issue 7, must show: in an end-to-end scripted run, planted secrets of at
least 10 formats never reach the model, the transcript or the logs.

The run goes through the reference agent as `interlock run` builds it: the
project's config turns on the bundled secret-redaction and command-logger
hooks; the user's prompt carries a secret, a workspace file holds every
format, the model reads it with read_file and with the terminal, and asks for
a tool call with a token in its arguments; a slash command carries one more.
A control run without the hook shows the same script does leak, so the
checks can fail.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

from agent_helpers import isolated_home  # noqa: F401 - autouse fixture
from interlock.agent.host import RunSpec, _print_step, build_agent
from interlock.paths import user_dir
from test_redaction_hook import SECRETS, _leaks, _texts

ENABLE = textwrap.dedent("""\
    [[hooks]]
    name = "secret-redaction"
    enabled = true

    [[hooks]]
    name = "command-logger"
    enabled = true
    """)


def _script(path: Path) -> Path:
    steps = [
        {"text": "reading the settings",
         "tool_calls": [{"name": "read_file", "args": {"path": "deploy.env"}}]},
        {"tool_calls": [{"name": "terminal", "args": {"command": "cat deploy.env"}}]},
        {"tool_calls": [{"name": "terminal",
                         "args": {"command": f"echo {SECRETS['github']} > token.txt"}}]},
        {"text": "deployed"},
    ]
    path.write_text(json.dumps(steps))
    return path


def _run(tmp_path: Path, config: str) -> tuple[Any, Path, str]:
    project = tmp_path / "project"
    (project / ".interlock").mkdir(parents=True)
    (project / ".interlock" / "config.toml").write_text(config)
    (project / "deploy.env").write_text("\n".join(_texts()) + "\n")
    spec = RunSpec(model=f"scripted:{_script(tmp_path / 'script.json')}", cwd=project,
                   db=tmp_path / "sessions.db", verbose=True)
    shown: list[str] = []
    agent, host = build_agent(spec, on_text=shown.append, on_step=_print_step)

    async def go() -> None:
        result = await agent.run(f"deploy, the key is {SECRETS['anthropic']}")
        assert result.ok, result.text
        await agent.command(f"/help {SECRETS['stripe']}")
        await agent.close()

    try:
        asyncio.run(go())
    finally:
        host.close()
    export = tmp_path / "t.jsonl"
    with export.open("w") as out:
        agent.store.export_jsonl(agent.session.id, out)
    return agent, project, "".join(shown)


def test_planted_secrets_never_reach_the_model_the_transcript_or_the_logs(
        tmp_path, caplog, capsys):
    caplog.set_level("DEBUG")
    assert len(SECRETS) >= 10
    agent, project, shown = _run(tmp_path, ENABLE)
    out, err = capsys.readouterr()

    model = agent.model
    assert len(model.calls) == 4
    assert "deploy.env" in json.dumps(model.calls[1].messages)  # the file was read
    assert "[REDACTED" in json.dumps(model.calls[-1].messages)
    for call in model.calls:
        assert _leaks(call.messages) == [], "secret reached the model"

    with sqlite3.connect(tmp_path / "sessions.db") as conn:
        db = "\n".join(conn.iterdump())
    assert agent.session.id in db
    assert _leaks(db) == [], "secret in the SQLite transcript"
    export = (tmp_path / "t.jsonl").read_text()
    assert "cat deploy.env" in export
    assert _leaks(export) == [], "secret in the JSONL export"

    commands_log = user_dir() / "logs" / "commands.jsonl"
    assert commands_log.exists()
    assert '"help"' in commands_log.read_text()
    assert _leaks(commands_log.read_text()) == [], "secret in the command log"
    assert _leaks(caplog.text) == [], "secret in the logs"
    assert _leaks(out + err + shown) == [], "secret on the terminal"
    # The tool never got the token either.
    assert SECRETS["github"] not in (project / "token.txt").read_text()


def test_without_the_hook_the_same_run_leaks_to_the_model(tmp_path):
    """The agent redacts tool results on its own (a floor), but the prompt and the
    model's own tool-call arguments reach the model unless the hook is on."""
    agent, project, _shown = _run(tmp_path, "")
    leaked = set()
    for call in agent.model.calls:
        leaked.update(_leaks(call.messages))
    assert {"anthropic", "github"} <= leaked
    assert SECRETS["github"] in (project / "token.txt").read_text()


def test_tool_results_are_redacted_before_they_are_serialized(tmp_path):
    """A token right after a newline inside a JSON-encoded result is still caught."""
    agent, _project, _shown = _run(tmp_path, "")
    results = [m["content"] for m in agent.model.calls[-1].messages if m["role"] == "tool"]
    assert results
    for content in results:
        json.loads(content)  # still valid JSON after redaction
        assert _leaks(content) == []


def test_redact_catches_tokens_after_escaped_newlines_and_keeps_json_valid():
    from interlock.redact import redact

    blob = json.dumps({"out": "\n".join(_texts()) + "\nok"})
    cleaned = redact(blob)
    assert _leaks(cleaned) == []
    assert json.loads(cleaned)["out"].endswith("\nok")
