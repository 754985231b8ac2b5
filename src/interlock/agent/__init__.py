"""The reference agent: a real loop that fires every event of the catalog.

    from interlock import Engine
    from interlock.agent import Agent, AgentOptions
    from interlock.testing import ScriptedModel

    model = ScriptedModel([{"tool_calls": [{"name": "terminal", "args": {"command": "ls"}}]},
                           {"text": "done"}])
    result = await Agent(Engine(), model).run("list the files")
"""

from interlock.engine import lazy as _lazy

# Names are imported on first use (PEP 562), as in `interlock` itself: the bridge
# judges a call by the project's rules with interlock.agent.permissions alone, and
# must not pay ~300 ms for the agent's loop to do so (docs/one-policy.md, Speed).
_TYPE_CHECKING = False
if _TYPE_CHECKING:
    from interlock.agent.commands import CommandContext, CommandRegistry
    from interlock.agent.loop import Agent, RunStopped
    from interlock.agent.options import AgentOptions, PermissionPrompt, RunResult, RunStatus
    from interlock.agent.permissions import Action, PermissionPolicy, PermissionRule
    from interlock.agent.protect import ProtectedPaths
    from interlock.agent.sessions import Session, SessionStore
    from interlock.agent.tools import ToolContext, ToolError, ToolRegistry

__all__ = [
    "Action",
    "Agent",
    "AgentOptions",
    "CommandContext",
    "CommandRegistry",
    "PermissionPolicy",
    "PermissionPrompt",
    "PermissionRule",
    "ProtectedPaths",
    "RunResult",
    "RunStatus",
    "RunStopped",
    "Session",
    "SessionStore",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
]

_LAZY: dict[str, str] = {
    **dict.fromkeys(("CommandContext", "CommandRegistry"), "interlock.agent.commands"),
    **dict.fromkeys(("Agent", "RunStopped"), "interlock.agent.loop"),
    **dict.fromkeys(("AgentOptions", "PermissionPrompt", "RunResult", "RunStatus"),
                    "interlock.agent.options"),
    **dict.fromkeys(("Action", "PermissionPolicy", "PermissionRule"),
                    "interlock.agent.permissions"),
    "ProtectedPaths": "interlock.agent.protect",
    **dict.fromkeys(("Session", "SessionStore"), "interlock.agent.sessions"),
    **dict.fromkeys(("ToolContext", "ToolError", "ToolRegistry"), "interlock.agent.tools"),
}


def __getattr__(name: str) -> object:
    return _lazy.attribute(globals(), _LAZY, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), _LAZY)
