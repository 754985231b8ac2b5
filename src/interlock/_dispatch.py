"""The dispatcher: for one event, pick the matching hooks, run them in the
order and mode DESIGN.md gives, and merge their answers into one outcome.

Hot path notes: an event with no hooks costs one dict lookup. Sync hooks are
called inline with no timer and no coroutine; the sync facade never touches an
event loop unless a matched hook can suspend.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, Unpack, overload

from interlock._catalog import EventSpec, FailClosed, Kind
from interlock._catalog import spec as catalog_spec
from interlock._contract import (
    Validator,
    apply_changes,
    check_mutation,
    container_fields,
    copy_payload,
)
from interlock._decisions import ENDING, RANK, Decision, Verdict
from interlock._errors import ContractError, FailureMode, HookFailure
from interlock._hooks import Hook, HookFn, HookOptions, Matcher, Mode, OnError
from interlock._invoke import Answer, call, call_sync, new_id, start
from interlock._outcome import Outcome, RawResult, Status
from interlock._runner import HookQueue, LoopThread, monotonic_ns
from interlock._sinks import FailureRecord, Sink
from interlock.events import EVENT_TYPES, Event

log = logging.getLogger("interlock")

F = TypeVar("F", bound=Callable[..., Any])

_STOP_EVENTS = frozenset({"before_stop", "subagent_stop"})



@dataclass(frozen=True, slots=True)
class Plan:
    """The hooks one event runs, split by phase, in order."""

    modifiers: tuple[Hook, ...]
    checks: tuple[Hook, ...]
    shadows: tuple[Hook, ...]
    background: tuple[Hook, ...]
    may_suspend: bool
    """True when some hook may await (async, blocking, executor)."""


class HookSet:
    """An immutable, numbered set of active hooks (one registry revision)."""

    def __init__(self, hooks: Iterable[Hook], revision: int) -> None:
        self.revision = revision
        self.hooks: tuple[Hook, ...] = tuple(sorted(hooks, key=Hook.sort_key))
        by_type: dict[type[Event], tuple[Hook, ...]] = {}
        for name, cls in EVENT_TYPES.items():
            selected = tuple(h for h in self.hooks if name in h.events)
            if selected:
                by_type[cls] = selected
        self.by_type = by_type
        self._plans: dict[tuple[type[Event], str | None], Plan] = {}
        self._field_matched = {
            cls for cls, hs in by_type.items()
            if any(h.matcher is not None and h.matcher.fields for h in hs)
        }

    def plan(self, event: Event, hooks: tuple[Hook, ...]) -> Plan | None:
        cls = event.__class__
        subject_field = cls.spec.subject
        subject: str | None = None
        if subject_field is not None:
            subject = getattr(event, subject_field)
            if cls.spec.name == "command":
                subject = f"command:{subject}"
        if cls in self._field_matched:
            return _make_plan(event, subject, hooks)
        key = (cls, subject)
        plan = self._plans.get(key)
        if plan is None and key not in self._plans:
            plan = _make_plan(event, subject, hooks)
            if len(self._plans) < 4096:
                self._plans[key] = plan  # type: ignore[assignment]
        return plan


def _make_plan(event: Event, subject: str | None, hooks: tuple[Hook, ...]) -> Plan | None:
    matched = [h for h in hooks if h.matcher is None or h.matcher.matches(event, subject)]
    if not matched:
        return None
    gate = event.spec.kind is Kind.GATE
    return Plan(
        modifiers=tuple(h for h in matched
                        if gate and h.modifies and not h.shadow and not h.background),
        checks=tuple(h for h in matched
                     if not h.background and not h.shadow and not (gate and h.modifies)),
        shadows=tuple(h for h in matched if h.shadow and not h.background),
        background=tuple(h for h in matched if h.background),
        may_suspend=any(h.mode is not Mode.SYNC for h in matched if not h.background),
    )


class Handle:
    """Returned by registration; ``unregister()`` removes the hook again."""

    __slots__ = ("_engine", "hook")

    def __init__(self, engine: Engine, hook: Hook) -> None:
        self._engine = engine
        self.hook = hook

    def unregister(self) -> None:
        self._engine.unregister(self.hook)


def _failure_block_reason(hook: Hook, failure: HookFailure) -> str:
    # Fixed engine text, never the hook's own output: a block reason can become
    # the model's next instruction (DESIGN.md, What "fail closed" means).
    return (f"blocked by the engine: fail-closed hook {hook.qualified_name!r} "
            f"did not answer ({failure.mode.value})")


class Engine:
    """The hook engine: register hooks, emit events, get outcomes.

    ``await engine.emit(event)`` is the async API; ``engine.emit_sync(event)``
    is the facade for sync hosts.
    """

    def __init__(
        self,
        *,
        sinks: Iterable[Sink] = (),
        stop_loop_cap: int = 8,
        queue_limit: int = 1000,
        default_timeout: float = 60.0,
    ) -> None:
        self._set = HookSet((), 0)
        self._by_type = self._set.by_type
        self._lock = threading.RLock()
        self._order = itertools.count(1)
        self.sinks: list[Sink] = list(sinks)
        self.stop_loop_cap = stop_loop_cap
        self.queue_limit = queue_limit
        self.default_timeout = default_timeout
        self._validators: dict[str, list[Validator]] = {}
        self._stop_blocks: dict[tuple[str, str], int] = {}
        self._loop = LoopThread()
        self._queues: dict[Hook, HookQueue] = {}
        self._idle = threading.Condition()
        self._pending = 0

    # -- registry -------------------------------------------------------------
    @property
    def revision(self) -> int:
        return self._set.revision

    @property
    def hooks(self) -> tuple[Hook, ...]:
        return self._set.hooks

    def replace_hooks(self, hooks: Iterable[Hook]) -> int:
        """Swap in a whole new set of hooks atomically; returns the new revision."""
        hooks = list(hooks)
        with self._lock:
            for h in hooks:
                if h.order == 0:
                    h.order = next(self._order)
            new = HookSet(hooks, self._set.revision + 1)
            self._set = new
            self._by_type = new.by_type
            return new.revision

    def register(self, hook: Hook) -> Handle:
        with self._lock:
            hook.order = next(self._order)
            self.replace_hooks([*self._set.hooks, hook])
        return Handle(self, hook)

    def unregister(self, hook: Hook) -> None:
        with self._lock:
            self.replace_hooks([h for h in self._set.hooks if h is not hook])

    @overload
    def on(self, event: str | Iterable[str], fn: HookFn, **options: Unpack[HookOptions]
           ) -> Handle: ...

    @overload
    def on(self, event: str | Iterable[str], fn: None = None,
           **options: Unpack[HookOptions]) -> Callable[[F], F]: ...

    def on(
        self, event: str | Iterable[str], fn: HookFn | None = None,
        **options: Unpack[HookOptions],
    ) -> Handle | Callable[[F], F]:
        """Register ``fn`` for ``event``; usable as ``@engine.on("before_tool_call")``.

        Returns a :class:`Handle` when ``fn`` is given, else a decorator that
        registers and returns the function unchanged. Options are those of
        :class:`HookOptions`.
        """
        events = (event,) if isinstance(event, str) else tuple(event)

        def make(f: HookFn) -> Handle:
            opts: dict[str, Any] = dict(options)
            on_error = opts.pop("on_error", None)
            timeout = opts.pop("timeout", None)
            hook = Hook(
                name=opts.pop("name", None) or str(getattr(f, "__qualname__", repr(f))),
                events=events,
                fn=f,
                matcher=Matcher.parse(opts.pop("matcher", None)),
                on_error=OnError(on_error) if on_error is not None else None,
                timeout=timeout if timeout is not None else self.default_timeout,
                **opts,
            )
            return self.register(hook)

        if fn is not None:
            return make(fn)

        def decorator(f: F) -> F:
            make(f)
            return f

        return decorator

    def add_validator(self, event: str, validator: Validator) -> None:
        """Re-validate payloads of ``event`` after every change a modifier makes."""
        catalog_spec(event)  # did-you-mean error for unknown names
        self._validators.setdefault(event, []).append(validator)

    # -- emitting -------------------------------------------------------------
    def emit_sync(self, event: Event) -> Outcome:
        """Dispatch ``event`` and return the merged outcome (sync hosts)."""
        hooks = self._by_type.get(event.__class__)
        if hooks is None:
            if event.__class__.spec.name == "user_input":
                self._reset_stop_counts(event.session_id)
            return Outcome(event)
        hookset = self._set
        plan = hookset.plan(event, hooks)
        if plan is None:
            return Outcome(event)
        coro = self._dispatch(event, plan, hookset.revision)
        if plan.may_suspend:
            return self._loop.run(coro)
        try:
            coro.send(None)
        except StopIteration as done:
            result: Outcome = done.value
            return result
        coro.close()  # pragma: no cover - a SYNC-only plan never suspends
        raise RuntimeError("dispatch suspended with only sync hooks")

    async def emit(self, event: Event) -> Outcome:
        """Dispatch ``event`` and return the merged outcome."""
        hooks = self._by_type.get(event.__class__)
        if hooks is None:
            if event.__class__.spec.name == "user_input":
                self._reset_stop_counts(event.session_id)
            return Outcome(event)
        hookset = self._set
        plan = hookset.plan(event, hooks)
        if plan is None:
            return Outcome(event)
        return await self._dispatch(event, plan, hookset.revision)

    def notify(self, event: Event) -> None:
        """Hand an observe event to the background queues; never waits."""
        spec = event.__class__.spec
        if spec.kind is not Kind.OBSERVE:
            raise ValueError(f"notify() is for observe events; {spec.name} is a gate event")
        hooks = self._by_type.get(event.__class__)
        if hooks is None:
            return
        plan = self._set.plan(event, hooks)
        if plan is None:
            return
        for hook in (*plan.checks, *plan.shadows, *plan.background):
            self._enqueue(hook, event)

    # -- the dispatch core ----------------------------------------------------
    async def _dispatch(self, event: Event, plan: Plan, revision: int) -> Outcome:
        spec = event.__class__.spec
        if spec.kind is Kind.OBSERVE:
            return await self._observe(event, plan, revision)
        stop_key = None
        if spec.name in _STOP_EVENTS:
            stop_key = (spec.name, event.session_id)
            count = self._stop_blocks.get(stop_key, 0)
            event = event.replace(stop_hook_active=count > 0, block_count=count)
        elif spec.name == "user_input":
            self._reset_stop_counts(event.session_id)

        raw: list[RawResult] = []
        containers = container_fields(spec)
        snaps = {n: copy_payload(getattr(event, n)) for n in containers} if containers else None
        current = event
        changes: dict[str, Any] = {}
        ended = False

        # Modify phase: modifiers one after another, each sees the last change.
        for hook in plan.modifiers:
            t0 = monotonic_ns()
            decision, failure = await call(hook, current, spec)
            if snaps is not None:
                current, failure = check_mutation(hook, current, snaps, failure)
            if failure is None and decision is not None and decision.verdict is Verdict.MODIFY:
                try:
                    current = apply_changes(spec, current, decision.changes or {},
                                            self._validators.get(spec.name, ()))
                    changes.update(decision.changes or {})
                    if snaps is not None:
                        snaps = {n: copy_payload(getattr(current, n)) for n in containers}
                except ContractError as exc:
                    failure, decision = exc, None
            raw.append(self._settle(hook, current, spec, decision, failure, t0))
            effective = raw[-1][1]
            if effective is not None and effective.verdict in ENDING:
                ended = True
                break

        # Check phase: checks see the final payload; they may run concurrently,
        # with the same outcome as running them one by one.
        if not ended and plan.checks:
            current = await self._run_checks(plan.checks, current, spec, raw, snaps)

        if plan.shadows:
            for hook in plan.shadows:
                t0 = monotonic_ns()
                decision, failure = await call(hook, current, spec)
                raw.append((hook, decision, failure, monotonic_ns() - t0, Status.SHADOW))
                if failure is not None:
                    self._record_failure(hook, current, failure)
        for hook in plan.background:
            self._enqueue(hook, current)
            raw.append((hook, None, None, 0, Status.QUEUED))

        outcome = self._merge(event, current, raw, changes, revision)
        if stop_key is not None:
            outcome = self._apply_stop_cap(stop_key, outcome)
        if self.sinks:
            for sink in self.sinks:
                sink.dispatched(outcome)
        return outcome

    async def _run_checks(
        self,
        checks: tuple[Hook, ...],
        current: Event,
        spec: EventSpec,
        raw: list[RawResult],
        snaps: dict[str, Any] | None,
    ) -> Event:
        """Run the check phase; returns the payload (restored if a hook mutated it)."""
        results: list[RawResult | None] = [None] * len(checks)
        pending: dict[asyncio.Future[Answer], int] = {}
        starts: list[int] = [0] * len(checks)
        for i, hook in enumerate(checks):
            t0 = starts[i] = monotonic_ns()
            if hook.mode is Mode.SYNC:
                decision, failure = call_sync(hook, current, spec)
            else:
                stepped = start(hook, current, spec)
                if isinstance(stepped, asyncio.Future):
                    pending[stepped] = i
                    continue
                decision, failure = stepped
            if snaps is not None:
                restored, failure = check_mutation(hook, current, snaps, failure)
                if restored is not current:
                    current, decision = restored, None
            res = results[i] = self._settle(hook, current, spec, decision, failure, t0)
            if res[1] is not None and res[1].verdict in ENDING:
                # Hooks after an ending answer never start; earlier suspended ones
                # may still end the event first (see _await_checks).
                del results[i + 1:]
                break
        if pending:
            current = await self._await_checks(checks, current, spec, results, pending, starts,
                                               snaps)
        raw.extend(r for r in results if r is not None)
        return current

    async def _await_checks(
        self,
        checks: tuple[Hook, ...],
        current: Event,
        spec: EventSpec,
        results: list[RawResult | None],
        pending: dict[asyncio.Future[Answer], int],
        starts: list[int],
        snaps: dict[str, Any] | None,
    ) -> Event:
        """Wait for suspended checks; cancel those after the first ending answer.

        The event ends at the first hook, in order, whose answer ends it, once
        every hook before it has answered: exactly what running them one by
        one would give.
        """
        while pending:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for fut in done:
                i = pending.pop(fut)
                decision, failure = fut.result()
                if snaps is not None:
                    restored, failure = check_mutation(checks[i], current, snaps, failure)
                    if restored is not current:
                        current, decision = restored, None
                results[i] = self._settle(checks[i], current, spec, decision, failure, starts[i])
            for idx, res in enumerate(results):
                if res is None:
                    break  # an earlier hook is still out: nothing is decided yet
                if res[1] is not None and res[1].verdict in ENDING:
                    for fut, j in list(pending.items()):
                        fut.cancel()
                        del pending[fut]
                        results[j] = (checks[j], None, None, monotonic_ns() - starts[j],
                                      Status.CANCELLED)
                    for j in range(idx + 1, len(results)):
                        r = results[j]
                        if r is not None and r[4] is not Status.CANCELLED:
                            results[j] = (r[0], r[1], r[2], r[3], Status.SUPERSEDED)
                    break
        return current

    def _settle(
        self,
        hook: Hook,
        event: Event,
        spec: EventSpec,
        decision: Decision | None,
        failure: HookFailure | None,
        t0: int,
    ) -> RawResult:
        """Turn one hook's answer or failure into its effective result."""
        latency = monotonic_ns() - t0
        if failure is None:
            return (hook, decision, None, latency, Status.NONE)
        self._record_failure(hook, event, failure)
        effective = None
        if hook.fails_closed(spec.name):
            fc = spec.fail_closed
            if fc is FailClosed.BLOCK or (
                fc is FailClosed.BLOCK_UNLESS_OPERATOR and not getattr(event, "operator", False)
            ):
                effective = Decision(verdict=Verdict.BLOCK,
                                     reason=_failure_block_reason(hook, failure))
        return (hook, effective, failure, latency, Status.FAILED)

    def _merge(
        self,
        original: Event,
        final: Event,
        raw: list[RawResult],
        changes: dict[str, Any],
        revision: int,
    ) -> Outcome:
        best_i = -1
        best_rank = 0
        contexts: list[tuple[str, str]] = []
        for i, (hook, decision, _f, _l, status) in enumerate(raw):
            if decision is None or status in (Status.SHADOW, Status.CANCELLED, Status.SUPERSEDED,
                                              Status.QUEUED):
                continue
            if decision.context is not None:
                contexts.append((hook.qualified_name, decision.context))
            rank = RANK[decision.verdict]
            if rank > best_rank:  # strict: ties go to the earliest hook
                best_rank = rank
                best_i = i
        for i, (hook, decision, failure, latency, status) in enumerate(raw):
            if status is Status.NONE and decision is not None:
                if i == best_i or decision.verdict is Verdict.MODIFY or (
                    decision.verdict is Verdict.NONE
                ):
                    raw[i] = (hook, decision, failure, latency, Status.APPLIED)
                else:
                    raw[i] = (hook, decision, failure, latency, Status.SUPERSEDED)
        payload = final if final is not original else None
        if best_i < 0:
            return Outcome(original, Verdict.NONE, payload=payload, changes=changes,
                           contexts=contexts, raw=raw, revision=revision)
        hook, decision, _f, _l, _s = raw[best_i]
        assert decision is not None
        return Outcome(
            original,
            decision.verdict,
            reason=decision.reason,
            hint=decision.hint,
            hook=hook,
            payload=payload,
            changes=changes,
            value=decision.value,
            contexts=contexts,
            raw=raw,
            revision=revision,
        )

    def _apply_stop_cap(self, key: tuple[str, str], outcome: Outcome) -> Outcome:
        count = self._stop_blocks.get(key, 0)
        if outcome.verdict is Verdict.BLOCK:
            if count >= self.stop_loop_cap:
                # A stop hook can never keep an agent running forever (rule 7).
                self._stop_blocks.pop(key, None)
                outcome.verdict = Verdict.NONE
                outcome.capped = True
                return outcome
            self._stop_blocks[key] = count + 1
        else:
            self._stop_blocks.pop(key, None)
        return outcome

    def _reset_stop_counts(self, session_id: str) -> None:
        if self._stop_blocks:
            for name in _STOP_EVENTS:
                self._stop_blocks.pop((name, session_id), None)

    async def _observe(self, event: Event, plan: Plan, revision: int) -> Outcome:
        """Observe events: hooks run concurrently; decisions are warnings."""
        raw: list[RawResult] = []
        spec = event.__class__.spec
        hooks = (*plan.checks, *plan.shadows)
        if plan.may_suspend and len(hooks) > 1:
            t0 = monotonic_ns()
            answers = await asyncio.gather(*(call(h, event, spec) for h in hooks))
            latency = monotonic_ns() - t0
            for hook, (decision, failure) in zip(hooks, answers, strict=True):
                raw.append(self._observed(hook, event, decision, failure, latency))
        else:
            for hook in hooks:
                t0 = monotonic_ns()
                decision, failure = await call(hook, event, spec)
                raw.append(self._observed(hook, event, decision, failure, monotonic_ns() - t0))
        for hook in plan.background:
            self._enqueue(hook, event)
            raw.append((hook, None, None, 0, Status.QUEUED))
        outcome = Outcome(event, raw=raw, revision=revision)
        if self.sinks:
            for sink in self.sinks:
                sink.dispatched(outcome)
        return outcome

    def _observed(self, hook: Hook, event: Event, decision: Decision | None,
                  failure: HookFailure | None, latency: int) -> RawResult:
        if failure is not None:
            self._record_failure(hook, event, failure)
            return (hook, None, failure, latency, Status.FAILED)
        if decision is not None and (decision.verdict is not Verdict.NONE or decision.context):
            log.warning("hook %s returned %s on observe event %s; ignored",
                        hook.qualified_name, decision.verdict.value, event.name)
            return (hook, decision, None, latency, Status.IGNORED)
        return (hook, None, None, latency, Status.NONE)

    # -- background queues ------------------------------------------------------
    def _enqueue(self, hook: Hook, event: Event) -> None:
        with self._idle:
            queue = self._queues.get(hook)
            if queue is None:
                queue = self._queues[hook] = HookQueue(self.queue_limit)
            if len(queue.items) >= queue.limit:
                failure = HookFailure(
                    f"queue of hook {hook.qualified_name} is full ({queue.limit}); "
                    "invocation dropped", mode=FailureMode.DROPPED)
                self._record_failure(hook, event, failure)
                return
            spec = event.__class__.spec

            async def job() -> None:
                _decision, failure = await call(hook, event, spec)
                if failure is not None:
                    self._record_failure(hook, event, failure)

            queue.items.append(job)
            self._pending += 1
            if not queue.busy:
                queue.busy = True
                self._loop.submit(self._drain(queue))

    async def _drain(self, queue: HookQueue) -> None:
        while True:
            with self._idle:
                if not queue.items:
                    queue.busy = False
                    self._idle.notify_all()
                    return
                job = queue.items.popleft()
            try:
                await job()
            except Exception:  # pragma: no cover - _call already isolates hook errors
                log.exception("background hook job failed")
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def drain(self, timeout: float | None = 10.0) -> bool:
        """Wait until every queued background invocation has run; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Drain the background queues (with a deadline) and stop the engine loop."""
        self.drain(timeout)
        self._loop.close()

    # -- failures ---------------------------------------------------------------
    def _record_failure(self, hook: Hook, event: Event, failure: HookFailure) -> None:
        log.warning("hook %s failed on %s (%s): %s", hook.qualified_name, event.name,
                    failure.mode.value, failure)
        if not self.sinks:
            return
        spec = event.__class__.spec
        subject = getattr(event, spec.subject) if spec.subject else None
        record = FailureRecord(
            hook=hook.qualified_name,
            event=event.name,
            session_id=event.session_id,
            subject=subject,
            mode=failure.mode,
            error=str(failure),
            attempts=getattr(failure, "attempts", 1),
            invocation_id=new_id(),
            digest=hook.digest,
            fail_closed=hook.fails_closed(event.name),
        )
        for sink in self.sinks:
            sink.failed(record)
