"""Active tools: which of a session's tools the model sees, and the refusal of
the others.

A session offers every tool of its registry unless something narrowed it:

- ``ctx.tools.set_active(names)`` from an extension (or ``agent.active.set``)
  for the session (kept with it, so a resumed session keeps it), or with
  ``scope="turn"`` for the next model call's turn only;
- a before_llm_call modifier that removes names from the event's ``tools``.
  It can only remove: a name the session has not active is an invalid change,
  that hook's failure (docs/engine.md, Phases).

A tool a permission rule denies whatever its arguments is never active.

A call to a tool the model was not offered (an old transcript, a guess, an
after_llm_call rewrite) is refused by an engine-level hook,
``code:engine.active-tools``, registered on before_tool_call for this session
only while its set is narrowed. Being a hook, its block goes through the
engine like any other: sinks and the audit log see it, after_tool_call fires,
and no later hook can turn it into an allow (block beats every decision but
stop). A refusal in the agent's own code would leave sinks blind to it.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from interlock.engine.decisions import Decision, block
from interlock.engine.dispatch import Engine, Handle
from interlock.engine.hooks import Source

if TYPE_CHECKING:
    from interlock.agent.loop import Agent

SCOPES = ("session", "turn")
STAND_IN = "engine.active-tools"
"""Name of the hook that refuses calls to inactive tools (``code:engine.active-tools``)."""

CURRENT: ContextVar[Agent | None] = ContextVar("interlock_current_agent", default=None)
"""The agent whose events are being handled: set by every gate and observe of
an agent, and by the chat host around its UI handlers."""

_SESSIONS: weakref.WeakValueDictionary[str, ActiveTools] = weakref.WeakValueDictionary()
_VALIDATED: weakref.WeakSet[Engine] = weakref.WeakSet()


def current() -> Agent:
    """The agent in scope; RuntimeError (saying where to call from) when none is."""
    agent = CURRENT.get()
    if agent is None:
        raise RuntimeError("no agent session is in scope: call ctx.tools.active() and "
                           "ctx.tools.set_active() from a hook, a tool, a command or a chat "
                           "UI handler (not from register(), and not in a host that runs no "
                           "agent, such as `interlock serve`)")
    return agent


class ActiveTools:
    """The active set of one agent's session."""

    def __init__(self, agent: Agent) -> None:
        self._agent = weakref.ref(agent)
        self._turn: frozenset[str] | None = None
        self._turn_of: str | None = None
        """The turn that used the turn-scoped set (it ends with that turn)."""
        self.offered: frozenset[str] | None = None
        """What the current turn's model call offered (None before the first call)."""
        self._offered_turn: str | None = None
        self._handle: Handle | None = None
        self._handle_session = ""
        _SESSIONS[agent.session.id] = self
        _install_validator(agent.engine)

    @property
    def agent(self) -> Agent:
        agent = self._agent()
        assert agent is not None
        return agent

    def _chosen(self, name: str) -> bool:
        """Whether the session's and the turn's sets (where set) both hold ``name``."""
        chosen = self.agent.session.active_tools
        return (chosen is None or name in chosen) and (self._turn is None or name in self._turn)

    def names(self) -> list[str]:
        """The active tools, in the registry's order: what the model is offered."""
        agent = self.agent
        return [n for n in agent.tools.names()
                if self._chosen(n) and not _denied_outright(agent, n)]

    def set(self, names: Iterable[str] | None, scope: str = "session") -> list[str]:
        """Make ``names`` the active tools (None: all of them again); returns the set."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        agent = self.agent
        chosen: list[str] | None = None
        if names is not None:
            if isinstance(names, str):
                raise TypeError("set_active takes a list of tool names, not one string")
            chosen = list(dict.fromkeys(str(n) for n in names))
            unknown = [n for n in chosen if agent.tools.get(n) is None]
            if unknown:
                raise ValueError(f"unknown tool(s) {', '.join(map(repr, unknown))}; this "
                                 f"session has: {', '.join(agent.tools.names())}")
        if scope == "session":
            agent.session.active_tools = chosen
        else:
            self._turn = None if chosen is None else frozenset(chosen)
            self._turn_of = None
        self.sync()
        return self.names()

    # -- the agent's side ---------------------------------------------------------
    def begin_call(self, turn_id: str | None) -> list[str]:
        """The names to offer at a model call of ``turn_id`` (binds a turn-scoped set)."""
        _SESSIONS[self.agent.session.id] = self  # /new and /reset change the id
        if self._turn is not None and self._turn_of is None:
            self._turn_of = turn_id
        return self.names()

    def offer(self, turn_id: str | None, names: Iterable[str]) -> None:
        """Record what a model call offered: its replies may call these only."""
        self.offered = frozenset(names)
        self._offered_turn = turn_id
        self.sync()

    def end_turn(self, turn_id: str | None) -> None:
        if self._turn is not None and self._turn_of is not None and self._turn_of == turn_id:
            self._turn = None
            self._turn_of = None
        if self._offered_turn == turn_id:
            self.offered = None
        self.sync()

    def permitted(self, name: str) -> bool:
        """May a call to ``name`` go on to the other gates? Only when it is active
        now and the turn's model call offered it. A tool a deny rule covers
        whatever its arguments is not offered, but a call to it goes on, so the
        permission rule refuses it with its own reason."""
        if not self._chosen(name):
            return False
        return (self.offered is None or name in self.offered
                or _denied_outright(self.agent, name))

    def narrowed(self) -> bool:
        return not all(self.permitted(n) for n in self.agent.tools.names())

    def sync(self) -> None:
        """Register the stand-in while the set is narrowed, remove it when it is not."""
        agent = self._agent()
        if agent is None:
            return
        _SESSIONS[agent.session.id] = self
        narrowed = self.narrowed()
        if self._handle is not None and self._handle_session != agent.session.id:
            self.close()  # the session changed under the agent (/new, /reset)
        if narrowed and self._handle is None:
            self._handle_session = agent.session.id
            self._handle = agent.engine.on(
                "before_tool_call", self._check, name=STAND_IN, source=Source.CODE,
                priority=-(2**31), matcher={"session_id": re.escape(agent.session.id)},
                on_error="closed", timeout=None,
                description="refuses calls to tools that are not active in this session")
        elif not narrowed and self._handle is not None:
            self.close()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.unregister()
            self._handle = None

    def _check(self, event: Any) -> Decision | None:
        name = event.tool_name
        if self.permitted(name):
            return None
        active = [n for n in self.agent.tools.names() if self.permitted(n)]
        return block(f"tool {name!r} is not active in this session; the active tools are: "
                     f"{', '.join(active) or 'none'}",
                     hint="use one of the active tools, or ask the user to enable it")


def _denied_outright(agent: Agent, name: str) -> bool:
    """A tool a deny rule covers whatever its arguments: never offered."""
    policy = agent.policy
    rules = policy.rules if policy.live is None else [*policy.live(), *policy.rules]
    return any(r.action == "deny" and r.any_argument and r.matches_tool(name) for r in rules)


def _install_validator(engine: Engine) -> None:
    """A before_llm_call modifier may narrow ``tools``, never widen them."""
    if engine in _VALIDATED:
        return

    def check(event: Any) -> None:
        active = _SESSIONS.get(event.session_id)
        if active is None:
            return
        allowed = set(active.names())
        extra = [n for n in event.tools if n not in allowed]
        if extra:
            raise ValueError(f"tools may only be narrowed: {', '.join(map(repr, extra))} "
                             "is not active in this session")

    engine.add_validator("before_llm_call", check)
    _VALIDATED.add(engine)
