"""``interlock mcp proxy``: an MCP server in front of another, the policy in between.

The proxy is a client of the real server (a command it starts, spoken to
over stdio, or a streamable HTTP URL) and a server to whatever client starts
it, over stdio. It answers its client's handshake at once, connects to the
real server meanwhile, offers what that server offers, and:

- ``tools/call`` goes through :class:`interlock.hosts.mcp._gate.Gate`:
  before_tool_call, the project's ``[[permissions]]`` rules, the call, then
  after_tool_call, with the tool named ``mcp__<server>__<tool>``. A refusal is
  a tool error (``isError``) carrying the reason; a modify rewrites the
  arguments or the result;
- ``resources/read`` and ``prompts/get`` are gated the same way, named
  ``mcp__<server>__resources/read`` (args ``{"uri": ...}``) and
  ``mcp__<server>__prompts/get`` (args ``{"name": ..., "arguments": ...}``);
  a refusal is an MCP error, since they have no error result; hook context
  is an extra text item of the contents, or an extra user message;
- ``tools/list`` leaves out a tool a permission rule denies whatever its
  arguments, and offers no output schemas (a rewritten result need not fit).

Anything that goes wrong in between (the server gone, a result a hook's
rewrite cannot make valid, an error of ours) refuses the call: nothing passes
unchecked (docs/mcp.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from interlock.engine.logs import logger
from interlock.hosts.mcp._gate import (
    PROMPT_GET,
    RESOURCE_READ,
    Gate,
    Gated,
    Refusal,
    as_tool_result,
    error_result,
)

__all__ = ["Upstream", "agent_name", "build_server", "normal_uri", "run_proxy",
           "server_name_for"]

log = logger("interlock.mcp")

_POLICY_ERROR = -32001
"""The JSON-RPC error code of a refused resource read or prompt get."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """The real server: a command to start, or a streamable HTTP URL."""

    command: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None

    def client(self) -> Client:
        if self.url is not None:
            return Client(self.url, cache=None)
        # The server gets the proxy's whole environment: the client that started the
        # proxy chose it for the server (the SDK alone would pass only a few variables).
        env = dict(os.environ) if self.env is None else self.env
        params = StdioServerParameters(command=self.command[0], args=list(self.command[1:]),
                                       env=env, cwd=self.cwd)
        return Client(params, cache=None)


def server_name_for(upstream: Upstream) -> str:
    """A default server name: the command's file name, else the URL's host."""
    if upstream.url is not None:
        from urllib.parse import urlsplit

        base = urlsplit(upstream.url).hostname or "server"
    else:
        base = Path(upstream.command[0]).stem if upstream.command else "server"
    return re.sub(r"[^A-Za-z0-9_-]+", "_", base) or "server"


def agent_name(name: str) -> str:
    """A server's or tool's name as the agents put it in ``mcp__<server>__<tool>``
    (:func:`interlock.executors.toolnames.mcp_name_part`: ``notes.delete`` is
    ``notes_delete``), so a policy written for the names the agent shows meets the
    proxy's calls too (docs/mcp.md, What the policy sees)."""
    from interlock.executors.toolnames import mcp_name_part

    return mcp_name_part(name)


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def normal_uri(uri: str) -> str:
    """``uri`` with each percent-encoded unreserved character decoded and the other
    escapes in upper case (RFC 3986, 6.2.2): the same resource, written one way.
    Hooks see it and the server gets it, so ``%70rivate`` cannot pass a check
    for ``private`` that the server then reads as ``private`` (docs/mcp.md)."""
    def one(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        return char if char in _UNRESERVED else m.group(0).upper()

    return re.sub(r"%([0-9A-Fa-f]{2})", one, uri)


def _dump(model: Any) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return out


def _context_items(gated: Gated) -> list[dict[str, Any]]:
    return [{"type": "text", "text": t} for t in gated.context]


async def _gated_tool(gate: Gate, client: Client,
                      params: types.CallToolRequestParams) -> types.CallToolResult:
    async def run(args: dict[str, Any]) -> dict[str, Any]:
        try:
            return _dump(await client.call_tool(params.name, args))
        except MCPError as exc:  # the server refused the request itself: say so
            return error_result(f"the MCP server answered with an error: {exc.message}")

    try:
        # The policy's name is the agents'; the server is called by its own (in run).
        gated = await gate.call(agent_name(params.name), dict(params.arguments or {}), run)
        if gated.refusal is not None:
            out = error_result(gated.refusal.text)
        elif gated.changed:  # after_tool_call's rewrite, of a respond's value too
            out = as_tool_result(gated.result)
        elif gated.status == "responded":
            out = as_tool_result(gated.result["value"])
        else:
            out = gated.result
        if gated.context:
            out = {**out, "content": [*out.get("content", []), *_context_items(gated)]}
        return types.CallToolResult.model_validate(out)
    except ValidationError as exc:
        log.error("tool %s: a result the policy produced is not a valid MCP result: %s",
                  params.name, exc)
        return types.CallToolResult.model_validate(error_result(
            "Interlock blocked this call: a hook's rewrite of the result is not a valid "
            "MCP tool result"))
    except Exception as exc:  # fail closed: a proxy error is a refusal, never a pass
        log.exception("tool %s: the proxy failed", params.name)
        return types.CallToolResult.model_validate(error_result(
            f"Interlock blocked this call: the proxy failed ({type(exc).__name__}: {exc})"))


async def _gated_other(gate: Gate, what: str, args: dict[str, Any],
                       run: Callable[[dict[str, Any]], Awaitable[Any]],
                       model: type[Any]) -> Any:
    """A resource read or prompt get through the gate; a refusal is an MCP error."""
    async def call(a: dict[str, Any]) -> dict[str, Any]:
        return _dump(await run(a))

    try:
        gated = await gate.call(what, args, call)
        refusal = gated.refusal
        if refusal is None:
            responded = gated.status == "responded" and not gated.changed
            value = gated.result["value"] if responded else gated.result
            result = model.model_validate(value)
            if gated.context:
                _add_context(result, gated.context)
            return result
    except MCPError:
        raise
    except Exception as exc:  # fail closed, as for tools
        log.exception("%s: the proxy failed", what)
        refusal = Refusal(f"the proxy failed ({type(exc).__name__}: {exc})")
    raise MCPError(_POLICY_ERROR, refusal.text)


CONTEXT_URI = "interlock://hook-context"
"""The uri of the extra contents item carrying hook context in a resource read."""


def _add_context(result: Any, context: list[str]) -> None:
    """Hook context where the client reads it: an extra text item of a resource read
    (at :data:`CONTEXT_URI`), an extra user message of a prompt (docs/mcp.md)."""
    if isinstance(result, types.ReadResourceResult):
        result.contents = [*result.contents, *(
            types.TextResourceContents(uri=CONTEXT_URI, mime_type="text/plain", text=t)
            for t in context)]
    elif isinstance(result, types.GetPromptResult):
        result.messages = [*result.messages, *(
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=t))
            for t in context)]
    else:  # pragma: no cover - only the two requests above are gated here
        raise TypeError(f"no place for hook context in a {type(result).__name__}")


class _Connection:
    """The client of the real server, once it is connected (or why it is not)."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.error: BaseException | None = None
        self.ready = anyio.Event()
        self.done = anyio.Event()

    async def get(self) -> Client:
        await self.ready.wait()
        if self.client is None:
            raise RuntimeError(f"the MCP server could not be reached: {self.error}")
        return self.client

    async def hold(self, upstream: Upstream) -> None:
        """Connect, and stay connected until :attr:`done` (the proxy's client left)."""
        try:
            async with upstream.client() as client:
                self.client = client
                self.ready.set()
                await self.done.wait()
        except Exception as exc:  # every call is refused with it (fail closed)
            log.error("the MCP server could not be reached: %s", exc)
            self.error = exc
        finally:
            self.client = None
            self.ready.set()


def build_server(gate: Gate, connection: _Connection, name: str) -> Server[Any]:
    """The proxy's server side: tools, resources and prompts of the real server.

    It answers its client's handshake at once; each request waits for the real
    server's connection (so a slow server does not make the client give up on
    the proxy), and fails when there is none.
    """
    get = connection.get

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        found = await (await get()).list_tools(cursor=params.cursor if params else None)
        # No output schema is offered: a hook's rewrite of a result need not fit
        # one, and a client would reject the rewrite (docs/mcp.md).
        tools = [t.model_copy(update={"output_schema": None})
                 for t in found.tools if not gate.hidden(agent_name(t.name))]
        return found.model_copy(update={"tools": tools})

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            client = await get()
        except Exception as exc:
            return types.CallToolResult.model_validate(error_result(
                f"Interlock blocked this call: the proxy failed ({exc})"))
        return await _gated_tool(gate, client, params)

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        client = await get()
        if client.server_capabilities.resources is None:
            return types.ListResourcesResult(resources=[])
        return await client.list_resources(cursor=params.cursor if params else None)

    async def list_templates(ctx: Any, params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        client = await get()
        if client.server_capabilities.resources is None:
            return types.ListResourceTemplatesResult(resource_templates=[])
        return await client.list_resource_templates(cursor=params.cursor if params else None)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        client = await get()

        async def run(a: dict[str, Any]) -> Any:
            return await client.read_resource(str(a.get("uri", "")))

        result: types.ReadResourceResult = await _gated_other(
            gate, RESOURCE_READ, {"uri": normal_uri(str(params.uri))}, run,
            types.ReadResourceResult)
        return result

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None
                           ) -> types.ListPromptsResult:
        client = await get()
        if client.server_capabilities.prompts is None:
            return types.ListPromptsResult(prompts=[])
        return await client.list_prompts(cursor=params.cursor if params else None)

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams
                         ) -> types.GetPromptResult:
        client = await get()

        async def run(a: dict[str, Any]) -> Any:
            arguments = a.get("arguments") or {}
            return await client.get_prompt(str(a.get("name", "")),
                                           {str(k): str(v) for k, v in arguments.items()})

        result: types.GetPromptResult = await _gated_other(
            gate, PROMPT_GET, {"name": params.name, "arguments": dict(params.arguments or {})},
            run, types.GetPromptResult)
        return result

    return Server(f"interlock:{name}", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource, on_list_prompts=list_prompts,
                  on_get_prompt=get_prompt)


async def run_proxy(upstream: Upstream, *, name: str, project: Path | None = None,
                    config: Path | None = None, accept_hooks: bool = False) -> None:
    """Serve the proxy on stdin/stdout until the client goes."""
    from interlock.hosts.assembly import Host, Project

    name = agent_name(name)
    host = Host.open(Project.discover(project), config=config, accept_hooks=accept_hooks)
    try:
        host.warn_if_unguarded()  # on stderr: stdout carries the protocol
        host.start_live_task()
        gate = Gate(host.engine, name, rules=lambda: host.rules,
                    dispatch=host.registry.dispatch, cwd=os.getcwd())
        connection = _Connection()
        server = build_server(gate, connection, name)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(connection.hold, upstream)
            try:
                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
            finally:
                connection.done.set()
    finally:
        await host.stop_live_task()
        host.close()
