"""`hooks import` keeps what the hosts' current configs say: Codex timeoutSec,
Gemini env, and a note for what has no equivalent (Claude's `if`, asyncRewake)."""

from __future__ import annotations

import json
from pathlib import Path

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
