"""A second policy for the MCP proxy's edge cases (tests/mcp/test_mcp_proxy_edges.py).

- blocks ``mcp__demo__notes_delete`` (the server's ``notes.delete``, as the
  agents name it);
- blocks every call of a server named ``my_demo`` (the name Claude Code gives
  a server entry called ``my.demo``);
- responds to echo's ``RESPOND`` without the server, and rewrites a responded
  result in after_tool_call;
- appends each after_tool_call's tool and status to ``after.log`` in its folder,
  and crashes on a result holding ``AFTER-CRASH`` (the hook is fail-closed).
"""

import json
import sys
from pathlib import Path

request = json.loads(sys.stdin.readline())
event, payload = request["event"], request["payload"]
name, args = payload.get("tool_name", ""), payload.get("args") or {}
answer: dict = {}
if event == "before_tool_call":
    if name == "mcp__demo__notes_delete":
        sys.stderr.write("IL-EDGE: notes are kept\n")
        sys.exit(2)
    if name.startswith("mcp__my_demo__"):
        sys.stderr.write("IL-EDGE: my_demo is refused\n")
        sys.exit(2)
    if name == "mcp__demo__echo" and args.get("text") == "RESPOND":
        answer = {"decision": "respond", "value": "canned answer"}
elif event == "after_tool_call":
    with (Path(__file__).parent / "after.log").open("a") as f:
        f.write(json.dumps({"tool": name, "status": payload.get("status")}) + "\n")
    if "AFTER-CRASH" in json.dumps(payload.get("result")):
        raise RuntimeError("the hook crashed after the call")
    if payload.get("status") == "responded":
        answer = {"decision": "modify", "changes": {"result": "rewritten after respond"}}
print(json.dumps(answer))
