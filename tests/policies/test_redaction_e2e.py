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

from test_redaction_hook import SECRETS, _leaks, _texts

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture
from interlock.hosts.terminal.runner import RunSpec, _print_step, build_agent
from interlock.store.paths import user_dir

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
    from interlock.engine.redact import redact

    blob = json.dumps({"out": "\n".join(_texts()) + "\nok"})
    cleaned = redact(blob)
    assert _leaks(cleaned) == []
    assert json.loads(cleaned)["out"].endswith("\nok")


DENY = textwrap.dedent("""\
    import json, sys
    event = json.load(sys.stdin)
    if "deploy-prod" in json.dumps(event["payload"].get("args", {})):
        sys.stderr.write(open("reason.txt").read())
        sys.exit(2)
    if "crash-me" in json.dumps(event["payload"].get("args", {})):
        sys.stderr.write(open("reason.txt").read().replace("refused", "crashed"))
        sys.exit(1)
    """)


def test_every_format_in_every_surrounding_is_stored_nowhere(tmp_path, caplog, capsys,
                                                             monkeypatch):
    """The redaction table's formats, each in each surrounding, planted in a file the
    model reads, printed by the terminal, and in an exit-2 block reason: none of them
    is in the model's messages, the transcript, the audit store, the export or a log."""
    from test_redact_table import FORMATS, SURROUNDINGS

    caplog.set_level("DEBUG")
    audit_db = tmp_path / "audit.db"
    monkeypatch.setenv("INTERLOCK_STORE", str(audit_db))
    project = tmp_path / "project"
    (project / ".interlock").mkdir(parents=True)
    (project / ".interlock" / "deny.py").write_text(DENY)
    commands_log = tmp_path / "commands.jsonl"
    (project / ".interlock" / "config.toml").write_text(textwrap.dedent(f"""\
        [[hooks]]
        name = "secret-redaction"
        enabled = true

        [[hooks]]
        name = "command-logger"
        enabled = true
        options = {{ path = "{commands_log}" }}

        [[hooks]]
        name = "deny-prod"
        events = ["before_tool_call"]
        matcher = "terminal"
        command = ["python3", "./deny.py"]
        cwd = "."
        on_error = "closed"
        """))
    planted = "\n".join(wrap(secret) for _n, secret, _c in FORMATS
                        for wrap in SURROUNDINGS.values())
    (project / "deploy.env").write_text(planted + "\n")
    (project / ".interlock" / "reason.txt").write_text(
        "refused: key AKIAIOSFODNN7EXAMPLE_old and keyid:xAKIAIOSFODNN7EXAMPLE and "
        "%20ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 are live")
    steps = [
        {"tool_calls": [{"name": "read_file", "args": {"path": "deploy.env"}}]},
        {"tool_calls": [{"name": "terminal", "args": {"command": "cat deploy.env"}}]},
        {"tool_calls": [{"name": "terminal", "args": {"command": "echo deploy-prod"}}]},
        {"tool_calls": [{"name": "terminal", "args": {"command": "echo crash-me"}}]},
        {"text": "stopped"},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    spec = RunSpec(model=f"scripted:{script}", cwd=project, db=tmp_path / "sessions.db",
                   verbose=True, accept_hooks=True)
    shown: list[str] = []
    agent, host = build_agent(spec, on_text=shown.append, on_step=_print_step)

    replies: list[object] = []

    async def go() -> None:
        replies.append(await agent.run("deploy"))
        replies.append(await agent.command("/help keyid:xAKIAIOSFODNN7EXAMPLE"))
        await agent.close()

    try:
        asyncio.run(go())
    finally:
        host.close()
    export = tmp_path / "t.jsonl"
    with export.open("w") as out:
        agent.store.export_jsonl(agent.session.id, out)
    out, err = capsys.readouterr()

    seen = json.dumps([c.messages for c in agent.model.calls])
    assert "deploy-prod" in seen
    assert "refused: key" in seen  # the exit-2 reason reached the model, redacted
    with sqlite3.connect(tmp_path / "sessions.db") as conn:
        transcript = "\n".join(conn.iterdump())
    with sqlite3.connect(audit_db) as conn:
        audit = "\n".join(conn.iterdump())
    assert "refused: key" in audit
    assert "crashed: key" in audit  # the crash's dead letter
    assert replies[0].ok, replies
    assert "keyid:x[REDACTED]" in commands_log.read_text()
    places = {"model": seen, "transcript": transcript, "audit store": audit,
              "export": export.read_text(), "command log": commands_log.read_text(),
              "logs": caplog.text, "terminal": out + err + "".join(shown)}
    cores = [core for _n, _s, core in FORMATS] + ["IOSFODNN7EXAMPLE", "a1B2c3D4e5F6g7H8"]
    leaks = {(where, core) for where, text in places.items() for core in cores
             if core in text or core in text.replace("\\n", "\n")}
    assert leaks == set()
