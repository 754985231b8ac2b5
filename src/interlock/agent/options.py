"""What a run is configured with, and what it returns."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock.agent.permissions import PermissionRule
from interlock.agent.scope import ReadScope

if TYPE_CHECKING:
    from interlock.models.permission import Dispatch

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful coding agent. Use the tools to inspect and change the "
    "workspace; explain what you did when you are done."
)


@dataclass(frozen=True, slots=True)
class PermissionPrompt:
    """What a person is asked when a tool call needs permission."""

    tool_name: str
    args: dict[str, Any]
    reason: str | None
    session_id: str


AskPerson = Callable[[PermissionPrompt], "bool | Awaitable[bool]"]


@dataclass(slots=True)
class AgentOptions:
    """Settings of one agent (a subagent inherits its parent's)."""

    model: str = "scripted"
    """Model name shown in events and sent to the provider."""
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    cwd: Path = field(default_factory=Path.cwd)
    """Working directory of the tools."""
    project_root: Path | None = None
    """Where ``.interlock/`` lives; defaults to cwd."""
    platform: str = "cli"
    permissions: list[PermissionRule] = field(default_factory=list)
    """Declarative rules: the policy of non-interactive runs."""
    live_permissions: Callable[[], list[PermissionRule]] | None = None
    """Rules read at every decision, beside ``permissions`` (a host passes the
    registry's, so a config reload applies to the running agent)."""
    dispatch: Dispatch | None = None
    """With ``live_permissions`` a registry's: its ``dispatch`` (Registry.dispatch).
    A tool call is then judged by the rules of the revision whose hooks judged it,
    whenever a reload lands (docs/configuration.md, Live reload)."""
    unmatched_permission: Callable[[str], str | None] | None = None
    """The action (allow, ask, deny) for a call no rule matches, by tool name;
    None for no opinion. The chat gateway denies strangers this way."""
    ask_person: AskPerson | None = None
    """Interactive runs: asks a person; None means no person can answer."""
    permission_timeout: float = 300.0
    """Seconds to wait for a person's answer; no answer in time is a denial."""
    on_text: Callable[[str], None] | None = None
    """Receives reply text: streamed deltas, or the whole text once hooks passed it."""
    on_step: Callable[[str, dict[str, Any]], None] | None = None
    """Receives progress (tool calls, results, blocks) for displays such as the demo."""
    stream: bool = True
    max_turns: int = 25
    tool_timeout: float = 120.0
    """Seconds one tool call may take (terminal has its own ``timeout`` argument too)."""
    output_cap: int = 30_000
    """Characters of tool output kept."""
    tool_retry_cap: int = 2
    """Retries of one tool call that a tool_error hook may ask for."""
    llm_retry_cap: int = 2
    """Retries of one model call that an llm_error hook may ask for."""
    context_cap: int = 10_000
    """Characters of each hook context text."""
    token_budget: int = 60_000
    """Estimated transcript tokens above which the transcript is compacted."""
    keep_recent: int = 6
    """Messages kept verbatim by compaction."""
    max_depth: int = 2
    """Deepest subagent nesting."""
    protected: list[Path] = field(default_factory=list)
    """Extra protected paths, beside .interlock/, the user, managed and state dirs."""
    pinned: Callable[[], Iterable[Path]] | None = None
    """Files pinned by an approval, protected like the policy folders; read at every
    check (a host passes the registry's current ones)."""
    sandbox: str = "auto"
    """The OS sandbox of the terminal: ``auto`` (bubblewrap when it can run here),
    ``required`` (the agent refuses to start without it) or ``off`` (docs/agent.md,
    The sandbox)."""
    sandbox_network: bool = True
    """False: sandboxed commands run with no network (``sandbox_network = false``)."""
    mcp_servers: list[Any] = field(default_factory=list)
    """``[[mcp_servers]]`` to connect at session start (config.mcp_servers.McpServer);
    their tools are offered as ``mcp__<server>__<tool>`` (agent/mcp.py)."""
    mcp_check: Callable[[], bool] | None = None
    """Asked before the servers start: False when the project's servers (or the files
    they run) changed since their approval; then none of them starts."""
    read_scope: ReadScope | None = None
    """Confines the read tools (read_file, list_dir, grep) to folders; the chat
    gateway confines strangers to the project root. None: no confinement beyond
    the state dir's secrets."""


class RunStatus(enum.StrEnum):
    COMPLETED = "completed"
    RESPONDED = "responded"
    """A user_input hook answered instead of the model."""
    BLOCKED = "blocked"
    STOPPED = "stopped"
    ERROR = "error"


@dataclass(slots=True)
class RunResult:
    """What ``Agent.run`` returns."""

    status: RunStatus
    text: str = ""
    """The final reply (or the block / stop / error reason)."""
    session_id: str = ""
    turns: int = 0
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status in (RunStatus.COMPLETED, RunStatus.RESPONDED)
