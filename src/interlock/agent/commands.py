"""Slash commands: /new, /reset, /model, /compact, /help, and registered ones.

Every command first fires the ``command`` gate (matchers see
``command:NAME``): a block refuses it, a respond answers in its place.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from interlock.agent.sessions import Session
from interlock.engine.decisions import Verdict
from interlock.models.tooling import CommandSpec

if TYPE_CHECKING:
    from interlock.agent.loop import Agent


@dataclass(slots=True)
class CommandContext:
    """What a command handler receives."""

    agent: Agent


async def _new(arguments: str, ctx: CommandContext) -> str:
    return await reset_session(ctx.agent, "new")


async def _reset(arguments: str, ctx: CommandContext) -> str:
    return await reset_session(ctx.agent, "clear")


async def _model(arguments: str, ctx: CommandContext) -> str:
    from interlock.agent.prepare import select_model

    agent = ctx.agent
    name = arguments.strip()
    if not name:
        return f"model: {agent.session.model}"
    chosen = await select_model(agent, name, requested=name)
    return f"model: {chosen}" + (f" (a hook chose it instead of {name})" if chosen != name
                                  else "")


async def _compact(arguments: str, ctx: CommandContext) -> str:
    from interlock.agent.compaction import compact

    return await compact(ctx.agent, trigger="manual")


def _help(arguments: str, ctx: CommandContext) -> str:
    return "\n".join(f"/{c.name}  {c.description}" for c in ctx.agent.commands)


BUILTIN = (
    CommandSpec("new", "Start a new session.", _new),
    CommandSpec("reset", "Clear this session and start over.", _reset),
    CommandSpec("model", "Show or choose the model: /model NAME.", _model),
    CommandSpec("compact", "Compact the transcript now.", _compact),
    CommandSpec("help", "List commands.", _help),
)


class CommandRegistry:
    def __init__(self, extra: Iterable[CommandSpec] = ()) -> None:
        self._commands = {c.name: c for c in BUILTIN}
        for spec in extra:
            self.add(spec)

    def add(self, spec: CommandSpec) -> None:
        self._commands[spec.name] = spec

    def get(self, name: str) -> CommandSpec | None:
        return self._commands.get(name)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._commands.values())


async def reset_session(agent: Agent, source: str) -> str:
    """session_reset, end of the old session, then a fresh one (session_start)."""
    old = agent.session
    await agent.observe("session_reset", reason="/new" if source == "new" else "/reset")
    await agent.close(reason="reset")
    agent.session = Session(model=old.model, cwd=str(agent.cwd),
                            system_prompt=agent.options.system_prompt)
    agent.started = False
    agent.pending_context.clear()
    blocked = await agent.start(source)
    if blocked is not None:
        return f"new session {agent.session.id} blocked: {blocked.text}"
    return f"new session {agent.session.id}"


async def run_command(agent: Agent, line: str) -> str | None:
    name, _, arguments = line.strip().removeprefix("/").partition(" ")
    gate = await agent.gate("command", command=name, arguments=arguments.strip())
    if gate.blocked:
        return f"/{name} blocked: {agent.reason_for_model(gate)}"
    if gate.verdict is Verdict.RESPOND:
        return str(gate.outcome.value)
    spec = agent.commands.get(name)
    if spec is None:
        known = ", ".join(f"/{c.name}" for c in agent.commands)
        return f"unknown command /{name}; known: {known}"
    reply = spec.handler(gate.payload.arguments, CommandContext(agent))
    if inspect.isawaitable(reply):
        reply = await reply
    return reply
