"""The reference agent: a real loop that fires every event of the catalog.

    from interlock import Engine
    from interlock.agent import Agent, AgentOptions
    from interlock.testing import ScriptedModel

    model = ScriptedModel([{"tool_calls": [{"name": "terminal", "args": {"command": "ls"}}]},
                           {"text": "done"}])
    result = await Agent(Engine(), model).run("list the files")
"""

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
