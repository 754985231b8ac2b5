"""`hooks import` keeps what the hosts' current configs say: Codex timeoutSec,
Gemini env, and a note for what has no equivalent (Claude's `if`, asyncRewake)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interlock.config.importers import import_claude_like


def _write(path: Path, hooks: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))
    return path


def test_codex_timeout_sec_is_read(tmp_path: Path) -> None:
    file = _write(tmp_path / ".codex" / "hooks.json", {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "g.sh", "timeoutSec": 7}]}]})
    [hook] = import_claude_like("codex", file).hooks
    assert hook["timeout"] == 7


def test_gemini_env_is_kept(tmp_path: Path) -> None:
    file = _write(tmp_path / ".gemini" / "settings.json", {"BeforeTool": [
        {"matcher": "run_shell_command", "hooks": [
            {"type": "command", "command": "g.sh", "timeout": 5000, "env": {"MODE": "strict"}}]}]})
    [hook] = import_claude_like("gemini", file).hooks
    assert hook["env"] == {"MODE": "strict"}
    assert hook["timeout"] == 5


def test_claude_if_and_async_rewake_are_noted(tmp_path: Path) -> None:
    file = _write(tmp_path / ".claude" / "settings.json", {"PreToolUse": [
        {"matcher": "Bash", "hooks": [
            {"type": "command", "command": "g.sh", "if": "Bash(git *)"},
            {"type": "command", "command": "w.sh", "asyncRewake": True}]}]})
    imported = import_claude_like("claude", file)
    assert len(imported.hooks) == 2
    assert imported.hooks[1]["background"] is True
    notes = "\n".join(imported.notes)
    assert "Bash(git *)" in notes
    assert "asyncRewake" in notes


def test_hermes_matchers_get_interlocks_names(tmp_path: Path) -> None:
    from interlock.config.importers import import_hermes

    file = tmp_path / "config.yaml"
    file.write_text("hooks:\n  pre_tool_call:\n    - matcher: terminal|execute_code|patch\n"
                    "      command: ~/g.sh\n")
    [hook] = import_hermes(file).hooks
    assert hook["matcher"] == "terminal|edit_file"


@pytest.mark.slow
def test_import_into_the_project_config_keeps_relative_script_paths_working(
        tmp_path: Path) -> None:
    """Claude runs `./.claude/hooks/guard.sh` and `sh .claude/hooks/guard.sh` from the
    project root; written into .interlock/config.toml they must still find the script."""
    import os
    import subprocess
    import sys

    root = tmp_path.resolve()
    hooks = root / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    for name, word in (("guard.sh", "rm"), ("other.sh", "dd")):
        script = hooks / name
        script.write_text("#!/bin/sh\nif grep -q '\"" + word + " '; then echo 'no " + word
                          + " here' >&2; exit 2; fi\n")
        script.chmod(0o755)
    _write(root / ".claude" / "settings.json", {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./.claude/hooks/guard.sh"},
        {"type": "command", "command": "sh .claude/hooks/other.sh"}]}]})
    env = {**os.environ, "INTERLOCK_HOME": str(tmp_path / "home"),
           "INTERLOCK_ACCEPT_HOOKS": "1", "INTERLOCK_BRIDGE_AUTOSTART": "0",
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    cli = [sys.executable, "-m", "interlock"]
    subprocess.run([*cli, "hooks", "import", "--from", "claude", ".claude/settings.json",
                    "-o", ".interlock/config.toml"], cwd=root, env=env, check=True,
                   capture_output=True)
    for command, reason in (("rm x", "no rm here"), ("dd x", "no dd here")):
        payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse",
                   "tool_name": "Bash", "tool_input": {"command": command}}
        ran = subprocess.run([*cli, "bridge", "claude", "--project", str(root)],
                             input=json.dumps(payload), capture_output=True, text=True,
                             env=env, cwd=root, timeout=60)
        assert ran.returncode == 2, ran
        assert reason in ran.stdout, ran
