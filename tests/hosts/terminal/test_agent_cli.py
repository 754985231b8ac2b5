"""The agent's commands, run as a user runs them: demo, run, replay, chat."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.e2e


def interlock(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interlock", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_demo_runs_offline_and_shows_each_hook_at_work(tmp_path):
    proc = interlock("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())  # entries wrap at the terminal's width
    assert "code:no-rm-rf blocked before_tool_call" in out
    assert "code:redact-secrets modified result" in out
    assert "code:project-notes added context" in out
    assert "engine refused write_file" in out
    from interlock.agent.sandbox import status

    if status().available:
        assert "sandbox refused the write" in out
    else:
        assert "sandbox: NONE" in out
    assert "policy file untouched: True" in out
    assert "secret reached the model: False" in out
    assert "sk-live" not in out


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text("- text: checking\n  tool_calls:\n"
                    "    - {name: terminal, args: {command: 'echo from-tool'}}\n"
                    "- match: from-tool\n  text: all good\n")
    return path


def test_run_with_a_scripted_model_exports_a_transcript_that_replays(tmp_path, script):
    proc = interlock("run", "--model", f"scripted:{script}", "--export", "t.jsonl", "-v",
                     "say hi", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "checking\nall good\n"
    assert "> terminal {'command': 'echo from-tool'}" in proc.stderr
    assert "completed" in proc.stderr
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    session_id = lines[0]["id"]
    replayed = interlock("replay", "t.jsonl", "--json", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    report = json.loads(replayed.stdout)
    assert report["evaluated"] > 5
    assert report["differences"] == []

    again = tmp_path / "again.yaml"
    again.write_text("- match: 'and again'\n  text: resumed fine\n")
    resumed = interlock("run", "--model", f"scripted:{again}", "--session", session_id,
                        "and again", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "resumed fine\n"


def test_run_usage_errors_are_one_line_and_exit_2(tmp_path):
    (tmp_path / "bad.yaml").write_text("- text: [unclosed\n")
    for args, message in [
        (["--model", "scripted:bad.yaml"], "bad.yaml:2: invalid YAML"),
        ([], "no model given"),
        (["--model", "scripted:bad.yaml", "--session", "nope"], "invalid YAML"),
        (["--model", "nope:x"], "unknown model provider 'nope'"),
        (["--model", "scripted:bad.yaml", "--allow", ":x"], "empty tool name"),
    ]:
        proc = interlock("run", *args, "hi", cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr
        assert "Traceback" not in proc.stderr


def test_run_follows_permission_flags_in_a_non_interactive_run(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "- tool_calls:\n    - {name: terminal, args: {command: 'touch made'}}\n"
        "- text: done\n")
    proc = interlock("run", "--model", "scripted:s.yaml", "--deny", "terminal:touch *",
                     "-v", "go", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "denied by a permission rule" in proc.stderr
    assert not (tmp_path / "made").exists()


def test_chat_runs_prompts_and_slash_commands(tmp_path):
    (tmp_path / "s.yaml").write_text("- text: hello human\n- match: again\n  text: bye\n")
    proc = interlock("chat", "--model", "scripted:s.yaml", cwd=tmp_path,
                     stdin="hi\n/model other\n/help\n/new\nagain\n/exit\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("> hello human\n> model: other\n> /new  Start a new session.")
    assert out.endswith("> bye\n> ")
    new_session = out.split("new session ")[1].split("\n")[0]
    assert len(new_session) == 16
    assert "/compact  Compact the transcript now." in out


async def test_chat_asks_about_concurrent_calls_one_at_a_time():
    import asyncio
    import threading
    import time

    from interlock.agent.options import PermissionPrompt
    from interlock.hosts.terminal.chat import terminal_asker
    from interlock.hosts.terminal.chat_ui import PlainUI

    lock = threading.Lock()
    state = {"open": 0, "most": 0}
    prompts: list[str] = []

    def read(prompt: str) -> str:
        with lock:
            state["open"] += 1
            state["most"] = max(state["most"], state["open"])
            prompts.append(prompt)
        time.sleep(0.05)  # the person takes a moment
        with lock:
            state["open"] -= 1
        return "y" if "first" in prompt else "n"

    ask = terminal_asker(PlainUI(read, print))
    answers = await asyncio.gather(*(ask(PermissionPrompt("terminal", {"command": c}, "why", "s"))
                                     for c in ("touch first", "touch second")))
    assert answers == [True, False]
    assert state["most"] == 1  # never two questions on the terminal at once
    assert "touch first" in prompts[0]
