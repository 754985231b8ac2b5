"""`interlock mcp wrap <agent>`: each agent's MCP entries through the proxy, and back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from _mcp_world import SERVER, make_project

from interlock.hosts.mcp.wrap import config_file, undo, wrap

SERVERS = {
    "demo": {"command": "python3", "args": ["server.py", "--flag"], "env": {"A": "1"}},
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
    "events": {"type": "sse", "url": "https://mcp.example.com/sse"},
    "secret": {"type": "http", "url": "https://mcp.example.com/mcp",
               "headers": {"Authorization": "Bearer x"}},
}


def _claude_file(tmp: Path) -> Path:
    path = tmp / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": SERVERS}, indent=4) + "\n")
    return path


def test_claude_entries_are_wrapped_and_restored_exactly(tmp_path: Path) -> None:
    path = _claude_file(tmp_path)
    before = path.read_bytes()
    report = wrap("claude", path)
    assert sorted(report.changed) == ["demo", "remote"]
    assert set(report.skipped) == {"events", "secret"}, "not gated, and said so"
    servers = json.loads(path.read_text())["mcpServers"]
    demo = servers["demo"]
    assert demo["command"] == sys.executable
    assert demo["args"][-5:] == ["demo", "--", "python3", "server.py", "--flag"]
    assert demo["args"][demo["args"].index("--name") - 2:][:2] == ["mcp", "proxy"]
    assert demo["env"] == {"A": "1"}
    remote = servers["remote"]
    assert remote["type"] == "stdio"
    assert "url" not in remote
    assert remote["args"][-2:] == ["--url", "https://mcp.example.com/mcp"]
    assert servers["events"] == SERVERS["events"]

    wrapped = path.read_bytes()
    again = wrap("claude", path)
    assert again.changed == []
    assert sorted(again.already) == ["demo", "remote"]
    assert path.read_bytes() == wrapped, "wrapping twice changes nothing"

    assert sorted(undo("claude", path).changed) == ["demo", "remote"]
    assert path.read_bytes() == before, "undo puts the file back byte for byte"
    assert undo("claude", path).changed == [], "a second undo has nothing to do"


def test_undo_after_other_edits_restores_only_our_entries(tmp_path: Path) -> None:
    path = _claude_file(tmp_path)
    wrap("claude", path)
    doc = json.loads(path.read_text())
    doc["mcpServers"]["added"] = {"command": "other"}
    doc["numStartups"] = 7
    path.write_text(json.dumps(doc))
    undo("claude", path)
    after = json.loads(path.read_text())
    assert after["mcpServers"]["demo"] == SERVERS["demo"]
    assert after["mcpServers"]["remote"] == SERVERS["remote"]
    assert after["mcpServers"]["added"] == {"command": "other"}
    assert after["numStartups"] == 7


def test_codex_toml(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    text = ('model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs"]\n'
            'tool_timeout_sec = 30\n\n[mcp_servers.web]\nurl = "http://127.0.0.1:9/mcp"\n')
    path.write_text(text)
    report = wrap("codex", path)
    assert sorted(report.changed) == ["docs", "web"]
    doc = tomllib.loads(path.read_text())
    assert doc["model"] == "gpt-5"
    docs = doc["mcp_servers"]["docs"]
    assert docs["args"][-4:] == ["--", "npx", "-y", "docs"]
    assert docs["tool_timeout_sec"] == 30
    assert doc["mcp_servers"]["web"]["args"][-2:] == ["--url", "http://127.0.0.1:9/mcp"]
    undo("codex", path)
    assert path.read_text() == text


def test_gemini_settings(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    text = json.dumps({"general": {"x": 1}, "mcpServers": {
        "fs": {"command": "node", "args": ["fs.js"], "trust": False},
        "http": {"httpUrl": "http://127.0.0.1:9/mcp", "timeout": 5000},
        "sse": {"url": "http://127.0.0.1:9/sse"}}})
    path.write_text(text)
    report = wrap("gemini", path)
    assert sorted(report.changed) == ["fs", "http"]
    assert "sse" in report.skipped
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers["fs"]["args"][-3:] == ["--", "node", "fs.js"]
    assert servers["http"]["timeout"] == 5000
    assert "httpUrl" not in servers["http"]
    undo("gemini", path)
    assert path.read_text() == text


def test_config_files_follow_the_agents_home_variables(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "h"), "CLAUDE_CONFIG_DIR": str(tmp_path / "c"),
           "CODEX_HOME": str(tmp_path / "x"), "GEMINI_CLI_HOME": str(tmp_path / "g")}
    p = tmp_path / "proj"
    assert config_file("claude", p, user=True, env=env) == tmp_path / "c" / ".claude.json"
    assert config_file("codex", p, user=True, env=env) == tmp_path / "x" / "config.toml"
    assert config_file("gemini", p, user=True, env=env) == \
        tmp_path / "g" / ".gemini" / "settings.json"
    assert config_file("claude", p, user=True, env={"HOME": env["HOME"]}) == \
        tmp_path / "h" / ".claude.json"
    assert config_file("claude", p) == p / ".mcp.json"
    assert config_file("codex", p) == p / ".codex" / "config.toml"


def test_a_broken_config_is_a_clear_error(tmp_path: Path) -> None:
    from interlock.engine.errors import ConfigError

    path = tmp_path / ".mcp.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=r"\.mcp\.json cannot be read"):
        wrap("claude", path)


@pytest.mark.e2e
async def test_the_wrapped_command_gates_the_server(tmp_path: Path) -> None:
    """The entry `wrap` writes, started as a client would start it, gates the tool."""
    from mcp import Client, StdioServerParameters

    root = make_project(tmp_path / "project")
    path = root / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": [str(SERVER)]}}}))
    assert wrap("claude", path).changed == ["demo"]
    entry = json.loads(path.read_text())["mcpServers"]["demo"]
    for d in ("home", "managed", "bundled"):
        (tmp_path / d).mkdir()
    env = {**os.environ, "INTERLOCK_HOME": str(tmp_path / "home"),
           "INTERLOCK_MANAGED": str(tmp_path / "managed"),
           "INTERLOCK_BUNDLED": str(tmp_path / "bundled"), "INTERLOCK_ACCEPT_HOOKS": "1",
           "INTERLOCK_STORE": str(tmp_path / "store.db")}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env,
                                   cwd=str(root))
    async with Client(params, cache=None) as client:
        result = await client.call_tool("delete_everything", {"path": "/"})
    assert result.is_error
    assert "IL-MCP-REASON" in result.content[0].text


def _wrap_cli(root: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    interlock = str(Path(sys.executable).with_name("interlock"))
    return subprocess.run([interlock, "mcp", "wrap", "claude", "--project", str(root), *flags],
                          env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("config_dir", [False, True])
def test_claude_local_scope_servers_are_wrapped_and_restored(tmp_path: Path,
                                                             config_dir: bool) -> None:
    # `claude mcp add demo -- ...` (local scope, the default) writes the server into
    # ~/.claude.json under projects[<project path>].mcpServers.
    root = make_project(tmp_path / "project")
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(tmp_path / "home")
    folder = tmp_path / "home"
    if config_dir:
        folder = tmp_path / "claude-config"
        env["CLAUDE_CONFIG_DIR"] = str(folder)
    folder.mkdir(parents=True)
    user_file = folder / ".claude.json"
    other = {"command": "other-server"}
    doc = {"numStartups": 3, "mcpServers": {"everywhere": other},
           "projects": {str(root): {"allowedTools": ["Read"],
                                    "mcpServers": {"demo": SERVERS["demo"]}},
                        "/elsewhere": {"mcpServers": {"demo": other}}}}
    user_file.write_text(json.dumps(doc, indent=2))

    done = _wrap_cli(root, env)
    assert done.returncode == 0, done.stderr
    assert "wrapped demo" in done.stdout
    after = json.loads(user_file.read_text())
    local = after["projects"][str(root)]
    assert local["mcpServers"]["demo"]["args"][-4:] == ["--", "python3", "server.py",
                                                        "--flag"]
    assert local["allowedTools"] == ["Read"]
    assert after["numStartups"] == 3
    assert after["mcpServers"] == {"everywhere": other}, "the user scope is --user's"
    assert after["projects"]["/elsewhere"] == {"mcpServers": {"demo": other}}

    after["numStartups"] = 4  # Claude Code rewrites its file all the time
    user_file.write_text(json.dumps(after, indent=2))
    undone = _wrap_cli(root, env, "--undo")
    assert undone.returncode == 0, undone.stderr
    assert {**doc, "numStartups": 4} == json.loads(user_file.read_text())


@pytest.mark.parametrize(("agent", "entry"), [
    ("claude", {"type": "http", "url": "https://mcp.example.com/mcp", "command": "python3"}),
    ("claude", {"type": "sse", "url": "https://mcp.example.com/sse", "command": "python3"}),
    ("claude", {"type": "ws", "url": "wss://mcp.example.com/ws", "command": "python3"}),
    ("gemini", {"httpUrl": "https://mcp.example.com/mcp", "command": "python3"}),
    ("gemini", {"url": "https://mcp.example.com/sse", "command": "python3"}),
])
def test_an_entry_with_a_url_and_a_command_is_wrapped_as_the_agent_reads_it(
        tmp_path: Path, agent: str, entry: dict[str, str]) -> None:
    # Claude Code goes by `type`, Gemini CLI by httpUrl, then url, then command:
    # wrapping the command alone would leave the URL the agent connects to.
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"mcpServers": {"both": entry}}))
    report = wrap(agent, path)
    after = json.loads(path.read_text())["mcpServers"]["both"]
    if "both" in report.skipped:
        assert after == entry, "left as it is, and reported"
        return
    assert report.changed == ["both"]
    assert not {"url", "httpUrl"} & set(after), after
    assert after.get("type", "stdio") == "stdio"
    assert after["args"][-2] == "--url"


def test_undo_after_a_second_wrap_keeps_a_server_added_in_between(tmp_path: Path) -> None:
    # The file the first wrap saved has no "added": putting it back whole would
    # drop a server the person added between the two wraps.
    path = _claude_file(tmp_path)
    wrap("claude", path)
    doc = json.loads(path.read_text())
    doc["mcpServers"]["added"] = {"command": "other", "args": ["x"]}
    path.write_text(json.dumps(doc))
    assert wrap("claude", path).changed == ["added"]
    undo("claude", path)
    after = json.loads(path.read_text())["mcpServers"]
    assert after["added"] == {"command": "other", "args": ["x"]}
    assert after["demo"] == SERVERS["demo"]
    assert after["remote"] == SERVERS["remote"]


def test_claude_local_scope_of_a_subfolder_is_wrapped_too(tmp_path: Path) -> None:
    # Claude Code keeps a local-scope server under the folder it ran in: one started
    # in a subfolder of the project runs there, under the project's policy.
    root = make_project(tmp_path / "project")
    (root / "sub").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(tmp_path / "home")
    (tmp_path / "home").mkdir()
    user_file = tmp_path / "home" / ".claude.json"
    doc = {"projects": {str(root / "sub"): {"mcpServers": {"demo": SERVERS["demo"]}},
                        str(tmp_path / "projectile"): {"mcpServers": {"x": {"command": "x"}}}}}
    user_file.write_text(json.dumps(doc, indent=2))
    done = _wrap_cli(root, env)
    assert done.returncode == 0, done.stderr
    after = json.loads(user_file.read_text())["projects"]
    assert "--name" in after[str(root / "sub")]["mcpServers"]["demo"]["args"]
    assert after[str(tmp_path / "projectile")] == doc["projects"][str(tmp_path / "projectile")]
    assert _wrap_cli(root, env, "--undo").returncode == 0
    assert json.loads(user_file.read_text()) == doc
