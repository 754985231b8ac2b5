"""The event catalog: ONE table of specs that everything else is derived from.

The payload classes (``interlock.events``), their JSON Schemas, the docs page
(``docs/events.md``), config validation, CLI sample payloads and the dialect
and bridge name mappings all read this table. Never describe an event twice.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from interlock.engine.decisions import Verdict

_S = "str"
_OS = "str | None"
_I = "int"
_B = "bool"
_D = "dict[str, Any]"
_LD = "list[dict[str, Any]]"
_LS = "list[str]"
_A = "Any"

TYPES: dict[str, Any] = {
    _S: str, _OS: str | None, _I: int, _B: bool, _D: dict[str, Any],
    _LD: list[dict[str, Any]], _LS: list[str], _A: Any, "float": float,
    "int | None": int | None, "bool | None": bool | None,
}


class Kind(enum.StrEnum):
    GATE = "gate"
    OBSERVE = "observe"


class FailClosed(enum.StrEnum):
    """What a failing ``on_error = "closed"`` hook does to this event."""

    BLOCK = "block"
    """The action does not happen: the failure counts as a block."""
    NO_EFFECT = "no_effect"
    """Block would mean "keep going" (stop checks) or there is nothing to stop."""
    BLOCK_UNLESS_OPERATOR = "block_unless_operator"
    """config_change: blocks only changes an operator did not make."""


# msgspec structs, not dataclasses: the engine defines these on every import, and a
# frozen slotted dataclass takes ~1 ms to define (docs/one-policy.md, Speed).
class Field(msgspec.Struct, frozen=True):
    """One payload field of an event: its name, its type (as text), what it holds,
    and its default (``...``: required)."""

    name: str
    type: str
    doc: str
    default: Any = ...

    @property
    def required(self) -> bool:
        return self.default is ...


class EventSpec(msgspec.Struct, frozen=True):
    """One event of the catalog: every other description of it is made from this."""

    name: str
    kind: Kind
    doc: str
    fields: tuple[Field, ...] = ()
    mutable: tuple[str, ...] = ()
    """Fields a ``modify`` may replace (whole)."""
    accepts: frozenset[Verdict] = frozenset()
    """Decisions a hook may return, besides ``stop`` (every gate) and no opinion."""
    context: bool = False
    """Whether ``context`` text is accepted, and where it goes."""
    respond: str | None = None
    """JSON type of ``respond``'s value (a JSON Schema fragment as text)."""
    subject: str | None = None
    """The field a string matcher is matched against (tool name, command)."""
    fail_closed: FailClosed = FailClosed.BLOCK
    aliases: dict[str, str] = msgspec.field(default_factory=dict)
    """Names in other systems: hermes, moltis, claude, codex, gemini, cursor, pi."""

    def all_fields(self) -> tuple[Field, ...]:
        return COMMON + self.fields


# Fields every event carries (docs/events.md).
COMMON: tuple[Field, ...] = (
    Field("session_id", _S, "Session this event belongs to; stable for the session.", ""),
    Field("turn_id", _OS, "Current turn, where there is one.", None),
    Field("platform", _S, "Where the event came from: cli, api, telegram, ...", "cli"),
    Field("cwd", _S, "Working directory of the agent.", ""),
    Field("transcript_path", _OS, "Transcript file, where one exists.", None),
    Field("parent_session_id", _OS, "Parent session inside a subagent.", None),
    Field("depth", _I, "Subagent depth; 0 for the top-level agent.", 0),
)
_TOOL = (
    Field("tool_call_id", _S, "Correlates before/after events of one call.", ""),
    Field("tool_name", _S, "Tool name; MCP tools are mcp__<server>__<tool>."),
    Field("args", _D, "Tool arguments, validated against the tool's schema.", {}),
)
_STOP = (
    Field("stop_hook_active", _B, "True when a stop hook already blocked in a row.", False),
    Field("block_count", _I, "How many times in a row stop hooks have blocked.", 0),
)

_V = Verdict
G, OBS = Kind.GATE, Kind.OBSERVE


def _a(**names: str) -> dict[str, str]:
    return names


SPECS: tuple[EventSpec, ...] = (
    EventSpec(
        "session_start", G, "A session begins (new, resumed or cleared).",
        (Field("source", _S, "startup | resume | clear | new", "startup"),
         Field("initial_message", _OS, "A first message a hook may suggest.", None),
         Field("watch_paths", _LS, "Paths whose changes fire file_changed.", [])),
        mutable=("initial_message", "watch_paths"), accepts=frozenset({_V.BLOCK, _V.MODIFY}),
        context=True,
        aliases=_a(hermes="on_session_start", moltis="SessionStart", claude="SessionStart",
                   codex="SessionStart", gemini="SessionStart", cursor="sessionStart",
                   pi="session_start")),
    EventSpec(
        "session_end", OBS, "A session ended.",
        (Field("reason", _S, "exit | clear | error | ...", "exit"),),
        aliases=_a(hermes="on_session_end", moltis="SessionEnd", claude="SessionEnd",
                   codex="SessionEnd", gemini="SessionEnd", cursor="sessionEnd",
                   pi="session_shutdown")),
    EventSpec(
        "session_reset", OBS, "The session was reset (/new, /reset).",
        (Field("reason", _S, "The command or cause.", "reset"),),
        aliases=_a(hermes="on_session_reset", pi="session_switch")),
    EventSpec(
        "session_finalize", OBS, "A session's state was written for the last time.",
        (Field("reason", _S, "Why it was finalised.", "exit"),),
        aliases=_a(hermes="on_session_finalize")),
    EventSpec(
        "before_agent_start", G, "The agent is about to start working on a prompt.",
        (Field("prompt", _S, "The prompt the agent will work on.", ""),
         Field("system_prompt", _S, "The system prompt.", "")),
        mutable=("system_prompt",), accepts=frozenset({_V.BLOCK, _V.MODIFY}), context=True,
        aliases=_a(moltis="BeforeAgentStart", pi="before_agent_start")),
    EventSpec(
        "agent_end", OBS, "The agent finished a prompt.",
        (Field("status", _S, "completed | stopped | error", "completed"),
         Field("final_text", _OS, "The last assistant text.", None)),
        aliases=_a(moltis="AgentEnd", cursor="afterAgentResponse",
                   pi="agent_end")),
    EventSpec(
        "user_input", G, "The user submitted input.",
        (Field("text", _S, "What the user typed."),
         Field("model", _OS, "The model the session uses, where the host says.", None),
         Field("first_turn", "bool | None", "True for a session's first input, where the "
               "host says.", None)),
        mutable=("text",), accepts=frozenset({_V.BLOCK, _V.MODIFY, _V.RESPOND}), context=True,
        respond='{"type": "string", "description": "reply shown to the user; no model call"}',
        aliases=_a(hermes="pre_llm_call", claude="UserPromptSubmit", codex="UserPromptSubmit",
                   gemini="BeforeAgent", cursor="beforeSubmitPrompt", pi="input")),
    EventSpec(
        "turn_start", OBS, "A turn (one model call and its tools) begins.",
        (Field("turn_index", _I, "0-based turn number in this run.", 0),),
        aliases=_a(pi="turn_start")),
    EventSpec(
        "turn_end", OBS, "A turn ended.",
        (Field("turn_index", _I, "0-based turn number in this run.", 0),
         Field("tool_calls", _I, "How many tool calls the turn made.", 0)),
        aliases=_a(hermes="post_llm_call", pi="turn_end")),
    EventSpec(
        "before_stop", G, "The agent is about to stop; block means keep working.",
        (Field("last_message", _OS, "The assistant's last text.", None), *_STOP,
         Field("prompt", _OS, "The user's prompt this run answered, where the host says.",
               None)),
        accepts=frozenset({_V.BLOCK}), context=True, fail_closed=FailClosed.NO_EFFECT,
        aliases=_a(hermes="pre_verify", claude="Stop", codex="Stop", gemini="AfterAgent",
                   cursor="stop")),
    EventSpec(
        "before_llm_call", G, "A model call is about to go out.",
        (Field("model", _S, "Model name.", ""),
         Field("messages", _LD, "Chat messages, OpenAI shape.", []),
         Field("params", _D, "Model parameters (temperature, max_tokens, ...).", {}),
         Field("tools", _LS, "Names of the tools offered to the model (the session's active "
               "tools); a modifier may remove names, never add one.", [])),
        mutable=("messages", "params", "tools"),
        accepts=frozenset({_V.BLOCK, _V.MODIFY, _V.RESPOND}), context=True,
        respond='{"type": "object", "properties": {"text": {"type": "string"}, '
                '"tool_calls": {"type": "array"}}, "description": "a synthetic model reply"}',
        aliases=_a(moltis="BeforeLLMCall", gemini="BeforeModel", pi="context")),
    EventSpec(
        "after_llm_call", G, "A model replied; hooks see it before anything acts on it.",
        (Field("model", _S, "Model name.", ""),
         Field("text", _S, "Reply text.", ""),
         Field("tool_calls", _LD, "Requested tool calls: {id, name, args}.", []),
         Field("finish_reason", _OS, "stop | tool_calls | length ...", None),
         Field("synthetic", _B, "True when the reply came from a respond decision.", False)),
        mutable=("text", "tool_calls"), accepts=frozenset({_V.BLOCK, _V.MODIFY}),
        aliases=_a(hermes="transform_llm_output", moltis="AfterLLMCall", gemini="AfterModel")),
    EventSpec(
        "llm_error", G, "A model call failed; a hook may ask for a retry.",
        (Field("model", _S, "Model name.", ""),
         Field("error", _S, "The error, redacted."),
         Field("status_code", "int | None", "HTTP status, where there was one.", None),
         Field("attempt", _I, "1 for the first failure.", 1)),
        accepts=frozenset({_V.RETRY}), fail_closed=FailClosed.NO_EFFECT,
        aliases=_a(hermes="api_request_error", claude="StopFailure")),
    EventSpec(
        "before_tool_call", G, "A tool is about to run.",
        _TOOL, mutable=("args",),
        accepts=frozenset({_V.BLOCK, _V.MODIFY, _V.APPROVE, _V.ASK, _V.RESPOND}), context=True,
        respond='{"description": "the tool result, returned without running the tool"}',
        subject="tool_name",
        aliases=_a(hermes="pre_tool_call", moltis="BeforeToolCall", claude="PreToolUse",
                   codex="PreToolUse", gemini="BeforeTool",
                   cursor="preToolUse|beforeShellExecution|beforeMCPExecution|beforeReadFile",
                   pi="tool_call")),
    EventSpec(
        "after_tool_call", G, "A tool ran (or was blocked); its result can be changed.",
        (*_TOOL,
         Field("result", _A, "The tool's result.", None),
         Field("status", _S, "ok | error | blocked | responded", "ok"),
         Field("duration_ms", "float", "How long the tool ran.", 0.0)),
        mutable=("result",), accepts=frozenset({_V.BLOCK, _V.MODIFY}), context=True,
        subject="tool_name",
        aliases=_a(hermes="post_tool_call", moltis="AfterToolCall", claude="PostToolUse",
                   codex="PostToolUse", gemini="AfterTool",
                   cursor="postToolUse|afterShellExecution|afterMCPExecution|afterFileEdit",
                   pi="tool_result")),
    EventSpec(
        "tool_error", G, "A tool failed; a hook may retry it or rewrite the error.",
        (*_TOOL,
         Field("error", _S, "The error text."),
         Field("attempt", _I, "1 for the first failure.", 1)),
        mutable=("error",), accepts=frozenset({_V.RETRY, _V.MODIFY}), context=True,
        subject="tool_name", fail_closed=FailClosed.NO_EFFECT,
        aliases=_a(claude="PostToolUseFailure")),
    EventSpec(
        "tool_result_persist", G, "A tool result is about to be stored in the transcript.",
        (Field("tool_call_id", _S, "The call.", ""),
         Field("tool_name", _S, "The tool."),
         Field("result", _A, "What will be stored.", None)),
        mutable=("result",), accepts=frozenset({_V.BLOCK, _V.MODIFY}), subject="tool_name",
        aliases=_a(hermes="transform_tool_result", moltis="ToolResultPersist")),
    EventSpec(
        "permission_request", G, "A tool needs permission; hooks may decide for the person.",
        (*_TOOL,
         Field("reason", _OS, "Why permission is needed.", None),
         Field("permission_updates", _LD, "Rules to add, e.g. {tool, pattern, action}.", [])),
        mutable=("permission_updates",),
        accepts=frozenset({_V.APPROVE, _V.BLOCK, _V.ASK, _V.MODIFY}), subject="tool_name",
        aliases=_a(hermes="pre_approval_request", claude="PermissionRequest",
                   codex="PermissionRequest")),
    EventSpec(
        "permission_denied", OBS, "A permission request was denied.",
        (*_TOOL, Field("reason", _OS, "Why.", None)), subject="tool_name",
        aliases=_a(hermes="post_approval_response", claude="PermissionDenied")),
    EventSpec(
        "before_compaction", G, "The transcript is about to be compacted.",
        (Field("trigger", _S, "auto | manual", "auto"),
         Field("message_count", _I, "Messages before compaction.", 0),
         Field("tokens", _I, "Estimated tokens before compaction.", 0),
         Field("instructions", _OS, "Instructions for the summariser.", None),
         Field("summary", _OS, "A summary to use instead of the model's.", None)),
        mutable=("instructions", "summary"), accepts=frozenset({_V.BLOCK, _V.MODIFY}),
        aliases=_a(moltis="BeforeCompaction", claude="PreCompact", codex="PreCompact",
                   gemini="PreCompress", cursor="preCompact", pi="session_before_compact")),
    EventSpec(
        "after_compaction", OBS, "The transcript was compacted.",
        (Field("summary", _S, "The summary that replaced old messages.", ""),
         Field("messages_before", _I, "Message count before.", 0),
         Field("messages_after", _I, "Message count after.", 0)),
        aliases=_a(moltis="AfterCompaction", claude="PostCompact",
                   codex="PostCompact", pi="session_compact")),
    EventSpec(
        "subagent_start", G, "A subagent is about to start.",
        (Field("task", _S, "The task given to the child."),
         Field("child_session_id", _S, "The child's session.", "")),
        mutable=("task",), accepts=frozenset({_V.BLOCK, _V.MODIFY}), context=True,
        aliases=_a(hermes="subagent_start", claude="SubagentStart", codex="SubagentStart",
                   cursor="subagentStart")),
    EventSpec(
        "subagent_stop", G, "A subagent is about to stop; block means it keeps working.",
        (Field("child_session_id", _S, "The child's session.", ""),
         Field("result", _OS, "The child's final text.", None), *_STOP),
        accepts=frozenset({_V.BLOCK}), fail_closed=FailClosed.NO_EFFECT,
        aliases=_a(hermes="subagent_stop", claude="SubagentStop", codex="SubagentStop",
                   cursor="subagentStop")),
    EventSpec(
        "message_received", G, "A chat message arrived at the gateway.",
        (Field("sender_id", _S, "Authenticated sender.", ""),
         Field("channel", _S, "Channel or conversation id.", ""),
         Field("message_id", _S, "Message id.", ""),
         Field("text", _S, "Message text.")),
        mutable=("text",), accepts=frozenset({_V.SKIP, _V.MODIFY, _V.BLOCK}),
        aliases=_a(hermes="pre_gateway_dispatch", moltis="MessageReceived")),
    EventSpec(
        "before_message_send", G, "A reply is about to be sent to a chat.",
        (Field("recipient_id", _S, "Who receives it.", ""),
         Field("channel", _S, "Channel or conversation id.", ""),
         Field("content", _S, "The reply.")),
        mutable=("content",), accepts=frozenset({_V.MODIFY, _V.BLOCK}),
        aliases=_a(moltis="MessageSending")),
    EventSpec(
        "message_sent", OBS, "A reply was sent.",
        (Field("recipient_id", _S, "Who received it.", ""),
         Field("channel", _S, "Channel or conversation id.", ""),
         Field("content", _S, "What was sent.", "")),
        aliases=_a(moltis="MessageSent")),
    EventSpec(
        "command", G, "A slash command was entered; matchers see `command:NAME`.",
        (Field("command", _S, "Command name without the slash."),
         Field("arguments", _S, "Text after the command.", "")),
        accepts=frozenset({_V.BLOCK, _V.RESPOND}),
        respond='{"type": "string", "description": "reply; the command counts as handled"}',
        subject="command",
        aliases=_a(hermes="pre_command", moltis="Command", claude="UserPromptExpansion")),
    EventSpec(
        "task_created", G, "A todo item is about to be created.",
        (Field("task_id", _S, "Task id.", ""), Field("title", _S, "Task title.")),
        accepts=frozenset({_V.BLOCK}),
        aliases=_a(claude="TaskCreated")),
    EventSpec(
        "task_completed", G, "A todo item is about to be marked done.",
        (Field("task_id", _S, "Task id.", ""), Field("title", _S, "Task title.")),
        accepts=frozenset({_V.BLOCK}),
        aliases=_a(claude="TaskCompleted")),
    EventSpec(
        "model_select", G, "A model is being chosen for a call or a session.",
        (Field("model", _S, "The model about to be used."),
         Field("requested", _OS, "What was asked for, e.g. by /model.", None)),
        mutable=("model",), accepts=frozenset({_V.MODIFY}), fail_closed=FailClosed.NO_EFFECT,
        aliases=_a(pi="model_select")),
    EventSpec(
        "config_change", G, "The hooks configuration changed and is about to be applied.",
        (Field("path", _S, "The file that changed.", ""),
         Field("source", _S, "managed | project | user | bundled", "project"),
         Field("revision", _I, "The revision that would become active.", 0),
         Field("operator", _B, "True when an operator made the change.", False),
         Field("summary", _S, "What changed.", "")),
        accepts=frozenset({_V.BLOCK}), fail_closed=FailClosed.BLOCK_UNLESS_OPERATOR,
        aliases=_a(claude="ConfigChange")),
    EventSpec(
        "file_changed", OBS, "A watched file changed.",
        (Field("path", _S, "The file."),
         Field("change", _S, "created | modified | deleted", "modified"),
         Field("tool_name", _OS, "The tool that changed it, if any.", None)),
        aliases=_a(claude="FileChanged")),
    EventSpec(
        "cwd_changed", OBS, "The agent's working directory changed.",
        (Field("old_cwd", _S, "Before.", ""), Field("new_cwd", _S, "After.", "")),
        aliases=_a(claude="CwdChanged")),
    EventSpec(
        "notification", OBS, "The agent needs a person's attention.",
        (Field("message", _S, "What to tell the person."),
         Field("kind", _S, "permission_prompt | idle | info", "info")),
        aliases=_a(claude="Notification", gemini="Notification")),
    EventSpec(
        "gateway_start", OBS, "The chat gateway started.",
        (Field("address", _S, "Where it listens.", ""),),
        aliases=_a(moltis="GatewayStart")),
    EventSpec(
        "gateway_stop", OBS, "The chat gateway is stopping.",
        (Field("reason", _S, "Why.", "shutdown"),),
        aliases=_a(moltis="GatewayStop")),
)

SYSTEMS = ("hermes", "moltis", "claude", "codex", "gemini", "cursor", "pi")
BY_NAME: dict[str, EventSpec] = {spec.name: spec for spec in SPECS}


def spec(name: str) -> EventSpec:
    """The spec of event ``name``; a did-you-mean error for unknown names."""
    try:
        return BY_NAME[name]
    except KeyError:
        from interlock.engine.errors import UnknownEventError

        raise UnknownEventError(name, list(BY_NAME)) from None


def names_in(system: str, event: EventSpec) -> tuple[str, ...]:
    """What ``system`` calls ``event`` (several names are separated by ``|``)."""
    raw = event.aliases.get(system)
    return tuple(raw.split("|")) if raw else ()


def from_alias(system: str, name: str) -> list[EventSpec]:
    """Catalog events that ``system`` calls ``name``."""
    return list(_by_alias(system).get(name, ()))


_ALIASES: dict[str, dict[str, list[EventSpec]]] = {}
"""System -> its event names -> catalog events: a bridge maps every hook call it
gets, so the catalog is read once per system, not scanned per call."""


def _by_alias(system: str) -> dict[str, list[EventSpec]]:
    try:
        return _ALIASES[system]
    except KeyError:
        table: dict[str, list[EventSpec]] = {}
        for s in SPECS:
            for alias in dict.fromkeys(names_in(system, s)):  # each spec once per name
                table.setdefault(alias, []).append(s)
        _ALIASES[system] = table  # two threads may build it at once; either is right
        return table
