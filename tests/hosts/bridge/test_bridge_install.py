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

pytestmark = pytest.mark.e2e


def _commands(agent: str, data: dict) -> list[tuple[str, dict]]:
    out = []
    if agent == "moltis":
        return [(h["events"][0], h) for h in data["hooks"]["hooks"]
                if "interlock" in str(h.get("command", ""))]
    for event, entries in data["hooks"].items():
        for entry in entries or []:
            handlers = entry.get("hooks", [entry]) if isinstance(entry, dict) else []
            for h in handlers:
                if "interlock" in str(h.get("command", "")):
                    out.append((event, h))
    return out


def _load(agent: str, path: Path) -> dict:
    if agent == "moltis":
        import tomllib

        return tomllib.loads(path.read_text())
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
    "moltis": {"providers": {"x": {"enabled": True}}, "hooks": {"hooks": [
        {"name": "scan", "command": "scan.sh", "events": ["BeforeToolCall"]}]}},
    "hermes": {"model": {"default": "x"}, "hooks": {"pre_tool_call": [
        {"matcher": "write_file", "command": "~/scan.sh"}]}, "hooks_auto_accept": False},
}


@pytest.mark.parametrize("agent", AGENTS)
def test_install_merges_and_is_idempotent(agent: str, tmp_path: Path) -> None:
    path = tmp_path / "config"
    import tomli_w

    text = (yaml.safe_dump(EXISTING[agent]) if agent == "hermes"
            else tomli_w.dumps(EXISTING[agent]) if agent == "moltis"
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


@pytest.mark.parametrize(("agent", "var", "relative"), [
    ("claude", "CLAUDE_CONFIG_DIR", "settings.json"),
    ("codex", "CODEX_HOME", "hooks.json"),
    ("gemini", "GEMINI_CLI_HOME", ".gemini/settings.json"),
])
def test_user_install_honours_the_agents_own_home_variable(
        agent: str, var: str, relative: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from interlock.hosts.bridge.install import config_path

    monkeypatch.setenv(var, str(tmp_path / "agent-home"))
    assert config_path(agent, tmp_path, user=True) == tmp_path / "agent-home" / relative
    monkeypatch.delenv(var)
    assert not str(config_path(agent, tmp_path, user=True)).startswith(str(tmp_path))


def test_the_installed_line_names_the_state_dir_so_a_sanitised_env_keeps_approvals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini drops most variables from a hook's env in CI (GITHUB_SHA set): the
    approvals must still be found where `hooks approve` wrote them."""
    root = (tmp_path / "proj").resolve()
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "guard.py").write_text(
        "from interlock import block\n\ndef handle(e):\n    return block('policy says no')\n")
    (root / ".interlock" / "config.toml").write_text(
        '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\nhandler = "guard.py"\n')
    state = tmp_path / "custom-state"
    env = {**os.environ, "INTERLOCK_STATE_DIR": str(state),
           "INTERLOCK_HOME": str(tmp_path / "home")}
    subprocess.run([sys.executable, "-m", "interlock", "hooks", "approve", "--all", "--project",
                    str(root)], env=env, check=True, capture_output=True)
    monkeypatch.setenv("INTERLOCK_STATE_DIR", str(state))
    plan = install("gemini", root, timeout=30)
    [line] = [h["command"] for e, h in _commands("gemini", _load("gemini", plan.path))
              if e == "BeforeTool"]
    sanitised = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"),
                 "INTERLOCK_BRIDGE_AUTOSTART": "0", "INTERLOCK_STORE": str(tmp_path / "s.db")}
    payload = {"session_id": "s", "cwd": str(root), "hook_event_name": "BeforeTool",
               "tool_name": "run_shell_command", "tool_input": {"command": "ls"}}
    ran = subprocess.run(["/bin/sh", "-c", line], input=json.dumps(payload),
                         capture_output=True, text=True, env=sanitised, timeout=60)
    assert ran.returncode == 2, ran
    assert "policy says no" in ran.stdout + ran.stderr, ran


def test_install_warns_about_the_agents_own_hooks_that_interlock_also_runs(
        tmp_path: Path) -> None:
    from interlock.hosts.bridge.install import duplicates

    root = (tmp_path / "proj").resolve()
    settings = root / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./.claude/hooks/guard.sh"},
        {"type": "command", "command": "./.claude/hooks/format.sh"}]}]}}))
    (root / ".interlock").mkdir()
    (root / ".interlock" / "config.toml").write_text(
        '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\n'
        'command = "../.claude/hooks/guard.sh"\ndialect = "claude"\n')
    plan = install("claude", root, timeout=30)
    [warning] = duplicates("claude", plan.path, root)
    assert "guard.sh" in warning
    assert "run twice" in warning
    assert str(plan.path) in warning


def test_install_prints_the_trust_steps_the_agent_needs(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / ".interlock").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "interlock", "bridge", "install", "gemini",
                           "--project", str(root)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "trust this folder" in done.stdout
    assert "--skip-trust" in done.stdout


def test_moltis_install_runs_the_guarded_bridge_and_denies_on_exit_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Moltis blocks on exit 1 with stderr as the reason; the installed line does so
    when the bridge cannot answer (no hooks here)."""
    monkeypatch.setenv("MOLTIS_CONFIG_DIR", str(tmp_path / "moltis"))
    plan = install("moltis", tmp_path / "proj", timeout=10)
    assert plan.path == tmp_path / "moltis" / "moltis.toml"
    found = dict(_commands("moltis", _load("moltis", plan.path)))
    assert "AfterToolCall" not in found  # read-only in Moltis
    payload = {"event": "BeforeToolCall", "session_key": "s", "tool_name": "exec",
               "arguments": {"command": "ls"}}
    ran = subprocess.run(["/bin/sh", "-c", found["BeforeToolCall"]["command"]],
                         input=json.dumps(payload), capture_output=True, text=True,
                         timeout=60, env={**os.environ, "INTERLOCK_HOME": str(tmp_path / "h")})
    assert ran.returncode == 1, ran
    assert "failed closed" in ran.stderr
