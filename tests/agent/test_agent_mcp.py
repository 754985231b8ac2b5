"""MCP servers in the reference agent: `[[mcp_servers]]` tools offered as
mcp__<server>__<tool> and gated like built-ins (docs/mcp.md)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from interlock.engine.errors import ConfigError
from interlock.hosts.terminal.runner import RunSpec, build_agent

pytest.importorskip("mcp")
pytestmark = pytest.mark.slow  # each test starts a real MCP server process

SERVER = Path(__file__).resolve().parent.parent / "mcp" / "mcp_demo_server.py"
ENTRY = f"""
[[mcp_servers]]
name = "demo"
command = [{json.dumps(sys.executable)}, {json.dumps(str(SERVER))}]
env = {{ MCP_DEMO_LOG = "LOG" }}
"""

HOOK = '''
from interlock import block, modify


def handle(event):
    if event.tool_name == "mcp__demo__delete_everything":
        return block("no deleting through MCP")
    if event.tool_name == "mcp__demo__echo" and event.args["text"] == "raw":
        return modify(args={"text": "rewritten"})
    return None
'''

CONFIG_HOOK = """
[[hooks]]
name = "mcp-guard"
events = ["before_tool_call"]
handler = "guard.py"
modifies = true
"""


def _project(root: Path, extra: str = "", *, entry: str = ENTRY) -> Path:
    (root / ".interlock").mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    log = root / "calls.log"
    (root / ".interlock" / "config.toml").write_text(
        entry.replace('"LOG"', json.dumps(str(log))) + CONFIG_HOOK + extra)
    (root / ".interlock" / "guard.py").write_text(HOOK)
    return log


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _run(root: Path, steps: list[dict], *, accept: bool = True):
    script = root / "script.json"
    script.write_text(json.dumps(steps))
    agent, host = build_agent(RunSpec(model=f"scripted:{script}", cwd=root,
                                      db=root / "s.db", accept_hooks=accept))

    async def go():
        try:
            return await agent.run("go")
        finally:
            await agent.close()

    try:
        return asyncio.run(go()), agent
    finally:
        host.close()


def _call(tool: str, args: dict) -> dict:
    return {"text": "", "tool_calls": [{"name": f"mcp__demo__{tool}", "args": args}]}


def test_an_mcp_tool_is_offered_and_its_result_reaches_the_model(tmp_path):
    log = _project(tmp_path)
    result, agent = _run(tmp_path, [_call("echo", {"text": "hello"}),
                                    {"match": "echo: hello", "text": "done"}])
    assert result.status.value == "completed"
    assert _calls(log) == [{"tool": "echo", "args": {"text": "hello"}}]
    offered = agent.model.calls[0].tools
    assert "mcp__demo__echo" in [t["function"]["name"] for t in offered]


def test_a_hook_blocks_an_mcp_call_before_the_server_sees_it(tmp_path):
    log = _project(tmp_path)
    result, _ = _run(tmp_path, [_call("delete_everything", {"path": "/"}),
                                {"match": "no deleting through MCP", "text": "ok"}])
    assert result.status.value == "completed"
    assert _calls(log) == []


def test_a_hooks_rewrite_is_what_the_server_gets(tmp_path):
    log = _project(tmp_path)
    _run(tmp_path, [_call("echo", {"text": "raw"}),
                    {"match": "echo: rewritten", "text": "ok"}])
    assert _calls(log) == [{"tool": "echo", "args": {"text": "rewritten"}}]


def test_a_permission_rule_refuses_an_mcp_tool(tmp_path):
    log = _project(tmp_path, '\n[[permissions]]\ntool = "mcp__demo__secret"\n'
                             'action = "deny"\n')
    _, agent = _run(tmp_path, [_call("secret", {}), {"text": "ok"}])
    assert _calls(log) == []
    # Denied whatever its arguments: never offered, and refused when called anyway.
    assert "mcp__demo__secret" not in [t["function"]["name"] for t in agent.model.calls[0].tools]
    assert "SECRET-VALUE" not in json.dumps(agent.model.calls[1].messages)


def test_unapproved_project_servers_are_not_started_and_the_run_says_so(tmp_path, capsys):
    log = _project(tmp_path, entry=ENTRY)
    (tmp_path / ".interlock" / "config.toml").write_text(ENTRY.replace(
        '"LOG"', json.dumps(str(log))))  # no hooks: only the server needs consent
    result, agent = _run(tmp_path, [{"text": "nothing to do"}], accept=False)
    assert result.status.value == "completed"
    assert not any(t["function"]["name"].startswith("mcp__")
                   for t in agent.model.calls[0].tools)
    assert "interlock hooks approve project:mcp_servers" in capsys.readouterr().err


def test_a_server_swapped_after_approval_is_not_started(tmp_path):
    server = tmp_path / "server.py"
    server.write_text(SERVER.read_text())
    entry = ENTRY.replace(json.dumps(str(SERVER)), json.dumps(str(server)))
    _project(tmp_path, entry=entry)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    agent, host = build_agent(RunSpec(model=f"scripted:{script}", cwd=tmp_path,
                                      db=tmp_path / "s.db", accept_hooks=True))
    try:
        server.write_text(SERVER.read_text() + "\n# changed\n")
        with pytest.raises(ConfigError, match="changed since they were approved"):
            asyncio.run(agent.run("go"))
    finally:
        host.close()


def test_a_required_server_that_cannot_start_stops_the_run(tmp_path):
    broken = ENTRY.replace(json.dumps(str(SERVER)), json.dumps(str(tmp_path / "missing.py")))
    _project(tmp_path, entry=broken)
    with pytest.raises(ConfigError, match=r"MCP server 'demo' .* could not start"):
        _run(tmp_path, [{"text": "hi"}])


def test_an_optional_server_that_cannot_start_is_a_warning(tmp_path, caplog):
    broken = ENTRY.replace(json.dumps(str(SERVER)), json.dumps(str(tmp_path / "missing.py")))
    _project(tmp_path, entry=broken + "required = false\n")
    result, _ = _run(tmp_path, [{"text": "hi"}])
    assert result.status.value == "completed"
    assert "going on without its tools" in caplog.text


@pytest.mark.parametrize(("entry", "message"), [
    ('[[mcp_servers]]\nname = "a__b"\ncommand = ["x"]\n', "not usable in tool names"),
    ('[[mcp_servers]]\nname = "a"\ncommand = ["x"]\nurl = "http://h/mcp"\n',
     "exactly one of command and url"),
    ('[[mcp_servers]]\nname = "a"\nurl = "ftp://h"\n', "url must be http"),
    ('[[mcp_servers]]\nname = "a"\ncommand = ["x"]\nport = 3\n', "port"),
    ('[[mcp_servers]]\nname = "a"\ncommand = ["x"]\n[[mcp_servers]]\nname = "a"\n'
     'command = ["y"]\n', "declared twice"),
])
def test_a_bad_server_entry_names_the_file_and_the_field(tmp_path, entry, message):
    from interlock import Engine
    from interlock.config.registry import Registry

    (tmp_path / ".interlock").mkdir()
    (tmp_path / ".interlock" / "config.toml").write_text(entry)
    engine = Engine()
    try:
        with pytest.raises(ConfigError, match=message) as err:
            Registry(engine, project_root=tmp_path).load()
    finally:
        engine.close()
    assert "config.toml" in str(err.value)


def test_approve_all_and_by_name_approve_the_projects_servers(tmp_path):
    from interlock import Engine
    from interlock.config.registry import Registry

    _project(tmp_path)
    for names in (None, ["project:mcp_servers"]):
        state = tmp_path / f"state-{names is None}"
        engine = Engine()
        registry = Registry(engine, project_root=tmp_path)
        registry.trust = type(registry.trust)(state)
        try:
            registry.load()
            assert registry.mcp_servers == []
            assert registry.mcp_consent is not None
            assert registry.mcp_consent.pending
            assert "project:mcp_servers" in registry.approve(names)
            assert [s.name for s in registry.mcp_servers] == ["demo"]
            assert registry.revoke("mcp_servers" if names is None else "project:mcp_servers")
            assert registry.mcp_servers == []  # revoked: not started again
            assert registry.mcp_consent is not None
            assert registry.mcp_consent.pending
        finally:
            engine.close()
