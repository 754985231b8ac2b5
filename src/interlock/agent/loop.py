"""The agent: sessions, turns, model calls and tool calls, gated by the engine.

One run of ``Agent.run(prompt)`` goes through four phases, one module each:

1. prepare (``prepare.py``): session_start, model_select, user_input,
   before_agent_start; the prompt and hook context become the user message.
2. call the model (``model_call.py``): compaction, before_llm_call, the call
   (streamed only when no hook must see the text first), llm_error retries,
   after_llm_call.
3. run tools (``tool_run.py``): every call of a reply concurrently, each
   through before_tool_call, permissions, the tool, tool_error retries,
   after_tool_call and tool_result_persist.
4. resolve (``resolve.py``): before_stop; a block is the next instruction.

Every event the agent fires, with its merged outcome, is kept on the session
(what ``interlock replay`` re-evaluates). A ``stop`` from any gate ends the run.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from interlock.agent.active import CURRENT as CURRENT_AGENT
from interlock.agent.commands import CommandRegistry
from interlock.agent.options import AgentOptions, RunResult, RunStatus
from interlock.agent.permissions import PermissionPolicy, PermissionRule, pinnable
from interlock.agent.protect import ProtectedPaths
from interlock.agent.sandbox import Sandbox
from interlock.agent.sessions import Session, SessionStore
from interlock.agent.tools import ToolRegistry
from interlock.engine.decisions import Verdict
from interlock.engine.dispatch import Engine
from interlock.engine.outcome import Outcome
from interlock.engine.redact import redact
from interlock.events import EVENT_TYPES, Event
from interlock.models.tooling import ModelProvider, ToolSpec

BUFFERING_EVENTS = ("after_llm_call", "before_message_send")
"""While a hook is on one of these, reply text is not streamed before it passed."""


RECORDED_MESSAGES = 20
"""before_llm_call payloads are recorded with their last messages only: the whole
transcript on every call would make the event log grow with the square of its length."""


def _recordable(event: Event) -> dict[str, Any]:
    data = event.to_dict()
    if event.name == "before_llm_call" and len(data["messages"]) > RECORDED_MESSAGES:
        data["messages"] = data["messages"][-RECORDED_MESSAGES:]
    return data


class RunStopped(Exception):
    """A hook answered ``stop``: the run ends and the reason goes to the user."""

    def __init__(self, outcome: Outcome) -> None:
        hook = outcome.hook.qualified_name if outcome.hook is not None else "a hook"
        super().__init__(f"stopped by {hook}: {outcome.reason or ''}".rstrip(": "))
        self.outcome = outcome


class Gate:
    """A gate's merged outcome plus the payload to act on."""

    __slots__ = ("event", "live", "outcome")

    def __init__(self, event: Event, outcome: Outcome,
                 live: Sequence[PermissionRule] | None = None) -> None:
        self.event = event
        self.outcome = outcome
        self.live = live
        """The live rules of the revision whose hooks made ``outcome`` (when the
        options' ``dispatch`` paired them), to judge the call by."""

    @property
    def payload(self) -> Any:
        return self.outcome.payload or self.event

    @property
    def verdict(self) -> Verdict:
        return self.outcome.verdict

    @property
    def blocked(self) -> bool:
        return self.outcome.verdict is Verdict.BLOCK

    def context(self, cap: int) -> str:
        return self.outcome.context_text(cap) if self.outcome.contexts else ""


class Agent:
    """The reference agent. Build one per session; ``await agent.run(prompt)``."""

    def __init__(
        self,
        engine: Engine,
        model: ModelProvider,
        *,
        options: AgentOptions | None = None,
        store: SessionStore | None = None,
        tools: ToolRegistry | None = None,
        extra_tools: list[ToolSpec] | None = None,
        commands: CommandRegistry | None = None,
        session: Session | None = None,
        parent: Agent | None = None,
    ) -> None:
        self.engine = engine
        self.model = model
        self.options = options = options or AgentOptions()
        self.store = store
        self.parent = parent
        self.resumed = session is not None and parent is None and bool(session.messages)
        self.session = session or Session(model=options.model, cwd=str(options.cwd),
                                          system_prompt=options.system_prompt)
        if not self.session.system_prompt:
            self.session.system_prompt = options.system_prompt
        if not self.session.model:
            self.session.model = options.model
        self.cwd = Path(self.session.cwd or options.cwd).resolve()
        self.session.cwd = str(self.cwd)
        if tools is None:
            from interlock.agent.builtin_tools import builtin_tools
            from interlock.agent.subagents import delegate_tool

            tools = ToolRegistry([*builtin_tools(), delegate_tool(), *(extra_tools or [])])
        self.tools = tools
        tools.install_validator(engine)
        from interlock.agent.model_call import install_reply_validator

        install_reply_validator(engine)
        self.commands = commands or CommandRegistry()
        if parent is None:
            live = options.live_permissions
            self.policy = PermissionPolicy(options.permissions,
                                           live=pinnable(live) if live is not None else None,
                                           unmatched=options.unmatched_permission)
        else:
            # A subagent is bound by its session's rules as they stand at each
            # call, including those hooks or people added to it; what it adds
            # itself stays its own (docs/agent.md, Permissions).
            inherited = parent.policy
            self.policy = PermissionPolicy(
                live=lambda: [*(inherited.live() if inherited.live else ()), *inherited.rules],
                unmatched=inherited.unmatched)
        extra: list[str | Path] = [*options.protected]
        if store is not None and str(store.path) != ":memory:":
            extra.append(store.path)
        self.protected = ProtectedPaths.default(options.project_root or options.cwd, extra,
                                                options.pinned)
        self.sandbox: Sandbox = parent.sandbox if parent is not None else Sandbox(
            lambda: self.protected.roots, self._hidden,
            network=options.sandbox_network, mode=options.sandbox)
        self.started = False
        self.turn_id: str | None = None
        self.prompt: str | None = None
        """The user's prompt this run answers (as hooks let it through)."""
        self.pending_context: list[str] = []
        """Hook context waiting for the next user message (from session_start)."""
        self._recorded: list[tuple[Event, Outcome]] = []
        from interlock.agent.active import ActiveTools

        self.active = ActiveTools(self)
        """The tools the model sees (agent/active.py)."""
        self.resources = contextlib.AsyncExitStack()
        """What the session holds open (MCP servers' connections); closed by close()."""

    def _hidden(self) -> list[Path]:
        """What the sandbox hides from commands: the state dir's secrets, and for a
        confined agent (a chat stranger's) the credential places of the home too."""
        if self.options.read_scope is None:
            return list(self.protected.secrets)
        from interlock.agent.scope import home_secrets

        return [*self.protected.secrets, *home_secrets()]

    # -- events -------------------------------------------------------------
    @property
    def transcript_path(self) -> str | None:
        return str(self.store.path) if self.store is not None else None

    def event(self, name: str, **fields: Any) -> Event:
        s = self.session
        return EVENT_TYPES[name](
            session_id=s.id, turn_id=self.turn_id, platform=self.options.platform,
            cwd=str(self.cwd), transcript_path=self.transcript_path,
            parent_session_id=s.parent_id, depth=s.depth, **fields)

    async def gate(self, name: str, **fields: Any) -> Gate:
        """Fire a gate event; a ``stop`` raises RunStopped."""
        event = self.event(name, **fields)
        CURRENT_AGENT.set(self)
        live = None
        if name == "before_tool_call" and self.options.dispatch is not None:
            # The hooks and the live rules of one revision, whenever a reload lands.
            dispatched, live = self.options.dispatch(event)
            outcome = await dispatched
        else:
            outcome = await self.engine.emit(event)
        self._recorded.append((event, outcome))
        if outcome.verdict is Verdict.STOP:
            raise RunStopped(outcome)
        return Gate(event, outcome, live)

    async def observe(self, name: str, **fields: Any) -> None:
        """Fire an observe event and wait for its hooks (a decision there is a warning)."""
        event = self.event(name, **fields)
        CURRENT_AGENT.set(self)
        outcome = await self.engine.emit(event)
        self._recorded.append((event, outcome))

    def hooks_on(self, events: tuple[str, ...]) -> bool:
        return any(e in events for h in self.engine.hooks for e in h.events)

    def reason_for_model(self, gate: Gate | Outcome) -> str:
        """A block reason as the model may see it: redacted, naming the hook."""
        outcome = gate.outcome if isinstance(gate, Gate) else gate
        hook = outcome.hook.qualified_name if outcome.hook is not None else "a hook"
        return redact(f"{outcome.reason or 'no reason given'} (blocked by {hook})")

    def step(self, kind: str, **data: Any) -> None:
        if self.options.on_step is not None:
            self.options.on_step(kind, data)

    # -- persistence --------------------------------------------------------
    def save(self) -> None:
        """Write new messages and recorded events (redacted) in one transaction."""
        recorded, self._recorded = self._recorded, []
        self.session.events.extend(
            (ev.name, _recordable(ev), outcome.to_dict(ev)) for ev, outcome in recorded)
        if self.store is not None:
            self.store.save(self.session)
        else:
            self.session.events.clear()

    # -- lifecycle ----------------------------------------------------------
    async def start(self, source: str | None = None) -> RunResult | None:
        """session_start and model_select; a RunResult when a hook blocked the session."""
        from interlock.agent.prepare import start_session

        return await start_session(self, source or ("resume" if self.resumed else "startup"))

    async def run(self, prompt: str) -> RunResult:
        """Work on ``prompt`` until the model stops (or a hook ends the run)."""
        from interlock.agent.prepare import prepare

        began = False
        try:
            prepared = await prepare(self, prompt)
            if prepared is not None:
                return self._finished(prepared)
            began = True
            result = await self.work()
        except RunStopped as exc:
            result = RunResult(RunStatus.STOPPED, text=str(exc), reason=exc.outcome.reason)
        except BaseException:
            self.save()
            raise
        finally:
            self.turn_id = None
        if began:
            await self.observe("agent_end", status=result.status.value, final_text=result.text)
        return self._finished(result)

    async def resume_with(self, instruction: str, hook: str = "engine") -> RunResult:
        """Continue working with a hook's instruction as the next message (not the user's)."""
        self.add_hook_message(instruction, hook)
        try:
            result = await self.work()
        except RunStopped as exc:
            result = RunResult(RunStatus.STOPPED, text=str(exc), reason=exc.outcome.reason)
        finally:
            self.turn_id = None
        return self._finished(result)

    def add_hook_message(self, text: str, hook: str) -> None:
        wrapped = f'<hook-context hook="{hook}">\n{text[: self.options.context_cap]}\n' \
                  "</hook-context>"
        self.session.messages.append({"role": "user", "content": "", "hook_context": wrapped})

    def _finished(self, result: RunResult) -> RunResult:
        result.session_id = self.session.id
        self.save()
        return result

    async def work(self) -> RunResult:
        """Turns until the model replies with no tool call and before_stop lets it stop."""
        from interlock.agent.model_call import call_model
        from interlock.agent.resolve import resolve
        from interlock.agent.tool_run import run_tools

        for index in range(self.options.max_turns):
            self.turn_id = uuid.uuid4().hex[:12]
            await self.observe("turn_start", turn_index=index)
            reply = await call_model(self)
            if isinstance(reply, RunResult):
                await self.observe("turn_end", turn_index=index, tool_calls=0)
                self.active.end_turn(self.turn_id)
                reply.turns = index + 1
                return reply
            if reply.tool_calls:
                try:
                    await run_tools(self, reply)
                finally:
                    await self.observe("turn_end", turn_index=index,
                                       tool_calls=len(reply.tool_calls))
                    self.active.end_turn(self.turn_id)
                    self.save()
                continue
            await self.observe("turn_end", turn_index=index, tool_calls=0)
            self.active.end_turn(self.turn_id)
            done = await resolve(self, reply)
            if done is not None:
                done.turns = index + 1
                return done
        return RunResult(RunStatus.ERROR, text=f"stopped after {self.options.max_turns} turns "
                         "(max_turns)", turns=self.options.max_turns)

    async def command(self, line: str) -> str | None:
        """Run a slash command (``/name arguments``); returns the reply text."""
        from interlock.agent.commands import run_command

        try:
            return await run_command(self, line)
        except RunStopped as exc:
            return str(exc)
        finally:
            self.save()

    async def change_cwd(self, new_cwd: str) -> None:
        old = str(self.cwd)
        self.cwd = Path(new_cwd).resolve()  # noqa: ASYNC240 - no I/O worth a thread
        self.session.cwd = str(self.cwd)
        await self.observe("cwd_changed", old_cwd=old, new_cwd=str(self.cwd))

    async def close(self, reason: str = "exit") -> None:
        """session_end, then the last write, then session_finalize."""
        await self.observe("session_end", reason=reason)
        self.save()
        await self.observe("session_finalize", reason=reason)
        self.active.close()
        self.save()
        await self.resources.aclose()

    def child(self, session: Session, tools: ToolRegistry) -> Agent:
        options = replace(self.options, on_text=None, cwd=self.cwd)
        return Agent(self.engine, self.model, options=options, store=self.store, tools=tools,
                     commands=self.commands, session=session, parent=self)
