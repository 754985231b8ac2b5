"""A small real MCP server for the MCP tests (the SDK's MCPServer, FastMCP in v1).

``python mcp_demo_server.py`` serves stdio; ``--http PORT`` serves streamable
HTTP on 127.0.0.1. Every tool call appends a line to ``$MCP_DEMO_LOG`` when it
is set, so a test can tell a blocked call never reached the server.
"""

import json
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo")


def _log(tool: str, args: dict) -> None:
    path = os.environ.get("MCP_DEMO_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"tool": tool, "args": args}) + "\n")


@server.tool()
def echo(text: str) -> str:
    """Return the text as it was given."""
    _log("echo", {"text": text})
    return f"echo: {text}"


@server.tool()
def delete_everything(path: str) -> str:
    """A tool the test policy refuses."""
    _log("delete_everything", {"path": path})
    return f"deleted {path}"


@server.tool()
def secret() -> str:
    """A tool a permission rule hides."""
    _log("secret", {})
    return "SECRET-VALUE"


@server.tool(name="notes.delete")
def notes_delete(name: str) -> str:
    """A dotted name (MCP allows it); the agents call it mcp__demo__notes_delete."""
    _log("notes.delete", {"name": name})
    return f"deleted note {name}"


@server.tool(name="notes.purge")
def notes_purge() -> str:
    """A dotted name a permission rule hides."""
    _log("notes.purge", {})
    return "purged"


@server.tool()
def die() -> str:
    """The server dies mid-call."""
    os._exit(3)


@server.resource("demo://notes/{name}")
def note(name: str) -> str:
    """A note."""
    return f"note {name}"


@server.prompt()
def greet(who: str) -> str:
    """A greeting prompt."""
    return f"Say hello to {who}"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
