"""An MCP server whose tool is a policy hook (kind = "mcp"), for tests/mcp.

Its ``check`` tool takes the wire request as arguments and answers as a hook
does: it blocks a terminal command holding ``rm -rf``, rewrites ``ORIGINAL``
into ``REWRITTEN``, fails (a tool error) on ``FAIL``, and has no opinion
otherwise. Its ``echo_answer`` tool answers, as text, whatever the call's
``answer`` argument holds.
"""

from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("policy")


@server.tool()
def check(event: str, payload: dict[str, Any], contract_version: int = 1,
          invocation_id: str = "", hook: str = "", session_id: str = "", cwd: str = "",
          replay: bool = False) -> dict[str, Any]:
    """Judge one event (the Interlock wire request)."""
    args = payload.get("args") or {}
    command = str(args.get("command", ""))
    if "FAIL" in command:
        raise RuntimeError("the policy server failed")
    if "rm -rf" in command:
        return {"decision": "block", "reason": f"IL-MCP-HOOK: {event} of rm -rf refused"}
    if "ORIGINAL" in command:
        return {"decision": "modify",
                "changes": {"args": {**args, "command": command.replace("ORIGINAL", "REWRITTEN")}}}
    return {}


@server.tool()
def echo_answer(event: str, payload: dict[str, Any], contract_version: int = 1,
                invocation_id: str = "", hook: str = "", session_id: str = "", cwd: str = "",
                replay: bool = False) -> str:
    """Answer, as text, the tool call's ``answer`` argument verbatim."""
    return str((payload.get("args") or {}).get("answer", ""))


if __name__ == "__main__":
    server.run()
