"""The permission rules on tools that config files declare and the reference agent
enforces (:class:`interlock.agent.permissions.PermissionPolicy`).

Its own module, re-exported by :mod:`interlock.models.tooling`: loading a config
must not build the agent's tool and model contracts (a first bridge call loads
the config itself; docs/one-policy.md, Speed), so neither does ``interlock.models``.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence
    from typing import Any, TypeAlias

    from interlock.engine.events import Event
    from interlock.engine.outcome import Outcome

    Dispatch: TypeAlias = Callable[
        [Event], tuple[Coroutine[Any, Any, Outcome], Sequence["PermissionRule"]]]
    """``engine.emit(event)`` and the rules of the revision whose hooks it runs,
    taken as one (Registry.dispatch; docs/configuration.md, Live reload)."""


class PermissionRule(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A declarative permission rule: the policy of non-interactive runs."""

    tool: str
    """Tool name, or a glob such as ``mcp__github__*``."""
    action: Literal["allow", "ask", "deny"]
    pattern: str = "*"
    """A glob on the call's main argument (a terminal command, a path). On a
    command line it is tried on each simple command and, for deny and ask
    rules, on what each runs through a wrapper or shell string (``sudo rm`` is
    ``rm``; :class:`interlock.agent.permissions.PermissionPolicy`)."""
    source: str = ""
    """Where it was declared (filled in by the loader)."""

    @property
    def any_argument(self) -> bool:
        """True when the pattern matches every argument, even one that cannot be read."""
        return self.pattern in ("", "*")

    def matches_tool(self, tool_name: str) -> bool:
        return fnmatch.fnmatchcase(tool_name, self.tool)

    def matches(self, tool_name: str, argument: str | None = None) -> bool:
        if not self.matches_tool(tool_name):
            return False
        if self.any_argument:
            return True
        return argument is not None and fnmatch.fnmatchcase(argument, self.pattern)
