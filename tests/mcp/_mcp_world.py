"""A project whose policy gates the demo MCP server (tests/mcp/mcp_demo_server.py)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
SERVER = HERE / "mcp_demo_server.py"
HOOK = HERE / "mcp_policy_hook.py"

CONFIG = f'''
[[hooks]]
name = "mcp-policy"
events = ["before_tool_call", "after_tool_call"]
matcher = "mcp__demo__*"
command = "{sys.executable} ./mcp_policy_hook.py"
on_error = "closed"
modifies = true
timeout = 20

[[permissions]]
tool = "mcp__demo__secret"
action = "deny"
'''


def make_project(root: Path) -> Path:
    """``root/.interlock/`` with the policy above; returns ``root``."""
    (root / ".interlock").mkdir(parents=True, exist_ok=True)
    shutil.copy(HOOK, root / ".interlock" / HOOK.name)
    (root / ".interlock" / "config.toml").write_text(CONFIG)
    return root
