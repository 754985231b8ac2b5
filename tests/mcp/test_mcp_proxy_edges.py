"""The MCP proxy's edges: no policy at all, a server name the agents normalise, a
responded call's result rewritten, a server gone mid-call (docs/mcp.md)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from _mcp_world import SERVER
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from test_mcp_proxy import INTERLOCK, _calls, _env

pytestmark = pytest.mark.e2e

EDGE_HOOK = Path(__file__).with_name("mcp_edge_hook.py")
EDGE_CONFIG = f'''
[[hooks]]
name = "edge"
events = ["before_tool_call", "after_tool_call"]
command = "{sys.executable} ./mcp_edge_hook.py"
on_error = "closed"
modifies = true
timeout = 20
'''


def _project(tmp: Path, config: str) -> Path:
    root = tmp / "project"
    (root / ".interlock").mkdir(parents=True)
    shutil.copy(EDGE_HOOK, root / ".interlock" / EDGE_HOOK.name)
    (root / ".interlock" / "config.toml").write_text(config)
    return root


def _params(tmp: Path, root: Path, name: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=INTERLOCK, args=["mcp", "proxy", "--name", name, "--project", str(root),
                                 "--", sys.executable, str(SERVER)],
        env=_env(tmp), cwd=str(root))


def _after(root: Path) -> list[dict[str, object]]:
    log = root / ".interlock" / "after.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_a_project_with_no_policy_refuses_every_call(tmp_path: Path) -> None:
    # No hook and no deny or ask rule: the proxy would allow everything, so it
    # refuses instead, as the bridge and serve do (docs/security.md).
    root = _project(tmp_path, '[[permissions]]\ntool = "*"\naction = "allow"\n')
    async with Client(_params(tmp_path, root, "demo"), cache=None) as client:
        out = await client.call_tool("echo", {"text": "unguarded"})
        assert out.is_error
        assert "no hooks are configured" in out.content[0].text
        with pytest.raises(Exception, match="no hooks are configured"):
            await client.read_resource("demo://notes/public")
    assert _calls(tmp_path) == [], "the server never saw the call"


async def test_a_server_name_is_normalised_as_the_agents_do(tmp_path: Path) -> None:
    # Claude Code calls the tools of an entry named "my.demo" mcp__my_demo__<tool>;
    # a policy written for that name must meet the proxy's calls too.
    root = _project(tmp_path, EDGE_CONFIG)
    async with Client(_params(tmp_path, root, "my.demo"), cache=None) as client:
        out = await client.call_tool("echo", {"text": "hello"})
        assert out.is_error
        assert "IL-EDGE: my_demo is refused" in out.content[0].text
    assert _calls(tmp_path) == []


async def test_a_responded_result_rewritten_after_reaches_the_client(tmp_path: Path) -> None:
    root = _project(tmp_path, EDGE_CONFIG)
    async with Client(_params(tmp_path, root, "demo"), cache=None) as client:
        out = await client.call_tool("echo", {"text": "RESPOND"})
        assert not out.is_error, out.content[0].text
        assert out.content[0].text == "rewritten after respond"
    assert _calls(tmp_path) == [], "a respond never calls the server"


async def test_a_server_gone_mid_call_still_runs_after_tool_call(tmp_path: Path) -> None:
    root = _project(tmp_path, EDGE_CONFIG)
    async with Client(_params(tmp_path, root, "demo"), cache=None) as client:
        died = await client.call_tool("die", {})
        assert died.is_error
    assert {"tool": "mcp__demo__die", "status": "error"} in _after(root)


async def test_a_read_the_server_refuses_still_runs_after_tool_call(tmp_path: Path) -> None:
    # The server's own error reaches the client as it is, and the policy sees it:
    # after_tool_call runs with status "error", as for a tool's error.
    root = _project(tmp_path, EDGE_CONFIG)
    async with Client(_params(tmp_path, root, "demo"), cache=None) as client:
        with pytest.raises(MCPError):
            await client.read_resource("demo://nowhere/x")
    assert {"tool": "mcp__demo__resources/read", "status": "error"} in _after(root)


async def test_an_unapproved_project_hook_blocks_what_it_guards(tmp_path: Path) -> None:
    root = _project(tmp_path, EDGE_CONFIG)
    params = _params(tmp_path, root, "demo")
    assert params.env is not None
    del params.env["INTERLOCK_ACCEPT_HOOKS"]
    async with Client(params, cache=None) as client:
        out = await client.call_tool("echo", {"text": "hello"})
        assert out.is_error
        assert "Interlock blocked this call" in out.content[0].text
    assert _calls(tmp_path) == []


async def test_a_config_edit_applies_to_a_running_proxy(tmp_path: Path) -> None:
    import anyio

    root = _project(tmp_path, EDGE_CONFIG)
    async with Client(_params(tmp_path, root, "demo"), cache=None) as client:
        assert not (await client.call_tool("echo", {"text": "before"})).is_error
        (root / ".interlock" / "config.toml").write_text(
            EDGE_CONFIG + '\n[[permissions]]\ntool = "mcp__demo__echo"\naction = "deny"\n')
        with anyio.fail_after(60):
            while True:  # the reload is picked up by a watcher: poll, with a deadline
                out = await client.call_tool("echo", {"text": "after"})
                if out.is_error:
                    break
                await anyio.sleep(0.2)
        # The edit also withdraws the hook's approval: blocked either way.
        assert "Interlock blocked this call" in out.content[0].text
        # A fail-closed hook removed by an edit still blocks until an operator
        # approves the removal (docs/configuration.md, Trust): never a pass.
        (root / ".interlock" / "config.toml").write_text("")
        out = await client.call_tool("delete_everything", {"path": "/x"})
        assert out.is_error
    assert all(c["tool"] != "delete_everything" for c in _calls(tmp_path))


async def test_a_wrapped_server_with_its_own_cwd_meets_the_projects_policy(
        tmp_path: Path) -> None:
    # Gemini CLI (and Codex) start a server in its entry's `cwd`; the proxy must
    # still find the project the agent runs in, not look for one in that folder.
    from _mcp_world import make_project

    from interlock.hosts.mcp.wrap import wrap

    root = make_project(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings = root / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": [str(SERVER)], "cwd": str(elsewhere)}}}))
    assert wrap("gemini", settings).changed == ["demo"]
    entry = json.loads(settings.read_text())["mcpServers"]["demo"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   cwd=entry.get("cwd", str(root)), env=_env(tmp_path))
    async with Client(params, cache=None) as client:
        out = await client.call_tool("delete_everything", {"path": "/"})
        assert out.is_error
        assert "IL-MCP-REASON: deleting everything is refused" in out.content[0].text
        assert not (await client.call_tool("echo", {"text": "hi"})).is_error
    assert _calls(tmp_path) == [{"tool": "echo", "args": {"text": "hi"}}]


async def test_a_tool_name_is_normalised_as_the_agents_do(tmp_path: Path) -> None:
    # MCP allows `notes.delete`; Claude Code and Codex call it mcp__demo__notes_delete,
    # the name a policy is written for.
    root = _project(tmp_path, EDGE_CONFIG + '\n[[permissions]]\ntool = "mcp__demo__notes_purge"'
                              '\naction = "deny"\n')
    async with Client(_params(tmp_path, root, "demo"), cache=None) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "notes.delete" in names
        assert "notes.purge" not in names, "a tool a deny rule names is hidden"
        out = await client.call_tool("notes.delete", {"name": "a"})
        assert out.is_error
        assert "IL-EDGE: notes are kept" in out.content[0].text
        out = await client.call_tool("notes.purge", {})
        assert out.is_error
        assert "permission rule denies" in out.content[0].text
    assert _calls(tmp_path) == []


async def test_a_fail_closed_after_hook_that_crashes_withholds_the_result(
        tmp_path: Path) -> None:
    root = _project(tmp_path, EDGE_CONFIG)
    async with Client(_params(tmp_path, root, "demo"), cache=None) as client:
        out = await client.call_tool("echo", {"text": "AFTER-CRASH"})
        assert out.is_error
        assert "Interlock blocked this call" in out.content[0].text
        assert "echo: AFTER-CRASH" not in json.dumps([c.model_dump() for c in out.content])


async def test_a_percent_encoded_uri_meets_the_policy_as_the_server_reads_it(
        tmp_path: Path) -> None:
    # demo://notes/%70rivate is demo://notes/private (RFC 3986: an encoded unreserved
    # character is the character), and the server reads it so: the hook must too.
    from _mcp_world import make_project

    root = make_project(tmp_path / "project")
    async with Client(_params(tmp_path, root, "demo"), cache=None) as client:
        for uri in ("demo://notes/%70rivate", "demo://notes/priv%61te"):
            with pytest.raises(MCPError, match="private notes stay private"):
                await client.read_resource(uri)
        note = await client.read_resource("demo://notes/%70ublic")
        assert note.contents[0].text == "note public"
