"""`interlock bridge install <agent>`: merged configs, absolute paths, timeouts."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from interlock import ConfigError
from interlock.hosts.bridge.install import AGENTS, EVENTS, install


def _commands(agent: str, data: dict) -> list[tuple[str, dict]]:
    out = []
    for event, entries in data["hooks"].items():
        for entry in entries or []:
            handlers = entry.get("hooks", [entry]) if isinstance(entry, dict) else []
            for h in handlers:
                if "interlock" in str(h.get("command", "")):
                    out.append((event, h))
    return out


def _load(agent: str, path: Path) -> dict:
    return yaml.safe_load(path.read_text()) if agent == "hermes" else json.loads(path.read_text())


@pytest.mark.parametrize("agent", AGENTS)
def test_install_writes_absolute_commands_with_timeouts(agent: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hermes"))
    plan = install(agent, tmp_path / "proj", timeout=30)
    data = _load(agent, plan.path)
    found = _commands(agent, data)
    assert sorted(e for e, _ in found) == sorted(EVENTS[agent])
    for _, handler in found:
        wrapper = shlex.split(handler["command"])
        # /bin/sh -c SCRIPT NAME STDOUT STDERR, then the bridge's own argv
        assert wrapper[:2] == ["/bin/sh", "-c"]
        assert wrapper[3] == "interlock-bridge"
        argv = wrapper[6:]
        assert Path(argv[0]).is_absolute()
        assert argv[1:5] == ["-I", "-m", "interlock.bridge", agent]  # isolated: no cwd import
        assert argv[argv.index("--project") + 1] == str((tmp_path / "proj").resolve())
        assert float(argv[argv.index("--deadline") + 1]) < 30  # below the host's timeout
        assert handler["timeout"] == (30_000 if agent == "gemini" else 30)


EXISTING = {
    "claude": {"model": "opus", "permissions": {"allow": ["Bash(git *)"]},
               "hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
                   {"type": "command", "command": "/usr/local/bin/fmt"}]}]}},
    "codex": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}},
    "gemini": {"theme": "dark", "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [
        {"name": "scan", "type": "command", "command": "scan.sh", "timeout": 5000}]}]}},
    "cursor": {"version": 1, "hooks": {"beforeShellExecution": [{"command": "./audit.sh"}]}},
    "hermes": {"model": {"default": "x"}, "hooks": {"pre_tool_call": [
        {"matcher": "write_file", "command": "~/scan.sh"}]}, "hooks_auto_accept": False},
}


@pytest.mark.parametrize("agent", AGENTS)
def test_install_merges_and_is_idempotent(agent: str, tmp_path: Path) -> None:
    path = tmp_path / "config"
    text = (yaml.safe_dump(EXISTING[agent]) if agent == "hermes"
            else json.dumps(EXISTING[agent]))
    path.write_text(text)
    install(agent, tmp_path, path=path)
    install(agent, tmp_path, path=path, timeout=45)  # again: replaced, never duplicated
    data = _load(agent, path)
    for key, value in EXISTING[agent].items():
        if key != "hooks":
            assert data[key] == value
    ours = _commands(agent, data)
    assert len(ours) == len(EVENTS[agent])
    assert {h["timeout"] for _, h in ours} == {45_000 if agent == "gemini" else 45}
    flat = json.dumps(data)
    for other in ("/usr/local/bin/fmt", "notify", "scan.sh", "./audit.sh", "~/scan.sh"):
        if other in json.dumps(EXISTING[agent]):
            assert other in flat


def test_install_refuses_broken_files_clearly(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{broken")
    with pytest.raises(ConfigError, match=r"settings\.json") as err:
        install("claude", tmp_path, path=path)
    assert "not valid JSON" in str(err.value)
    assert path.read_text() == "{broken"  # left as it was
    path.write_text(json.dumps({"hooks": []}))
    with pytest.raises(ConfigError, match="'hooks' must be an object"):
        install("claude", tmp_path, path=path)
    with pytest.raises(ConfigError, match="unknown agent"):
        install("vim", tmp_path)


def test_installed_claude_command_runs_and_denies_without_a_server(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "interlock", "bridge", "install", "claude",
                           "--project", str(tmp_path), "--timeout", "20"],
                          capture_output=True, text=True, check=True)
    assert "settings.json" in proc.stdout
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][-1]["hooks"][0]["command"]
    env = {**os.environ, "INTERLOCK_SOCKET": str(tmp_path / "none.sock")}
    ran = subprocess.run(shlex.split(command), input=json.dumps({
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
        "session_id": "s", "cwd": str(tmp_path)}), capture_output=True, text=True, env=env)
    assert ran.returncode == 2
    assert json.loads(ran.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_install_cli_reports_user_errors_without_traceback(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "interlock", "bridge", "install", "vim",
                           "--project", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown agent" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_user_site_install_keeps_the_cwd_out_without_losing_its_own_site(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `-I` would skip the user site, where `pip install --user` put interlock:
    # then only -E -P (no PYTHON* variables, no cwd on sys.path) are used.
    import site

    import interlock
    from interlock.hosts.bridge.install import python_flags

    assert python_flags() == ["-I"]  # this venv
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(site, "getusersitepackages",
                        lambda: str(Path(interlock.__file__).resolve().parent.parent))
    assert python_flags() == ["-E", "-P"]
