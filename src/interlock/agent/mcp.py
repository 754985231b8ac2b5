"""MCP servers' tools in the reference agent (docs/mcp.md, MCP servers in the agent).

At session start the agent connects to each ``[[mcp_servers]]`` entry in
force (the official ``mcp`` SDK's client, over stdio or streamable HTTP),
lists its tools and offers each as ``mcp__<server>__<tool>``. A call goes
through the same path as a built-in tool's (tool_run.py): before_tool_call,
the permission rules, the call, after_tool_call, audit. The connections live
in the agent's resources and close with it.

A server that cannot start stops the run with its error, unless its entry
says ``required = false``: then a warning, and no tools from it. A tool whose
name cannot be offered is left out with a warning. A project's servers start
only while they are what was approved (``AgentOptions.mcp_check``).
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

from interlock.agent.tools import ToolContext, ToolError
from interlock.engine.errors import ConfigError, install_extra
from interlock.engine.logs import logger
from interlock.models.tooling import ToolSpec

if TYPE_CHECKING:
    from interlock.agent.loop import Agent

log = logger("interlock.agent")

_TOOL = re.compile(r"^[A-Za-z0-9_-]+$")
MAX_NAME = 64
"""What model providers accept as a function name."""


async def connect(agent: Agent) -> list[str]:
    """Connect the agent's servers and add their tools; the warnings it printed.

    Raises ConfigError (naming the server, its file and the fix) when a required
    server cannot start, or when the project's servers changed since approval.
    """
    servers = agent.options.mcp_servers
    if not servers:
        return []
    check = agent.options.mcp_check
    if check is not None and not check():
        raise ConfigError("the project's MCP servers, or files their commands run, changed "
                          "since they were approved: none of them was started",
                          field="mcp_servers",
                          fix="review them, then run `interlock hooks approve "
                              "project:mcp_servers`")
    try:
        from mcp import Client, StdioServerParameters
    except ImportError:
        raise ConfigError("[[mcp_servers]] needs the mcp extra", field="mcp_servers",
                          fix=install_extra("mcp")) from None
    warnings: list[str] = []
    for server in servers:
        d = server.definition
        where = f"{server.file}" + (f":{server.line}" if server.line else "")
        if d.url is not None:
            client = Client(d.url, cache=None)
        else:
            argv = server.argv
            params = StdioServerParameters(command=argv[0], args=argv[1:],
                                           env={**os.environ, **d.env}, cwd=str(server.cwd))
            client = Client(params, cache=None)
        try:
            session = await agent.resources.enter_async_context(client)
            listed = await session.list_tools()
        except Exception as exc:
            cause: BaseException = exc
            while isinstance(cause, BaseExceptionGroup) and cause.exceptions:  # anyio's
                cause = cause.exceptions[0]
            problem = f"MCP server {d.name!r} ({where}) could not start: " \
                      f"{type(cause).__name__}: {cause}"
            if d.required:
                raise ConfigError(problem, field="mcp_servers",
                                  fix="fix its command or url, or set required = false to "
                                      "run without it") from None
            log.warning("%s; going on without its tools (required = false)", problem)
            warnings.append(problem)
            continue
        for tool in listed.tools:
            name = f"mcp__{d.name}__{tool.name}"
            if not _TOOL.match(tool.name) or len(name) > MAX_NAME:
                note = (f"MCP server {d.name!r}: tool {tool.name!r} is left out: its name "
                        f"cannot be offered as a function name ({name!r})")
                log.warning("%s", note)
                warnings.append(note)
                continue
            agent.tools.add(ToolSpec(
                name, tool.description or f"{tool.name} (MCP server {d.name})",
                dict(tool.input_schema or {"type": "object"}),
                _handler(session, tool.name, d.timeout), source=f"mcp:{d.name}"))
    agent.tools.install_validator(agent.engine)
    return warnings


def _handler(session: Any, tool: str, timeout: float) -> Any:
    async def call(args: dict[str, Any], ctx: ToolContext) -> str:
        import anyio

        try:
            with anyio.fail_after(timeout):
                result = await session.call_tool(tool, args)
        except TimeoutError:
            raise ToolError(f"the MCP tool did not answer within {timeout:g}s") from None
        except Exception as exc:  # the server refused or went away: the model hears it
            raise ToolError(f"the MCP server failed: {type(exc).__name__}: {exc}") from None
        text = "\n".join(c.text if getattr(c, "type", "") == "text"
                         else json.dumps(c.model_dump(mode="json", exclude_none=True))
                         for c in result.content)
        if result.is_error:
            raise ToolError(text or "the MCP tool reported an error")
        if not text and result.structured_content is not None:
            return json.dumps(result.structured_content)
        return text

    return call
