"""The event classes as type checkers see them, generated from the catalog.

interlock.events builds these classes from the catalog table when it is
imported; a type checker cannot run that, so it reads these declarations
(imported by interlock.events under TYPE_CHECKING; empty at run time).
Regenerate it after changing the catalog: write the text of
interlock.events.type_declarations() to src/interlock/engine/event_types.py.
tests/engine/test_typed_on.py fails when this file and the catalog disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interlock.engine.events import Event


    class SessionStart(Event, frozen=True, kw_only=True):
        """``session_start``."""

        source: str = 'startup'
        initial_message: str | None = None
        watch_paths: list[str] = []


    class SessionEnd(Event, frozen=True, kw_only=True):
        """``session_end``."""

        reason: str = 'exit'


    class SessionReset(Event, frozen=True, kw_only=True):
        """``session_reset``."""

        reason: str = 'reset'


    class SessionFinalize(Event, frozen=True, kw_only=True):
        """``session_finalize``."""

        reason: str = 'exit'


    class BeforeAgentStart(Event, frozen=True, kw_only=True):
        """``before_agent_start``."""

        prompt: str = ''
        system_prompt: str = ''


    class AgentEnd(Event, frozen=True, kw_only=True):
        """``agent_end``."""

        status: str = 'completed'
        final_text: str | None = None


    class UserInput(Event, frozen=True, kw_only=True):
        """``user_input``."""

        text: str
        model: str | None = None
        first_turn: bool | None = None


    class TurnStart(Event, frozen=True, kw_only=True):
        """``turn_start``."""

        turn_index: int = 0


    class TurnEnd(Event, frozen=True, kw_only=True):
        """``turn_end``."""

        turn_index: int = 0
        tool_calls: int = 0


    class BeforeStop(Event, frozen=True, kw_only=True):
        """``before_stop``."""

        last_message: str | None = None
        stop_hook_active: bool = False
        block_count: int = 0
        prompt: str | None = None


    class BeforeLlmCall(Event, frozen=True, kw_only=True):
        """``before_llm_call``."""

        model: str = ''
        messages: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        tools: list[str] = []


    class AfterLlmCall(Event, frozen=True, kw_only=True):
        """``after_llm_call``."""

        model: str = ''
        text: str = ''
        tool_calls: list[dict[str, Any]] = []
        finish_reason: str | None = None
        synthetic: bool = False


    class LlmError(Event, frozen=True, kw_only=True):
        """``llm_error``."""

        model: str = ''
        error: str
        status_code: int | None = None
        attempt: int = 1


    class BeforeToolCall(Event, frozen=True, kw_only=True):
        """``before_tool_call``."""

        tool_call_id: str = ''
        tool_name: str
        args: dict[str, Any] = {}


    class AfterToolCall(Event, frozen=True, kw_only=True):
        """``after_tool_call``."""

        tool_call_id: str = ''
        tool_name: str
        args: dict[str, Any] = {}
        result: Any = None
        status: str = 'ok'
        duration_ms: float = 0.0


    class ToolError(Event, frozen=True, kw_only=True):
        """``tool_error``."""

        tool_call_id: str = ''
        tool_name: str
        args: dict[str, Any] = {}
        error: str
        attempt: int = 1


    class ToolResultPersist(Event, frozen=True, kw_only=True):
        """``tool_result_persist``."""

        tool_call_id: str = ''
        tool_name: str
        result: Any = None


    class PermissionRequest(Event, frozen=True, kw_only=True):
        """``permission_request``."""

        tool_call_id: str = ''
        tool_name: str
        args: dict[str, Any] = {}
        reason: str | None = None
        permission_updates: list[dict[str, Any]] = []


    class PermissionDenied(Event, frozen=True, kw_only=True):
        """``permission_denied``."""

        tool_call_id: str = ''
        tool_name: str
        args: dict[str, Any] = {}
        reason: str | None = None


    class BeforeCompaction(Event, frozen=True, kw_only=True):
        """``before_compaction``."""

        trigger: str = 'auto'
        message_count: int = 0
        tokens: int = 0
        instructions: str | None = None
        summary: str | None = None


    class AfterCompaction(Event, frozen=True, kw_only=True):
        """``after_compaction``."""

        summary: str = ''
        messages_before: int = 0
        messages_after: int = 0


    class SubagentStart(Event, frozen=True, kw_only=True):
        """``subagent_start``."""

        task: str
        child_session_id: str = ''


    class SubagentStop(Event, frozen=True, kw_only=True):
        """``subagent_stop``."""

        child_session_id: str = ''
        result: str | None = None
        stop_hook_active: bool = False
        block_count: int = 0


    class MessageReceived(Event, frozen=True, kw_only=True):
        """``message_received``."""

        sender_id: str = ''
        channel: str = ''
        message_id: str = ''
        text: str


    class BeforeMessageSend(Event, frozen=True, kw_only=True):
        """``before_message_send``."""

        recipient_id: str = ''
        channel: str = ''
        content: str


    class MessageSent(Event, frozen=True, kw_only=True):
        """``message_sent``."""

        recipient_id: str = ''
        channel: str = ''
        content: str = ''


    class Command(Event, frozen=True, kw_only=True):
        """``command``."""

        command: str
        arguments: str = ''


    class TaskCreated(Event, frozen=True, kw_only=True):
        """``task_created``."""

        task_id: str = ''
        title: str


    class TaskCompleted(Event, frozen=True, kw_only=True):
        """``task_completed``."""

        task_id: str = ''
        title: str


    class ModelSelect(Event, frozen=True, kw_only=True):
        """``model_select``."""

        model: str
        requested: str | None = None


    class ConfigChange(Event, frozen=True, kw_only=True):
        """``config_change``."""

        path: str = ''
        source: str = 'project'
        revision: int = 0
        operator: bool = False
        summary: str = ''


    class FileChanged(Event, frozen=True, kw_only=True):
        """``file_changed``."""

        path: str
        change: str = 'modified'
        tool_name: str | None = None


    class CwdChanged(Event, frozen=True, kw_only=True):
        """``cwd_changed``."""

        old_cwd: str = ''
        new_cwd: str = ''


    class Notification(Event, frozen=True, kw_only=True):
        """``notification``."""

        message: str
        kind: str = 'info'


    class GatewayStart(Event, frozen=True, kw_only=True):
        """``gateway_start``."""

        address: str = ''


    class GatewayStop(Event, frozen=True, kw_only=True):
        """``gateway_stop``."""

        reason: str = 'shutdown'


__all__ = [
    "AfterCompaction",
    "AfterLlmCall",
    "AfterToolCall",
    "AgentEnd",
    "BeforeAgentStart",
    "BeforeCompaction",
    "BeforeLlmCall",
    "BeforeMessageSend",
    "BeforeStop",
    "BeforeToolCall",
    "Command",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "GatewayStart",
    "GatewayStop",
    "LlmError",
    "MessageReceived",
    "MessageSent",
    "ModelSelect",
    "Notification",
    "PermissionDenied",
    "PermissionRequest",
    "SessionEnd",
    "SessionFinalize",
    "SessionReset",
    "SessionStart",
    "SubagentStart",
    "SubagentStop",
    "TaskCompleted",
    "TaskCreated",
    "ToolError",
    "ToolResultPersist",
    "TurnEnd",
    "TurnStart",
    "UserInput",
]
