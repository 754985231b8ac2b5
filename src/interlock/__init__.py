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

from interlock.engine import lazy as _lazy

# Not `typing.TYPE_CHECKING`: importing typing costs the bridges ~3 ms; mypy
# treats any name TYPE_CHECKING as true.
_TYPE_CHECKING = False
if _TYPE_CHECKING:
    from interlock.engine.decisions import (
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
    from interlock.engine.dispatch import Engine, Handle
    from interlock.engine.errors import (
        ConfigError,
        ContractError,
        HookCrash,
        HookFailure,
        HookTimeout,
        InterlockError,
        RegistrationError,
        UnknownEventError,
    )
    from interlock.engine.hooks import Hook, Invocation, OnError, Source
    from interlock.engine.outcome import Outcome
    from interlock.engine.sinks import FailureRecord, Sink
    from interlock.events import Event

__version__ = "0.1.0"

# Names are imported on first use (PEP 562): `interlock bridge` imports
# subpackages of `interlock` and must not pay ~60 ms for the engine and
# asyncio it may never need (docs/one-policy.md, Run the server).
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("Decision", "Verdict", "approve", "ask", "block", "context", "modify", "respond",
         "retry", "skip", "stop"), "interlock.engine.decisions"),
    **dict.fromkeys(("Engine", "Handle"), "interlock.engine.dispatch"),
    **dict.fromkeys(
        ("ConfigError", "ContractError", "HookCrash", "HookFailure", "HookTimeout",
         "InterlockError", "RegistrationError", "UnknownEventError"), "interlock.engine.errors"),
    **dict.fromkeys(("Hook", "Invocation", "OnError", "Source"), "interlock.engine.hooks"),
    "Outcome": "interlock.engine.outcome",
    **dict.fromkeys(("FailureRecord", "Sink"), "interlock.engine.sinks"),
    "Event": "interlock.events",
}


def __getattr__(name: str) -> object:
    return _lazy.attribute(globals(), _LAZY, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), _LAZY)


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
