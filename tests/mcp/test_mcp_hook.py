"""kind = "mcp": a hook that is a tool of a real MCP server (docs/mcp.md, MCP hooks)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from fixtures.helpers import invocation
from helpers.cfg import World, run, world
from interlock.engine.errors import ContractError
from interlock.events import BeforeToolCall
from interlock.hosts.assembly import Host

__all__ = ["world"]

# Asked without importing it: the SDK takes most of a second to import, at
# collection, in every worker.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mcp") is None,
                                reason="the MCP SDK is not installed (the mcp extra)")

SERVER = Path(__file__).with_name("mcp_policy_server.py")


def _config(world: World, on_error: str = "closed") -> None:
    (world.root / "policy_server.py").write_text(SERVER.read_text())
    world.config(world.project, f'''
        [[hooks]]
        name = "mcp-judge"
        kind = "mcp"
        server = "policy"
        tool = "check"
        command = ["{sys.executable}", "policy_server.py"]
        events = ["before_tool_call"]
        matcher = "terminal"
        modifies = true
        on_error = "{on_error}"
        timeout = 30
    ''')


def _emit(host: Host, command: str) -> object:
    event = BeforeToolCall(tool_name="terminal", args={"command": command}, session_id="s")
    return host.engine.emit_sync(event)


@pytest.mark.e2e
def test_an_mcp_tool_hook_blocks_modifies_and_fails_closed(world: World) -> None:
    _config(world)
    host = Host.open(world.root, accept_hooks=True, record=False, extensions=False)
    try:
        blocked = _emit(host, "rm -rf /")
        assert blocked.blocked  # type: ignore[attr-defined]
        assert "IL-MCP-HOOK: before_tool_call of rm -rf refused" in blocked.reason  # type: ignore[attr-defined]
        changed = _emit(host, "echo ORIGINAL")
        assert changed.changes["args"]["command"] == "echo REWRITTEN"  # type: ignore[attr-defined]
        assert not _emit(host, "ls").blocked  # type: ignore[attr-defined]
        failed = _emit(host, "echo FAIL")
        assert failed.blocked, "a fail-closed mcp hook that fails blocks"  # type: ignore[attr-defined]
    finally:
        host.close()


def test_an_mcp_hook_needs_its_tool(world: World) -> None:
    world.config(world.project, f'''
        [[hooks]]
        name = "no-tool"
        kind = "mcp"
        command = ["{sys.executable}", "policy_server.py"]
        events = ["before_tool_call"]
    ''')
    code, out, err = run(world, "validate")
    assert code != 0
    assert "tool" in out + err
    assert "config.toml" in out + err


def _approved(world: World) -> bool:
    code, out, err = run(world, "list", "--json")
    assert code == 0, out + err
    hooks = [h for h in json.loads(out)["hooks"] if h["name"] == "project:mcp-judge"]
    assert len(hooks) == 1, out
    return bool(hooks[0]["approved"])


def test_approval_pins_the_servers_files(world: World) -> None:
    _config(world)
    assert not _approved(world), "an mcp hook of the project needs approval"
    code, out, err = run(world, "approve", "--all")
    assert code == 0, out + err
    assert _approved(world)
    (world.root / "policy_server.py").write_text(SERVER.read_text() + "\n# changed\n")
    assert not _approved(world), "an edit of the server's script withdraws the approval"


@pytest.mark.e2e  # a real MCP server process over stdio
@pytest.mark.parametrize("text", [
    '{"decision": "block", "reason": "no", "decision": "none"}',
    '{"decision": "none", "decision": "block"}',
])
async def test_an_ambiguous_text_answer_is_a_contract_error(text: str) -> None:
    # Read as its last key, the first answer is "none": a fail-closed gate would
    # open on an answer a person reads as a block (docs/wire-contract.md).
    from interlock.executors.mcp import McpToolExecutor

    ex = McpToolExecutor([sys.executable, str(SERVER)], tool="echo_answer", server="policy",
                         hook_name="mcp-judge", cwd=SERVER.parent, timeout=30)
    with pytest.raises(ContractError, match="ambiguous"):
        await ex(invocation(args={"command": "rm -rf /", "answer": text}))
