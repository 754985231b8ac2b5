"""The shapes a user writes: one hook definition, requirements, permission rules.

These are validated with msgspec (types, unknown fields) and then by
:func:`interlock.config.validate.check_hook` (meaning: events, matchers,
timeouts, paths). Every problem becomes a ConfigError naming the file, the
line, the field and the fix.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import msgspec

from interlock.models.permission import PermissionRule as PermissionRule

MAX_TIMEOUT = 600.0
DEFAULT_TIMEOUT = 60.0


class HookKind(enum.StrEnum):
    PYTHON = "python"
    COMMAND = "command"
    WORKER = "worker"
    HTTP = "http"
    PROMPT = "prompt"
    AGENT = "agent"
    MCP = "mcp"


LLM_KINDS = frozenset({HookKind.PROMPT, HookKind.AGENT})
"""Judges that read text an attacker may have written: block, ask, context or nothing."""


class Requires(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """What a hook needs to be eligible; an unmet need makes it ineligible, with why."""

    os: list[str] = []
    """Operating systems: linux, darwin (or macos), windows, freebsd."""
    bins: list[str] = []
    """Programs that must be on PATH."""
    env: list[str] = []
    """Environment variables that must be set."""


class HookDef(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """One hook as written in config.toml / config.yaml / HOOK.md / HOOK.yaml."""

    name: str
    description: str = ""
    events: list[str] | str = []
    kind: HookKind | None = None
    """python (a handler), command (spawn per call), worker (long-lived JSON lines),
    http (POST to a URL), prompt (one model call), agent (a read-only sub-agent) or
    mcp (a tool of an MCP server that ``command`` starts)."""
    command: str | list[str] | None = None
    """A string runs through ``sh -c`` (Hermes dialect: split, no shell); a list is argv."""
    handler: str | None = None
    """A Python file defining ``handle(event)``, relative to the declaring folder."""
    matcher: str | dict[str, str] | None = None
    priority: int = 0
    timeout: float = DEFAULT_TIMEOUT
    """Bounds one attempt (seconds)."""
    retries: int = 0
    """Extra attempts after a retryable failure (timeout, crash), within ``retry_budget``."""
    retry_budget: float | None = None
    """Total seconds for every attempt and backoff (default: timeout x attempts + backoffs)."""
    breaker_threshold: int = 3
    """Consecutive failed invocations that open the circuit breaker; 0 turns it off."""
    breaker_cooldown: float = 60.0
    """Seconds an open breaker waits before letting one probe through."""
    on_error: Literal["open", "closed"] | None = None
    dialect: str | None = None
    modifies: bool = False
    background: bool = False
    shadow: bool = False
    enabled: bool | None = None
    """None: on, except bundled hooks, which are off until enabled."""
    blocking: bool = False
    """A sync Python handler that blocks: run it on a worker thread with its timeout."""
    overridable: bool = False
    """A project hook of the same name may shadow this (user or bundled) hook."""
    env: dict[str, str] = {}
    env_passthrough: list[str] = []
    requires: Requires = msgspec.field(default_factory=Requires)
    cwd: str | None = None
    url: str | None = None
    """http: where each invocation is POSTed."""
    headers_from_env: dict[str, str] = {}
    """http: header name -> the NAME of the environment variable holding its value."""
    hmac_secret_env: str | None = None
    """http: the variable holding the secret the body is signed with."""
    allow_private: list[str] = []
    """http: private hosts or networks it may reach (each use is logged)."""
    prompt: str | None = None
    """prompt / agent: the template ({{invocation_json}}, {{event.<field>}}, ...)."""
    prompt_file: str | None = None
    """prompt / agent: the template in a file, relative to the declaring folder."""
    model: str | None = None
    """prompt / agent: scripted:FILE, openai:NAME, ... (default $INTERLOCK_MODEL)."""
    max_output: int | None = None
    """prompt / agent: characters of answer accepted (past it, a failure)."""
    max_input: int | None = None
    """prompt / agent: characters of rendered prompt accepted (past it, a failure)."""
    max_turns: int | None = None
    """agent: model turns before the judge has failed."""
    max_cost: int | None = None
    """agent: tokens the judge may spend before it has failed."""
    server: str | None = None
    """mcp: the server's name in messages (default: the hook's name)."""
    tool: str | None = None
    """mcp: the tool called with the wire request as its arguments (docs/mcp.md)."""
    options: dict[str, Any] = {}
    """Handed to a Python handler's ``configure(options)`` once, when it is loaded.
    An entry that enables a hook declared elsewhere may set them too."""

    @property
    def event_list(self) -> list[str]:
        return [self.events] if isinstance(self.events, str) else list(self.events)

    @property
    def effective_kind(self) -> HookKind:
        if self.kind is not None:
            return self.kind
        if self.handler is not None:
            return HookKind.PYTHON
        if self.url is not None:
            return HookKind.HTTP
        if self.prompt is not None or self.prompt_file is not None:
            return HookKind.PROMPT
        return HookKind.COMMAND

    def is_reference(self) -> bool:
        """True for an entry that only names a hook declared elsewhere (to enable it)."""
        return self.command is None and self.handler is None and self.kind is None \
            and not self.events and self.url is None and self.prompt is None \
            and self.prompt_file is None

    def normalised(self) -> dict[str, Any]:
        """The definition with defaults filled in, for digests (stable key order)."""
        data: dict[str, Any] = msgspec.to_builtins(msgspec.structs.replace(
            self, events=self.event_list, kind=self.effective_kind))
        data.pop("enabled", None)  # turning a hook on or off is not an edit of it
        return dict(sorted(data.items()))


class McpServerDef(msgspec.Struct, forbid_unknown_fields=True, kw_only=True,
                   omit_defaults=True):
    """One ``[[mcp_servers]]`` entry: an MCP server whose tools the reference agent
    offers as ``mcp__<name>__<tool>`` (docs/mcp.md, MCP servers in the agent)."""

    name: str
    command: str | list[str] | None = None
    """stdio: the server's argv (a string is split like a shell would, run without one)."""
    args: list[str] = []
    """More arguments after ``command``."""
    env: dict[str, str] = {}
    """Variables added to the environment the server starts with."""
    cwd: str | None = None
    """Where the server starts (relative to the config file's project; default: the
    project root)."""
    url: str | None = None
    """streamable HTTP: the server's URL (instead of ``command``)."""
    timeout: float = 60.0
    """Seconds one tool call may take."""
    enabled: bool = True
    required: bool = True
    """``true``: a server that cannot start stops the run with its error; ``false``:
    a warning, and the run goes on without its tools."""

    def normalised(self) -> dict[str, Any]:
        """The definition for digests (stable key order); ``enabled`` is no edit."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        data.pop("enabled", None)
        return dict(sorted(data.items()))


class ConfigDoc(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A whole config file."""

    version: int = 1
    hooks: list[dict[str, Any]] = []
    permissions: list[dict[str, Any]] = []
    mcp_servers: list[dict[str, Any]] = []
    sandbox: Literal["auto", "required"] | None = None
    """The agent's OS sandbox: ``required`` refuses to start without one
    (docs/agent.md, The sandbox). Any place may require it; none can lift that."""
    sandbox_network: bool | None = None
    """``false``: sandboxed commands get no network. Any place may turn it off."""
