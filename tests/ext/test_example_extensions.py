"""The two example extensions in examples/extensions, installed with the real
CLI and run in `interlock chat` with the scripted model: git-status in a real
terminal (tmux), plan-mode with its answers piped in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.tmux import Tmux, tmux  # noqa: F401 - fixture

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "extensions"
BIN = Path(sys.executable).parent / "interlock"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("INTERLOCK_", "OPENAI_", "GIT_"))}
    out.update(INTERLOCK_HOME=str(tmp_path / "home"), INTERLOCK_STATE_DIR=str(tmp_path / "state"),
               INTERLOCK_MANAGED=str(tmp_path / "managed"), TERM="xterm-256color",
               GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return out


def install(env: dict[str, str], name: str) -> None:
    proc = subprocess.run([str(BIN), "ext", "install", str(EXAMPLES / name), "--yes"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr + proc.stdout


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                   cwd=cwd, check=True, capture_output=True, timeout=60)


def test_git_status_line_follows_writes_and_the_shortcut(
        tmux: Tmux, env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    install(env, "git-status")
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "a.txt").write_text("a\n")
    git(project, "add", "a.txt")
    git(project, "commit", "-q", "-m", "first")
    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls:\n"
        "    - {name: write_file, args: {path: new.txt, content: hello}}\n"
        "- text: wrote it\n")
    exports = " ".join(f"{k}={v!r}" for k, v in env.items()
                       if k.startswith(("INTERLOCK_", "TERM", "PATH", "HOME", "GIT_")))
    tmux("new-session", "-d", "-s", "chat", "-x", "110", "-y", "30", "-c", str(project),
         f"env {exports} {BIN} chat --model scripted:{script}; echo CHAT-EXITED $?; read _")
    tmux.wait(lambda s: "git main clean" in s, "the status at start")

    tmux("send-keys", "-t", "chat", "write a file", "Enter")
    tmux.wait(lambda s: "wrote it" in s and "git main +1" in s, "the status after the write")
    assert (project / "new.txt").read_text() == "hello"

    (project / "b.txt").write_text("changed behind its back\n")
    tmux("send-keys", "-t", "chat", "C-g")
    tmux.wait(lambda s: "git main +2" in s, "the status after ctrl+g")
    state = json.loads((tmp_path / "state" / "extensions" / "git-status" / "state.json"
                        ).read_text())
    assert state["last"] == {"branch": "main", "changed": 2}

    tmux("send-keys", "-t", "chat", "C-d")
    tmux.wait(lambda s: "CHAT-EXITED 0" in s, "chat to exit")


def test_plan_mode_reads_only_until_the_plan_is_confirmed(env: dict[str, str],
                                                          tmp_path: Path) -> None:
    install(env, "plan-mode")
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("the task: write plan.txt\n")
    script = tmp_path / "script.yaml"
    script.write_text(
        "- match: You are in plan mode\n"
        "  tool_calls:\n"
        "    - {name: read_file, args: {path: notes.txt}}\n"
        "    - {name: write_file, args: {path: plan.txt, content: early}}\n"
        "- match: not active in this session\n"
        "  text: 'the plan: write plan.txt; run /approve'\n"
        "- tool_calls:\n"
        "    - {name: write_file, args: {path: plan.txt, content: approved}}\n"
        "- text: done\n")
    # /approve is refused once ("n"), then confirmed ("y").
    stdin = "plan it\n/approve\nn\n/approve\ny\ndo it\n/exit\n"
    proc = subprocess.run([str(BIN), "chat", "--model", f"scripted:{script}"], input=stdin,
                          capture_output=True, text=True, env=env, cwd=project, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "the plan: write plan.txt" in out
    assert "still planning: the tools stay read-only" in out
    assert "plan approved: every tool is active" in out
    assert "done" in out
    assert "tool 'write_file' is not active in this session" in proc.stderr
    assert (project / "plan.txt").read_text() == "approved"  # never "early"
