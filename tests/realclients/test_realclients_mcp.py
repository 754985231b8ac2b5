"""`interlock mcp wrap claude`, then a real Claude Code run: the model calls an MCP
tool, the proxy refuses it, and the model reads why (docs/mcp.md).

Only the hosted model API is fake: Claude Code, the proxy, the project's hook
and the MCP server (tests/mcp/mcp_demo_server.py) are real.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_models import FakeModels, Turn
from realclient_agents import AGENTS, Run, Workspace, followup, tool_results

pytest.importorskip("mcp")

pytestmark = pytest.mark.realclients

MCP_TESTS = Path(__file__).resolve().parents[1] / "mcp"
sys.path.insert(0, str(MCP_TESTS))
from _mcp_world import SERVER, make_project  # noqa: E402

TOOL = "mcp__demo__delete_everything"


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    agent = AGENTS["claude"]
    agent.require()
    runtime = Path(tempfile.mkdtemp(prefix="ilmcp-"))
    with FakeModels() as fake:
        space = Workspace(agent, tmp_path, fake, runtime)
        make_project(space.project)
        space.home.mkdir()
        yield space
        escaped = [r.path for r in fake.requests if r.wire == "escape"]
    shutil.rmtree(runtime, ignore_errors=True)
    assert not escaped, f"claude tried to reach the internet: {escaped}"


def test_wrapped_claude_code_gets_a_blocked_mcp_call(ws: Workspace) -> None:
    log = ws.root / "calls.log"
    (ws.project / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": [str(SERVER)],
        "env": {"MCP_DEMO_LOG": str(log)}}}}, indent=2))
    # Project servers from .mcp.json need the person's approval, given here as settings.
    (ws.project / ".claude").mkdir()
    (ws.project / ".claude" / "settings.json").write_text(
        json.dumps({"enableAllProjectMcpServers": True}))
    ws.interlock("hooks", "approve", "--all")
    wrapped = ws.interlock("mcp", "wrap", "claude")
    assert "wrapped demo" in wrapped.stdout
    ws.extra_env.update(ws.agent.configure(ws.home, ws.project, ws.fake))
    # MCP tools offered up front, in the first request: no tool search, and the
    # servers connected before the model is asked (not in the background).
    # The proxy and the server are two Python starts, which a loaded machine
    # makes slower than Claude's 5 s wait for its servers.
    ws.extra_env.update(ENABLE_TOOL_SEARCH="false", MCP_CONNECTION_NONBLOCKING="0",
                        MCP_CONNECT_TIMEOUT_MS="90000", MCP_TIMEOUT="90000")

    ws.fake.turn = Turn(command="", tool=TOOL, args={"path": "/important"})
    argv = ws.agent.argv("Delete everything, please.")
    argv[argv.index("Bash")] = f"Bash {TOOL}"  # Claude's own permission: the proxy decides
    proc = subprocess.run(argv, cwd=ws.project, env=ws.env(), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    run = Run(argv, proc.returncode, proc.stdout, proc.stderr)
    offered = {t.get("name") for r in ws.fake.main_requests()
               for t in (r.body or {}).get("tools") or []}
    assert TOOL in offered, f"Claude Code did not offer the MCP tool: {offered}\n{run}"
    results = tool_results(followup(ws.fake, run))
    assert any("IL-MCP-REASON: deleting everything is refused" in r for r in results), \
        f"the proxy's reason never reached the model: {results}\n{run}"
    calls = log.read_text().splitlines() if log.exists() else []
    assert not any("delete_everything" in c for c in calls), "the server ran the blocked call"
