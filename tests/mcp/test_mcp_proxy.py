"""The MCP proxy between the SDK's real client and a real MCP server, over stdio
and streamable HTTP, with the project's policy in between (docs/mcp.md)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from _mcp_world import SERVER, make_project
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

INTERLOCK = str(Path(sys.executable).with_name("interlock"))
pytestmark = pytest.mark.e2e


def _env(tmp: Path) -> dict[str, str]:
    for d in ("home", "managed", "bundled"):
        (tmp / d).mkdir(exist_ok=True)
    return {**os.environ, "INTERLOCK_HOME": str(tmp / "home"),
            "INTERLOCK_MANAGED": str(tmp / "managed"), "INTERLOCK_BUNDLED": str(tmp / "bundled"),
            "INTERLOCK_ACCEPT_HOOKS": "1", "INTERLOCK_STORE": str(tmp / "store.db"),
            "MCP_DEMO_LOG": str(tmp / "calls.log")}


def _proxy(tmp: Path, *upstream: str) -> StdioServerParameters:
    root = make_project(tmp / "project")
    return StdioServerParameters(
        command=INTERLOCK, args=["mcp", "proxy", "--name", "demo", "--project", str(root),
                                 *upstream], env=_env(tmp))


def _calls(tmp: Path) -> list[dict[str, object]]:
    log = tmp / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def _exercise(client: Client, tmp: Path) -> None:
    names = [t.name for t in (await client.list_tools()).tools]
    assert "echo" in names
    assert "delete_everything" in names
    assert "secret" not in names, "a tool a permission rule denies is hidden"

    plain = await client.call_tool("echo", {"text": "hello"})
    assert not plain.is_error
    assert plain.content[0].text == "echo: hello"

    blocked = await client.call_tool("delete_everything", {"path": "/"})
    assert blocked.is_error
    assert "IL-MCP-REASON: deleting everything is refused" in blocked.content[0].text
    assert all(c["tool"] != "delete_everything" for c in _calls(tmp)), "the server never saw it"

    rewritten = await client.call_tool("echo", {"text": "ORIGINAL words"})
    assert rewritten.content[0].text == "echo: REWRITTEN words"
    assert {"tool": "echo", "args": {"text": "REWRITTEN words"}} in _calls(tmp)

    hidden = await client.call_tool("echo", {"text": "the SECRET"})
    assert hidden.content[0].text == "echo: [hidden]"

    crashed = await client.call_tool("echo", {"text": "CRASH"})
    assert crashed.is_error
    assert "Interlock blocked this call" in crashed.content[0].text
    assert {"tool": "echo", "args": {"text": "CRASH"}} not in _calls(tmp)

    denied = await client.call_tool("secret", {})
    assert denied.is_error
    assert "permission rule denies" in denied.content[0].text

    note = await client.read_resource("demo://notes/public")
    assert note.contents[0].text == "note public"
    (extra,) = note.contents[1:]
    assert extra.uri == "interlock://hook-context"
    assert "IL-MCP-CONTEXT: this note is public" in extra.text
    assert 'hook="project:mcp-policy"' in extra.text
    with pytest.raises(MCPError, match="private notes stay private"):
        await client.read_resource("demo://notes/private")

    prompt = await client.get_prompt("greet", {"who": "bob"})
    assert "Say hello to bob" in prompt.messages[0].content.text
    (extra,) = prompt.messages[1:]
    assert extra.role == "user"
    assert "IL-MCP-CONTEXT: bob prefers short greetings" in extra.content.text
    with pytest.raises(MCPError, match="no prompts for mallory"):
        await client.get_prompt("greet", {"who": "mallory"})


def _audited(tmp: Path) -> list[dict[str, object]]:
    out = subprocess.run([INTERLOCK, "audit", "--json", "--verdict", "block", "--limit", "0"],
                         env=_env(tmp), capture_output=True, text=True, timeout=60, check=True)
    rows: list[dict[str, object]] = json.loads(out.stdout)
    return rows


async def test_proxy_over_stdio(tmp_path: Path) -> None:
    params = _proxy(tmp_path, "--", sys.executable, str(SERVER))
    async with Client(params, cache=None) as client:
        await _exercise(client, tmp_path)
        # The server gone mid-call: an error for the client, never a pass.
        died = await client.call_tool("die", {})
        assert died.is_error
        after = await client.call_tool("echo", {"text": "still gated"})
        assert after.is_error, "with the server gone, a call is refused"
    rows = _audited(tmp_path)
    assert any("deleting everything" in json.dumps(r) for r in rows), rows
    # The rule's refusal has its own row, as in every host (docs/agent.md, Permissions).
    assert [(r["hook"], r["reason"]) for r in rows if r["subject"] == "mcp__demo__secret"
            and r["event"] == "before_tool_call"] == [
        ("code:permissions", "a permission rule denies it")], rows


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("mcp-http")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with (tmp / "server.err").open("wb") as err:
        proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)],
                                env=_env(tmp), stdout=subprocess.DEVNULL, stderr=err)
    try:
        _wait_port(port, proc, tmp / "server.err")
        yield f"http://127.0.0.1:{port}/mcp", tmp
    finally:
        proc.terminate()
        proc.wait(10)


def _wait_port(port: int, proc: subprocess.Popen[bytes], err: Path,
               timeout: float = 30.0) -> None:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the MCP server exited: {err.read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError("the MCP server did not listen")


async def test_proxy_over_streamable_http(http_server: tuple[str, Path]) -> None:
    url, tmp = http_server
    async with Client(_proxy(tmp, "--url", url), cache=None) as client:
        await _exercise(client, tmp)
