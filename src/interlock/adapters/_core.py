"""What every framework adapter shares: the project's policy, events, and decisions.

An adapter turns its framework's hook points into catalog events, emits them
on one :class:`Policy`, and applies the outcome the way its framework can
(docs/adapters.md). The policy is the project's: :meth:`Policy.engine` opens
the host assembly (:class:`interlock.hosts.assembly.Host`) for the nearest folder
holding ``.interlock/``, so the same hooks, consent, audit and dead letters
apply as in ``interlock run`` and ``serve``.

The rules every adapter keeps:

- ``stop`` ends the run: :class:`PolicyStopped` propagates out of the
  framework's run call.
- A decision the framework cannot express at that point raises
  :class:`DecisionNotSupported`: it is never dropped (a ``modify`` nobody
  applies would let the original through).
- A blocked tool call returns :meth:`Outcome.tool_block_error` to the model
  as the tool's result; the tool does not run.
- A hook that can decide on an event the framework never fires is refused at
  a run's start (:meth:`Policy.check_fired`), not left silently unasked.
- after_tool_call and tool_result_persist run for every tool call, a blocked
  or answered one too, as in the reference agent; a call a person refused at
  the framework's approval step is a blocked one, after permission_denied
  (:meth:`Policy.refused`).
- The project's ``[[permissions]]`` rules apply after before_tool_call, as in
  the reference agent (docs/agent.md, Permissions): a ``deny`` rule blocks
  (even over a hook's approve), an ``ask`` rule asks where the framework can,
  and blocks where it cannot.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import uuid
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from interlock.adapters._session import SessionEnd
from interlock.engine.decisions import Verdict
from interlock.engine.errors import InterlockError
from interlock.engine.logs import logger
from interlock.events import EVENT_TYPES, AfterToolCall, BeforeToolCall, ToolResultPersist

if TYPE_CHECKING:
    from interlock.agent.permissions import RuleJudge
    from interlock.config.model import PermissionRule
    from interlock.engine.dispatch import Engine
    from interlock.engine.outcome import Outcome
    from interlock.events import Event
    from interlock.hosts.assembly import Host

__all__ = ["DENIED", "GATEWAY_EVENTS", "NOT_IN_FRAMEWORKS", "AfterTool", "DecisionNotSupported",
           "Policy", "PolicyStopped", "RunInput", "SessionEnd", "ToolGate"]


class PolicyStopped(InterlockError):
    """A hook answered ``stop``: the run ends here."""

    def __init__(self, event: str, reason: str | None, hook: str | None) -> None:
        self.event = event
        self.reason = reason
        self.hook = hook
        super().__init__(f"stopped by {hook or 'a hook'} on {event}: "
                         f"{reason or 'no reason given'}")


class DecisionNotSupported(InterlockError):
    """A hook decided something this framework cannot carry out at this point.

    Raised rather than ignored: the run ends, as a failing fail-closed hook would.
    """

    def __init__(self, framework: str, event: str, decision: str, hook: str | None,
                 fix: str) -> None:
        self.framework = framework
        self.event = event
        self.decision = decision
        self.hook = hook
        self.fix = fix
        super().__init__(f"{framework} cannot apply {decision!r} on {event} (from "
                         f"{hook or 'a hook'}); the run is ended instead of ignoring it "
                         f"(fix: {fix})")


@dataclass(slots=True)
class ToolGate:
    """What to do with one tool call, from its before_tool_call outcome."""

    action: Literal["run", "block", "respond", "ask"]
    args: dict[str, Any]
    """The arguments to run with (changed by a modify)."""
    value: Any
    """block: the structured error for the model; respond: the result to return."""
    reason: str | None
    context: str
    """Hook context to add to the tool's result ('' when none)."""
    outcome: Outcome


@dataclass(slots=True)
class AfterTool:
    result: Any
    """The result to give the model (changed, or a block error)."""
    context: str


@dataclass(slots=True)
class RunInput:
    """A run's input, once session_start (the Policy's first run) and user_input
    let it through."""

    text: str
    """The input to run with (changed by a modify of user_input)."""
    context: str
    """Hook context from both events, for the model ('' when none)."""
    respond: str | None = None
    """A hook's answer to the input (respond, where the adapter can apply it): the
    run ends with it, without a model call."""


_log = logger("interlock")
GATEWAY_EVENTS = frozenset({"message_received", "before_message_send", "message_sent",
                            "gateway_start", "gateway_stop"})
"""A chat gateway's events: no agent framework, nor the Claude Agent SDK, has
those messages, so a hook on them has nothing to miss there."""

NOT_IN_FRAMEWORKS = GATEWAY_EVENTS | {"command", "config_change", "task_created",
                                      "task_completed", "file_changed", "cwd_changed"}
"""What an agent framework's run has no counterpart of: a gateway's messages, and an
interactive CLI's slash commands, settings, task list and working folder."""

_hosts: dict[Path, Host] = {}
_hosts_lock = threading.Lock()


def close_hosts() -> None:
    """Close every host the adapters opened (at exit, or when a test ends)."""
    with _hosts_lock:
        hosts = list(_hosts.values())
        _hosts.clear()
    for host in hosts:
        host.close()


atexit.register(close_hosts)


class Policy:
    """The project's policy for one framework's runs.

    ``project``: the project root, else found from the working folder up, as
    ``interlock run`` finds it. ``engine``: an engine to use as it is instead
    (tests, benchmarks, an application that assembles its own), with
    ``rules`` as its ``[[permissions]]`` rules (none by default). The host is
    opened on first use and shared by every Policy of the same project in this
    process; it stays live (edits and ``hooks approve``/``revoke`` apply within
    about half a second) and is closed at exit.
    """

    def __init__(self, framework: str, *, project: str | os.PathLike[str] | None = None,
                 engine: Engine | None = None, session_id: str | None = None,
                 live: bool = True, rules: Iterable[PermissionRule] = ()) -> None:
        self.framework = framework
        """Reported as every event's ``platform``."""
        self.session_id = session_id or f"{framework}-{uuid.uuid4().hex[:12]}"
        self._chosen_id = session_id is not None
        self._project = Path(project) if project is not None else None
        self._engine = engine
        self._host: Host | None = None
        self._rules = list(rules)
        self._live = live
        self._cwd = os.getcwd()
        self._checked: tuple[int, frozenset[str]] | None = None
        self._session_started = False
        self._warned: set[tuple[str, str]] = set()
        self._judge: RuleJudge | None = None
        """Judges tool calls by the rules in force (built once per revision of them)."""
        self._types = EVENT_TYPES

    @property
    def engine(self) -> Engine:
        """The engine of the project's host, opened on first use."""
        if self._engine is None:
            self._host = self._open_host()
            self._engine = self._host.engine
        return self._engine

    def rules(self) -> list[PermissionRule]:
        """The ``[[permissions]]`` rules in force now: the host's current revision's,
        or the ones given with ``engine``."""
        if self._host is None and self._engine is None:
            self.engine  # noqa: B018 - opens the host
        return self._host.rules if self._host is not None else self._rules

    def dispatch(self, event: Event) -> tuple[Coroutine[Any, Any, Outcome],
                                              Sequence[PermissionRule]]:
        """``engine.emit(event)`` and the rules of the revision whose hooks it runs
        (the host's, whenever a reload lands: docs/configuration.md, Live reload)."""
        engine = self.engine  # opens the host
        if self._host is None:
            return engine.emit(event), self._rules
        return self._host.registry.dispatch(event)

    def _open_host(self) -> Host:
        from interlock.hosts.assembly import Host, Project

        project = Project.discover(self._project.resolve() if self._project else None)
        with _hosts_lock:
            host = _hosts.get(project.root)
            if host is None:
                host = Host.open(project, extensions=None)
                host.warn_if_unguarded()
                if self._live:
                    host.start_live()
                _hosts[project.root] = host
        return host

    # -- events -------------------------------------------------------------------
    def check_fired(self, fires: Iterable[str], *, absent: Iterable[str] = ()) -> None:
        """Refuse a hook that could act on an event this framework never fires.

        ``fires``: the catalog events the adapter emits; ``absent``: events whose
        action the framework does not have at all (a chat gateway's messages), so
        a hook there has nothing to miss. A hook that can decide (on a gate event,
        not shadow or background) on any other event raises
        :class:`~interlock.ConfigError`, naming the hook and the event, since its
        decision would never be asked for while the action goes on; an
        observe-only one, or one on an ``absent`` event, gets a warning. Checked
        once per revision of the hooks and set of events, at each run's start.
        """
        engine = self.engine
        fired = fires if isinstance(fires, frozenset) else frozenset(fires)
        if self._checked == (engine.revision, fired):
            return
        from interlock.engine.catalog import BY_NAME, Kind
        from interlock.engine.errors import ConfigError

        missing = set(absent)
        for hook in engine.hooks:
            for name in hook.events:
                if name in fired or not _for_platform(hook, self.framework):
                    continue
                gate = (BY_NAME[name].kind is Kind.GATE and not hook.shadow
                        and not hook.background and name not in missing)
                where = hook.meta.get("file")
                if gate:
                    raise ConfigError(
                        f"hook {hook.qualified_name!r} is on {name}, which the "
                        f"{self.framework} adapter never fires, so its decisions would "
                        "never apply", file=str(where) if where else None, field="events",
                        fix=f"drop {name} from the hook's events, or limit the hook to the "
                            "hosts that fire it with a matcher on 'platform' "
                            "(docs/adapters.md, Events each adapter fires)")
                key = (hook.qualified_name, name)
                if key not in self._warned:
                    self._warned.add(key)
                    _log.warning("interlock: hook %r is on %s, which the %s adapter never "
                                 "fires; it will not run here (docs/adapters.md)",
                                 hook.qualified_name, name, self.framework)
        self._checked = (engine.revision, fired)

    def event(self, name: str, **fields: Any) -> Event:
        return self._types[name](session_id=self.session_id, platform=self.framework,
                                 cwd=self._cwd, **fields)

    def listens(self, name: str) -> bool:
        """Whether any hook is on event ``name`` now: when none is, an adapter may
        skip building costly fields (a conversation) for it, or skip the event
        where it knows the answer: an event with no hooks is "no opinion", and
        reaches no sink (docs/engine.md)."""
        return self.engine._has_hooks(self._types[name])

    def emit(self, name: str, **fields: Any) -> Coroutine[Any, Any, Outcome]:
        """The engine's ``emit`` of event ``name``: ``await`` it for the outcome.
        (A plain method: a coroutine of its own around the engine's would cost
        a frame on every event.)"""
        return self.engine.emit(self.event(name, **fields))

    def emit_sync(self, name: str, **fields: Any) -> Outcome:
        return self.engine.emit_sync(self.event(name, **fields))

    def notify(self, name: str, **fields: Any) -> None:
        """An observe event: hooks run, nothing waits for them."""
        self.engine.notify(self.event(name, **fields))

    def apply(self, outcome: Outcome, *, can: Iterable[str] = (), fix: str = "") -> None:
        """Raise on ``stop``, and on any decision not in ``can`` (modify and context
        included: a change nobody applies would let the original through)."""
        verdict = outcome.verdict
        if verdict is _NONE and not outcome.changes and not outcome.contexts:
            return  # the common case, first
        if verdict is Verdict.STOP:
            raise PolicyStopped(outcome.name, outcome.reason, hook_name(outcome))
        allowed = set(can)
        if verdict is not Verdict.NONE and verdict.value not in allowed:
            raise DecisionNotSupported(self.framework, outcome.name, verdict.value,
                                       hook_name(outcome), fix or _FIX)
        if outcome.changes and "modify" not in allowed:
            raise DecisionNotSupported(self.framework, outcome.name, "modify",
                                       hook_name(outcome), fix or _FIX)
        if outcome.contexts and "context" not in allowed:
            raise DecisionNotSupported(self.framework, outcome.name, "context",
                                       hook_name(outcome), fix or _FIX)

    # -- a run's start ------------------------------------------------------------
    async def start_run(self, text: str, *, fires: Iterable[str],
                        can: Iterable[str] = ("block",)) -> RunInput:
        """Check the hooks against ``fires`` (:meth:`check_fired`, with
        :data:`NOT_IN_FRAMEWORKS` absent), then emit session_start on this
        Policy's first run and user_input on ``text``. ``can``: what the adapter
        applies of user_input's decisions besides block (``modify``,
        ``context``); any other decision raises."""
        self.check_fired(fires, absent=NOT_IN_FRAMEWORKS)
        contexts: list[str] = []
        if not self._session_started:
            contexts.append(self._session(await self.emit("session_start"), can))
        outcome = await self.emit("user_input", text=text, first_turn=bool(contexts))
        return self._input(outcome, text, contexts, can)

    def start_run_sync(self, text: str, *, fires: Iterable[str],
                       can: Iterable[str] = ("block",)) -> RunInput:
        self.check_fired(fires, absent=NOT_IN_FRAMEWORKS)
        contexts: list[str] = []
        if not self._session_started:
            contexts.append(self._session(self.emit_sync("session_start"), can))
        outcome = self.emit_sync("user_input", text=text, first_turn=bool(contexts))
        return self._input(outcome, text, contexts, can)

    def end_session(self, reason: str = "exit") -> None:
        """session_end, once, for a session whose first run fired session_start.
        The next run starts a new session (session_start again), under a new id
        unless one was chosen."""
        if not self._session_started:
            return
        self._session_started = False
        self.notify("session_end", reason=reason)
        if not self._chosen_id:
            self.session_id = f"{self.framework}-{uuid.uuid4().hex[:12]}"

    def _session(self, outcome: Outcome, can: Iterable[str]) -> str:
        self.apply(outcome, can={"block", *can} & {"block", "context"}, fix=_INPUT_FIX)
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason, hook_name(outcome))
        self._session_started = True
        return outcome.context_text()

    def _input(self, outcome: Outcome, text: str, contexts: list[str],
               can: Iterable[str]) -> RunInput:
        self.apply(outcome, can={"block", *can}, fix=_INPUT_FIX)
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason, hook_name(outcome))
        contexts.append(outcome.context_text())
        answer = str(outcome.value) if outcome.verdict is Verdict.RESPOND else None
        return RunInput(outcome.changes.get("text", text), joined(*contexts),
                        answer)

    # -- tool calls ---------------------------------------------------------------
    # The tool events are built here directly, not through event(): they are the
    # ones every tool call pays for (docs/adapters.md, Overhead).
    async def before_tool(self, name: str, args: dict[str, Any], call_id: str = "",
                          *, can_ask: bool = True) -> ToolGate:
        event = BeforeToolCall(session_id=self.session_id, platform=self.framework,
                               cwd=self._cwd, tool_call_id=call_id, tool_name=name, args=args)
        dispatched, rules = self.dispatch(event)
        return self._gate(await dispatched, event, rules, can_ask=can_ask)

    def before_tool_sync(self, name: str, args: dict[str, Any], call_id: str = "",
                         *, can_ask: bool = True) -> ToolGate:
        event = BeforeToolCall(session_id=self.session_id, platform=self.framework,
                               cwd=self._cwd, tool_call_id=call_id, tool_name=name, args=args)
        engine = self.engine  # opens the host, whose rules pair with its hooks
        outcome, rules = (engine.emit_sync(event), self._rules) if self._host is None \
            else self._host.registry.dispatch_sync(event)
        return self._gate(outcome, event, rules, can_ask=can_ask)

    def _gate(self, outcome: Outcome, event: BeforeToolCall,
              rules: Sequence[PermissionRule], *, can_ask: bool) -> ToolGate:
        name, args = event.tool_name, event.args
        verdict = outcome.verdict
        # No hook said anything (the common case): only the rules are left.
        if (verdict is _NONE and not outcome.changes and not outcome.contexts
                and not rules):
            return ToolGate("run", args, None, None, "", outcome)
        self.apply(outcome, can=_TOOL_CAN if can_ask else _TOOL_CAN_NO_ASK, fix=_ASK_FIX)
        new_args: dict[str, Any] = getattr(outcome.payload, "args", args)
        context = outcome.context_text() if outcome.contexts else ""
        if verdict is Verdict.BLOCK:
            return ToolGate("block", new_args, outcome.tool_block_error(), outcome.reason,
                            context, outcome)
        if verdict is Verdict.RESPOND:
            return ToolGate("respond", new_args, outcome.value, outcome.reason, context,
                            outcome)
        # The name asked about, not outcome.event's: the shared outcome of an
        # event with no hooks holds no event (and no hook may rename a tool).
        ruled = self._ruled(verdict, name, new_args, rules)
        if ruled is None:
            if verdict is Verdict.ASK:
                return ToolGate("ask", new_args, None, outcome.reason, context, outcome)
            return ToolGate("run", new_args, None, None, context, outcome)
        # Loaded by _ruled.
        from interlock.agent.permissions import RULE_ASKS, RULE_DENIES, rule_outcome

        reason = RULE_DENIES if ruled == "block" else RULE_ASKS
        if ruled == "ask" and not can_ask:
            ruled, reason = "block", f"{reason}, and {self.framework} offers no way to ask " \
                                     "a person here"
        # The audit log and metrics get what the rule decided (docs/agent.md, Permissions).
        self.engine.record(rule_outcome(outcome.final(event), ruled, reason, outcome.revision))
        if ruled == "block":
            return ToolGate("block", new_args, _rule_block(name, reason), reason, context,
                            outcome)
        return ToolGate("ask", new_args, None, reason, context, outcome)

    def _ruled(self, verdict: Verdict, name: str, args: dict[str, Any],
               rules: Sequence[PermissionRule]) -> str | None:
        """``block`` or ``ask`` where the rules matching this call overrule the
        hooks' ``verdict`` (interlock.agent.permissions.overrule, as the bridges
        judge); None when the hooks' stands, or there are no rules (the common case
        costs one list read)."""
        if not rules:
            return None
        from interlock.agent.permissions import RuleJudge, overrule

        judge = self._judge
        if judge is None:
            judge = self._judge = RuleJudge()
        return overrule(verdict.value, judge.action(rules, name, args))

    async def after_tool(self, name: str, args: dict[str, Any], result: Any,
                         call_id: str = "", *, status: str = "ok",
                         duration_ms: float = 0.0) -> AfterTool:
        """after_tool_call, then tool_result_persist on what it leaves (the result
        goes into the framework's history), as the reference agent runs them."""
        shown = _jsonable(result)
        engine = self.engine
        outcome = await engine.emit(AfterToolCall(
            session_id=self.session_id, platform=self.framework, cwd=self._cwd,
            tool_call_id=call_id, tool_name=name, args=args, result=shown, status=status,
            duration_ms=duration_ms))
        after = self._after(outcome, result)
        if not engine._has_hooks(ToolResultPersist):
            return after  # what the engine answers for an event with no hooks
        persist = await self.emit("tool_result_persist", tool_call_id=call_id, tool_name=name,
                                  result=shown if after.result is result
                                  else _jsonable(after.result))
        return self._persisted(persist, after)

    def after_tool_sync(self, name: str, args: dict[str, Any], result: Any,
                        call_id: str = "", *, status: str = "ok",
                        duration_ms: float = 0.0) -> AfterTool:
        shown = _jsonable(result)
        engine = self.engine
        outcome = engine.emit_sync(AfterToolCall(
            session_id=self.session_id, platform=self.framework, cwd=self._cwd,
            tool_call_id=call_id, tool_name=name, args=args, result=shown, status=status,
            duration_ms=duration_ms))
        after = self._after(outcome, result)
        if not engine._has_hooks(ToolResultPersist):
            return after  # what the engine answers for an event with no hooks
        persist = self.emit_sync("tool_result_persist", tool_call_id=call_id, tool_name=name,
                                 result=shown if after.result is result
                                 else _jsonable(after.result))
        return self._persisted(persist, after)

    async def after_gated(self, gate: ToolGate, name: str, call_id: str = "") -> AfterTool:
        """after_tool_call (and tool_result_persist) for a call before_tool_call
        blocked or answered: hooks there see every call, as in the reference agent."""
        return await self.after_tool(name, gate.args, gate.value, call_id,
                                     status=_GATED_STATUS[gate.action])

    async def answered(self, gate: ToolGate, name: str, call_id: str = "",
                       *before: str) -> Any:
        """What the model reads of a call before_tool_call blocked or answered: the
        result after_tool_call left, with the contexts ``before``, the gate's and
        after_tool_call's beside it."""
        after = await self.after_gated(gate, name, call_id)
        return with_context(after.result, joined(*before, gate.context, after.context))

    def after_gated_sync(self, gate: ToolGate, name: str, call_id: str = "") -> AfterTool:
        return self.after_tool_sync(name, gate.args, gate.value, call_id,
                                    status=_GATED_STATUS[gate.action])

    async def refused(self, name: str, args: dict[str, Any], result: Any, call_id: str = "",
                      *, reason: str | None = None) -> AfterTool:
        """A call a person refused at the framework's approval step, as the reference
        agent has it: permission_denied (``reason``, else :data:`DENIED`), then
        after_tool_call (and tool_result_persist) as a blocked call whose result is
        ``result``, the refusal the model reads. permission_denied's hooks have run
        when after_tool_call's start, as there."""
        await self.emit("permission_denied", tool_call_id=call_id, tool_name=name, args=args,
                        reason=reason or DENIED)
        return await self.after_tool(name, args, result, call_id, status="blocked")

    def refused_sync(self, name: str, args: dict[str, Any], result: Any, call_id: str = "",
                     *, reason: str | None = None) -> AfterTool:
        self.emit_sync("permission_denied", tool_call_id=call_id, tool_name=name, args=args,
                       reason=reason or DENIED)
        return self.after_tool_sync(name, args, result, call_id, status="blocked")

    def _after(self, outcome: Outcome, result: Any) -> AfterTool:
        if outcome.verdict is _NONE and not outcome.changes and not outcome.contexts:
            return AfterTool(result, "")  # no hook said anything (the common case)
        self.apply(outcome, can=("block", "modify", "context"))
        if outcome.blocked:
            error = outcome.tool_block_error()
            error["error"] = "tool result blocked"
            return AfterTool(error, outcome.context_text())
        if "result" in outcome.changes:
            result = outcome.changes["result"]
        return AfterTool(result, outcome.context_text() if outcome.contexts else "")

    def _persisted(self, outcome: Outcome, after: AfterTool) -> AfterTool:
        self.apply(outcome, can=("block", "modify"))
        if outcome.blocked:
            withheld = outcome.tool_block_error()
            withheld["error"] = "tool result withheld"
            return AfterTool(withheld, after.context)
        if "result" in outcome.changes:
            return AfterTool(outcome.changes["result"], after.context)
        return after


def _for_platform(hook: Any, framework: str) -> bool:
    """Whether ``hook``'s matcher lets it run for events of ``framework`` (a hook
    limited to other hosts by a 'platform' pattern does not)."""
    matcher = hook.matcher
    if matcher is None:
        return True
    return all(pat.fullmatch(framework) is not None
               for name, pat in matcher.fields if name == "platform")


def _rule_block(tool: str, reason: str) -> dict[str, Any]:
    """The structured error a call refused by a permission rule returns to the model."""
    from interlock.agent.permissions import RULES_HOOK  # loaded by _ruled

    return {"error": "tool call blocked", "tool_name": tool, "reason": reason, "hint": None,
            "hook": RULES_HOOK}


def joined(*contexts: str) -> str:
    """Hook contexts, one to a line, the empty ones left out."""
    return "\n".join(c for c in contexts if c)


def with_context(result: Any, context: str) -> Any:
    """``result`` with hook context added where the model reads it: appended to
    text, or beside a structured result under ``hook_context``."""
    if not context:
        return result
    if isinstance(result, str):
        return f"{result}\n\n{context}" if result else context
    return {"result": result, "hook_context": context}


def as_text(value: Any) -> str:
    """A tool result as the text a model reads (JSON for structured values)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool, list, dict)):
        return value
    return as_text(value)


def hook_name(outcome: Outcome) -> str | None:
    """The qualified name of the hook that decided ``outcome``, if one did."""
    return outcome.hook.qualified_name if outcome.hook is not None else None


_NONE = Verdict.NONE
DENIED = "denied by the user"
"""permission_denied's reason when a person's refusal gives none (the reference
agent's words)."""
_GATED_STATUS = {"block": "blocked", "respond": "responded"}
_TOOL_CAN_NO_ASK = ("block", "respond", "approve", "modify", "context")
_TOOL_CAN = (*_TOOL_CAN_NO_ASK, "ask")
_ASK_FIX = ("approve the call in a hook, or give the tool an approval step this framework "
            "supports (docs/adapters.md)")
_FIX = "see which decisions this adapter applies in docs/adapters.md"
_INPUT_FIX = ("see which decisions on session_start and user_input this adapter applies in "
              "docs/adapters.md, Events each adapter fires")
