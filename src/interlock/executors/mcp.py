"""``kind = "mcp"``: a hook that is a tool of an MCP server (docs/mcp.md, MCP hooks).

The server is started from the hook's ``command`` (an argv list, or a string
split like a shell would, run without one) over stdio, once per call like a
command hook, in the hook's ``cwd`` with the same clean environment. The
wire contract maps onto the tool like this:

- arguments: the wire request (docs/wire-contract.md), its fields as the
  tool's arguments: ``contract_version``, ``invocation_id``, ``event``,
  ``hook``, ``session_id``, ``cwd``, ``replay``, ``payload``;
- result: the answer, as the tool's structured content (an object) or as its
  text (JSON; empty text is no opinion), read like a command hook's stdout;
- a tool error (``isError``) is the hook's crash, and its text the error: the
  hook's ``on_error`` decides, so a fail-closed hook blocks;
- the server not starting, not answering within ``timeout`` or answering
  something that is not an answer is a failure the same way.

Approval pins the files ``command`` runs, as for a command hook
(:mod:`interlock.config.pins`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp import Client, StdioServerParameters

from interlock.engine.decisions import Decision, decode_wire
from interlock.engine.errors import ConfigError, ContractError, HookCrash, HookTimeout
from interlock.engine.hooks import Executor
from interlock.engine.strictjson import AmbiguousJSON
from interlock.engine.strictjson import loads as strict_loads
from interlock.executors._process import clean_env

if TYPE_CHECKING:
    from interlock.engine.hooks import Invocation

__all__ = ["McpToolExecutor"]


class McpToolExecutor(Executor):
    """Calls one tool of a stdio MCP server per invocation (an ``Executor``)."""

    def __init__(self, command: str | Sequence[str], *, tool: str, server: str, hook_name: str,
                 cwd: str | Path, env: Mapping[str, str] | None = None,
                 env_passthrough: Sequence[str] = (), timeout: float = 60.0,
                 project_dir: str | Path | None = None) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ConfigError(f"hook {hook_name!r} has an empty command", field="command",
                              fix='write the MCP server\'s command: ["python3", "server.py"]')
        self.argv = argv
        self.tool = tool
        self.server = server
        self.cwd = str(cwd)
        self.env = dict(env or {})
        self.env_passthrough = tuple(env_passthrough)
        self.timeout = float(timeout)
        self.project_dir = str(project_dir if project_dir is not None else cwd)

    def __repr__(self) -> str:
        return f"McpToolExecutor({self.argv!r}, tool={self.tool!r})"

    async def __call__(self, invocation: Invocation) -> Decision | None:
        label = f"{invocation.hook.qualified_name!r} (mcp tool {self.server}/{self.tool})"
        env = clean_env({"INTERLOCK_PROJECT_DIR": self.project_dir, **self.env},
                        self.env_passthrough)
        params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=env,
                                       cwd=self.cwd)
        try:
            with anyio.fail_after(self.timeout):
                async with Client(params, cache=None) as client:
                    result = await client.call_tool(self.tool, invocation.wire())
        except TimeoutError:
            raise HookTimeout(f"hook {label} did not answer within {self.timeout:g}s") from None
        except Exception as exc:
            raise HookCrash(f"hook {label} failed: {type(exc).__name__}: {exc}") from None
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            raise HookCrash(f"hook {label} answered with a tool error: {text[:2000]}")
        answer: Any = result.structured_content
        if not (isinstance(answer, dict) and set(answer) != {"result"}):
            # No structured answer (or the SDK's {"result": text} wrapper): read the text.
            if not text.strip():
                return None
            try:
                answer = strict_loads(text)
            except AmbiguousJSON as exc:  # one reader's block is another's "none"
                raise ContractError(f"hook {label} answered an ambiguous JSON text ({exc}): "
                                    f"{text[:200]!r} (fix: name each field once)") from None
            except ValueError:
                raise ContractError(f"hook {label} answered text that is not JSON: "
                                    f"{text[:200]!r}") from None
        try:
            return decode_wire(answer)
        except ValueError as exc:
            raise ContractError(f"hook {label}: {exc}") from None
