"""Interlock: lifecycle hooks for LLM agents.

    from interlock import Engine, block
    from interlock.events import BeforeToolCall

    engine = Engine()

    @engine.on("before_tool_call", matcher="terminal")
    def no_rm(event):
        if "rm -rf" in event.args.get("command", ""):
            return block("destructive command", hint="delete specific paths")

    outcome = engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"}))
"""

from interlock._decisions import (
    Decision,
    Verdict,
    approve,
    ask,
    block,
    context,
    modify,
    respond,
    retry,
    skip,
    stop,
)
from interlock._dispatch import Engine, Handle
from interlock._errors import (
    ConfigError,
    ContractError,
    HookCrash,
    HookFailure,
    HookTimeout,
    InterlockError,
    RegistrationError,
    UnknownEventError,
)
from interlock._hooks import Hook, Invocation, OnError, Source
from interlock._outcome import Outcome
from interlock._sinks import FailureRecord, Sink
from interlock.events import Event

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "ContractError",
    "Decision",
    "Engine",
    "Event",
    "FailureRecord",
    "Handle",
    "Hook",
    "HookCrash",
    "HookFailure",
    "HookTimeout",
    "InterlockError",
    "Invocation",
    "OnError",
    "Outcome",
    "RegistrationError",
    "Sink",
    "Source",
    "UnknownEventError",
    "Verdict",
    "approve",
    "ask",
    "block",
    "context",
    "modify",
    "respond",
    "retry",
    "skip",
    "stop",
]
