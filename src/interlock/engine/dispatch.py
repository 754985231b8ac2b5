"""The dispatcher: for one event, pick the matching hooks, run them in the
order and mode docs/engine.md gives, and merge their answers into one outcome.

Hot path: an event with no hooks costs one dict lookup and returns a shared
outcome. Sync hooks are called inline, with no timer and no coroutine of
their own; the sync facade never touches an event loop unless a matched hook
can suspend.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import itertools
import logging
import threading
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar, Unpack, overload

from interlock.engine.background import Background
from interlock.engine.catalog import SPECS, EventSpec, FailClosed, Kind
from interlock.engine.catalog import spec as catalog_spec
from interlock.engine.contract import (
    Validator,
    apply_changes,
    check_mutation,
    copy_payload,
    rebuilt,
    restore,
)
from interlock.engine.decisions import ENDING, Decision, Verdict
from interlock.engine.errors import HOOK_ERRORS, ContractError, FailureMode, HookFailure
from interlock.engine.events import EVENT_TYPES, Event
from interlock.engine.hooks import Hook, HookFn, HookOptions, Matcher, Mode, OnError
from interlock.engine.invoke import (
    Answer,
    call,
    call_sync,
    check_answer,
    crash,
    new_id,
    start,
    timed,
    timed_call,
)
from interlock.engine.loop_thread import LoopThread, monotonic_ns
from interlock.engine.merge import Run, merge, merge_raw, mutated, snapshot
from interlock.engine.outcome import _NO_CHANGES, NoHooks, Outcome, RawResult, Status
from interlock.engine.plan import STOP_EVENTS, HookSet, Plan
from interlock.engine.settled import Settled
from interlock.engine.sinks import FailureRecord, Sink, invocation_digest

log = logging.getLogger("interlock")

F = TypeVar("F", bound=Callable[..., Any])

_SYNC = Mode.SYNC
_NONE = Status.NONE


# What an event with no hooks gets: one shared outcome per event type, held
# directly in the engine's entry table so the no-hook path is one dict read.
_PASSED = {EVENT_TYPES[s.name]: NoHooks(name=s.name) for s in SPECS}
# The same outcomes, ready for ``await`` without a coroutine (see _settled).
_SETTLED = {cls: Settled(outcome) for cls, outcome in _PASSED.items()}
_EMPTY_USER_INPUT = Plan(spec=EVENT_TYPES["user_input"].spec, modifiers=(), checks=(), shadows=(),
                         background=(), may_suspend=False, containers=(), gate=True,
                         stop_event=False, lean=False)


def _not_an_event(method: str, event: object) -> TypeError:
    return TypeError(f"Engine.{method}() takes an event payload from interlock.events "
                     f"(for example BeforeToolCall(...)), not {type(event).__name__}; "
                     f"build one by name with interlock.events.event_type(name)(**fields)")


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
    # the model's next instruction (docs/engine.md, Failures).
    reason = (f"blocked by the engine: fail-closed hook {hook.qualified_name!r} "
              f"did not answer ({failure.mode.value})")
    if failure.mode is FailureMode.DRIFTED:  # the engine's own text: which file changed
        reason += f": {failure}"
    return reason


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
        timed: bool = False,
    ) -> None:
        """``timed``: measure every hook's latency even with no sink attached.

        With a sink (audit log, metrics, a RecordingSink) latencies are always
        measured; without one the hot path skips the clock (~85 ns a hook).
        """
        self._sinks: tuple[Sink, ...] = tuple(sinks)
        self._timed = bool(self._sinks) or timed
        self._always_timed = timed
        self.stop_loop_cap = stop_loop_cap
        self.default_timeout = default_timeout
        self._lock = threading.RLock()
        self._order = itertools.count(1)
        self._validators: dict[str, list[Validator]] = {}
        self._stop_blocks: dict[tuple[str, str], int] = {}
        self._loop = LoopThread()
        self._background = Background(self._loop, self._record_failure, queue_limit)
        self._install(HookSet((), 0))

    @property
    def sinks(self) -> tuple[Sink, ...]:
        return self._sinks

    def add_sink(self, sink: Sink) -> None:
        """Attach a sink (audit log, dead letters, metrics); turns on hook timing."""
        self._sinks = (*self._sinks, sink)
        self._timed = True

    def remove_sink(self, sink: Sink) -> None:
        self._sinks = tuple(s for s in self._sinks if s is not sink)
        self._timed = bool(self._sinks) or self._always_timed

    # -- registry -------------------------------------------------------------
    def _install(self, hookset: HookSet) -> None:
        entries: dict[type[Event], Any] = dict(hookset.entries)
        if any(cls.spec.name in STOP_EVENTS for cls in entries):
            # user_input resets the stop-loop counters, so it must reach the
            # dispatcher even with no hooks of its own (rule 7).
            entries.setdefault(EVENT_TYPES["user_input"], dataclasses.replace(
                _EMPTY_USER_INPUT, revision=hookset.revision))
        # Every event type maps to its shared no-hook outcome, or to None when
        # it has hooks: one dict read and an `is None` decide the hot path.
        passed: dict[type[Event], Outcome | None] = {
            cls: (None if cls in entries else outcome) for cls, outcome in _PASSED.items()}
        settled: dict[type[Event], Settled | None] = {
            cls: (None if cls in entries else done) for cls, done in _SETTLED.items()}
        self._set = hookset
        self._entries = entries
        self._passed = passed
        self._settled = settled

    @property
    def revision(self) -> int:
        return self._set.revision

    @property
    def hooks(self) -> tuple[Hook, ...]:
        return self._set.hooks

    def replace_hooks(self, hooks: Iterable[Hook], revision: int | None = None) -> int:
        """Swap in a whole new set of hooks atomically; returns the new revision."""
        hooks = list(hooks)
        with self._lock:
            for h in hooks:
                if h.order == 0:
                    h.order = next(self._order)
            new = HookSet(hooks, revision if revision is not None else self._set.revision + 1)
            self._install(new)
            return new.revision

    def register(self, hook: Hook) -> Handle:
        """Add one hook. A matcher that could never match one of its events is
        refused here (RegistrationError), where a person registers hooks; the
        config loader refuses it too, naming the file and field."""
        if hook.matcher is not None:
            hook.matcher.check(hook.name, hook.events)
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
        try:
            passed = self._passed[event.__class__]
        except KeyError:
            raise _not_an_event("emit_sync", event) from None
        if passed is not None:
            return passed
        # .get: a concurrent replace_hooks may have dropped this event's hooks
        # between the two reads; then it has none, as the new revision says.
        entry = self._entries.get(event.__class__)
        plan = entry if entry is None or entry.__class__ is Plan else entry.resolve(event)
        if plan is None:
            return _PASSED[event.__class__]
        if plan.lean:
            return self._dispatch_lean(event, plan)
        if plan.may_suspend:
            return self._loop.run(self._dispatch(event, plan))
        return self._dispatch_sync(event, plan)

    def emit(self, event: Event) -> Coroutine[Any, Any, Outcome]:
        """Dispatch ``event``; ``await`` it for the merged outcome.

        A coroutine, as from an ``async def``: await it, or hand it to
        ``asyncio.create_task``, ``gather`` or ``asyncio.run``. For an event
        with no hooks it is an already-finished one (:class:`Settled`), which
        skips building a coroutine frame on the hottest path.

        The hooks that run are those in force when ``emit()`` is called, on
        both paths: a hook registered or removed before the coroutine is
        awaited does not change what this event runs.
        """
        try:
            settled = self._settled[event.__class__]
        except KeyError:
            raise _not_an_event("emit", event) from None
        if settled is not None:
            return settled
        # .get: a concurrent replace_hooks may have dropped this event's hooks
        # between the two reads; then it has none, as the new revision says.
        return self._emit(event, self._entries.get(event.__class__))

    # emit is a plain method that returns a coroutine: mark it, so tools that
    # ask (asyncio.iscoroutinefunction, AsyncMock(spec=Engine)) still see an
    # async API.
    if hasattr(inspect, "markcoroutinefunction"):  # Python 3.12+
        inspect.markcoroutinefunction(emit)
    else:  # 3.11: the marker asyncio.iscoroutinefunction reads
        emit._is_coroutine = asyncio.coroutines._is_coroutine  # type: ignore[attr-defined]

    async def _emit(self, event: Event, entry: Any) -> Outcome:
        # entry: this event's Plan or Resolver when emit() was called, or None.
        plan = entry if entry is None or entry.__class__ is Plan else entry.resolve(event)
        if plan is None:
            return _PASSED[event.__class__]
        if plan.lean:
            return self._dispatch_lean(event, plan)
        if plan.may_suspend:
            return await self._dispatch(event, plan)
        return self._dispatch_sync(event, plan)

    def notify(self, event: Event) -> None:
        """Hand an observe event to the background queues; never waits."""
        if event.spec.kind is not Kind.OBSERVE:
            raise ValueError(f"notify() is for observe events; {event.name} is a gate event")
        plan = self._set.plan(event)
        if plan is None:
            return
        for hook in (*plan.checks, *plan.shadows, *plan.background):
            self._background.submit(hook, event)

    # -- the dispatch core ----------------------------------------------------
    # Two drivers run the same steps: _dispatch_sync for plans of plain sync
    # hooks (no coroutine, no loop: the hot path), _dispatch for plans where a
    # hook may suspend. They differ only in awaiting; every step is shared.
    def _dispatch_lean(self, event: Event, plan: Plan) -> Outcome:
        """A gate plan of plain sync checks only (``plan.lean``): the hot path.

        It decides exactly as _dispatch_sync does (tests/test_lean.py holds the
        two equal on random hook mixes) without building a Run; anything
        unusual (a mutated payload) hands over to the general driver.
        """
        containers = plan.containers
        if len(containers) == 1:  # the usual case (tool args): one copy, no list
            field: str | None = containers[0]
            snap = copy_payload(getattr(event, containers[0]))
            snaps = None
        else:
            field = snap = None
            snaps = snapshot(event, containers)
        spec = plan.spec
        revision = plan.revision  # the hooks in force when emit was called
        raw: list[RawResult] = []
        decided = failed = False
        timed = self._timed
        perf = monotonic_ns
        t = perf() if timed else 0
        lat = 0
        none, ending = _NONE, ENDING
        for hook in plan.checks:
            try:
                decision = hook.fn(event)  # type: ignore[misc]
                if decision is not None:
                    decision = check_answer(hook, decision, spec)
                failure = None
            except HookFailure as exc:  # includes ContractError from check_answer
                decision, failure = None, exc
            except HOOK_ERRORS as exc:
                decision, failure = None, crash(hook, exc)
            if timed:
                now = perf()
                lat = now - t
                t = now
            if failure is None:
                raw.append((hook, decision, None, lat, none))
                if decision is not None:
                    decided = True
                    if decision.verdict in ending:
                        break
            else:
                # Recorded below, once the payload is known untouched: a rerun
                # would run (and record) this hook again.
                res = self._result(hook, event, spec, None, failure, lat, record=False)
                raw.append(res)
                failed = True
                if res[1] is not None:
                    decided = True
                    break
        if field is not None:
            if getattr(event, field) != snap:
                snaps = [(field, snap)]
        elif snaps is not None and not mutated(event, snaps):
            snaps = None
        if snaps is not None:
            # The general driver runs the checks again on the restored
            # payload, comparing after every hook (see _dispatch_sync).
            restored = rebuilt(event, snaps)
            outcome = self._dispatch_sync(restored, plan, strict=True)
            outcome.event = event
            if outcome.payload is None:
                outcome.payload = restored
            return outcome
        if failed:
            self._record_failures(event, raw)
        if decided:
            outcome = merge_raw(event, event, raw, _NO_CHANGES, revision)
        else:
            outcome = Outcome(name=spec.name, event=event, raw=raw, revision=revision)
        if self._sinks:
            self._dispatched(outcome)
        return outcome

    def _dispatch_sync(self, event: Event, plan: Plan, *, strict: bool = False) -> Outcome:
        if not plan.gate:
            return self._observed_outcome(event, plan, [
                (h, *timed(call_sync, h, event, plan.spec)) for h in plan.checks])
        run = self._begin(event, plan)
        for hook in plan.modifiers:
            t0 = monotonic_ns()
            if self._modified(run, hook, call_sync(hook, run.current, plan.spec), t0):
                break
        else:
            if plan.checks:
                mark = len(run.raw)
                self._run_checks(run, each=strict, record=strict)
                if not strict:
                    if run.snaps is not None and mutated(run.current, run.snaps):
                        # Some check mutated the payload in place, so the checks
                        # after it judged the wrong payload: restore it and run the
                        # check phase again, comparing after every hook to find the
                        # culprit. The first pass's failures are dropped with it.
                        self._recheck(run, mark)
                    else:
                        self._record_failures(run.current, run.raw[mark:])
        for hook in plan.shadows:
            t0 = monotonic_ns()
            self._shadowed(run, hook, call_sync(hook, run.current, plan.spec), t0)
        return self._finish(run)

    async def _dispatch(self, event: Event, plan: Plan) -> Outcome:
        if not plan.gate:
            hooks = (*plan.checks, *plan.shadows)
            answers = await asyncio.gather(*(timed_call(h, event, plan.spec) for h in hooks))
            return self._observed_outcome(
                event, plan, [(h, *a) for h, a in zip(hooks, answers, strict=True)])
        run = self._begin(event, plan)
        for hook in plan.modifiers:
            t0 = monotonic_ns()
            if self._modified(run, hook, await call(hook, run.current, plan.spec), t0):
                break
        else:
            if plan.checks:
                mark = len(run.raw)
                try:
                    pending = self._run_checks(run, record=False)
                    if pending:
                        await self._await_checks(run, pending)
                    if run.tainted:
                        # A check mutated the payload while others were running
                        # on it: their answers may be about the wrong payload.
                        # Run the phase again one hook at a time, restored.
                        await self._recheck_in_order(run, mark)
                finally:
                    # Once, from the pass that counts; also when the host
                    # cancels the emit or its own timeout fires mid-phase.
                    self._record_failures(run.current,
                                          [r for r in run.raw[mark:] if r is not None])
        for hook in plan.shadows:
            t0 = monotonic_ns()
            self._shadowed(run, hook, await call(hook, run.current, plan.spec), t0)
        return self._finish(run)

    def _begin(self, event: Event, plan: Plan) -> Run:
        stop_key = None
        if plan.stop_event:
            stop_key = (plan.spec.name, event.session_id)
            count = self._stop_blocks.get(stop_key, 0)
            event = event.replace(stop_hook_active=count > 0, block_count=count)
        elif self._stop_blocks and plan.spec.name == "user_input":
            self._reset_stop_counts(event.session_id)
        return Run(event, event, plan, snapshot(event, plan.containers), stop_key,
                   plan.revision)

    def _modified(self, run: Run, hook: Hook, answer: Answer, t0: int) -> bool:
        """Take one modifier's answer; True when it ended the event."""
        decision, failure = answer
        spec = run.plan.spec
        current = run.current
        if run.snaps is not None:
            restored, failure = check_mutation(hook, current, run.snaps, failure)
            if restored is not current:
                current, decision = restored, None
        # An approval may carry the rewrite it approves (a Claude script's allow
        # with updatedInput): the changes apply and the approval stands.
        if failure is None and decision is not None and (
                decision.verdict is Verdict.MODIFY
                or (decision.verdict is Verdict.APPROVE and decision.changes)):
            try:
                current = apply_changes(spec, current, decision.changes or {},
                                        self._validators.get(spec.name, ()))
                run.changes.update(decision.changes or {})
                if run.snaps is not None:
                    run.snaps = [(n, copy_payload(getattr(current, n)))
                                 for n in run.plan.containers]
            except ContractError as exc:
                failure, decision = exc, None
        run.current = current
        res = self._result(hook, current, spec, decision, failure, monotonic_ns() - t0)
        run.raw.append(res)
        if res[1] is None:
            return False
        run.decided = True
        return res[1].verdict in ENDING

    def _shadowed(self, run: Run, hook: Hook, answer: Answer, t0: int) -> None:
        decision, failure = answer
        run.decided = True  # shadow records are merged as such
        run.raw.append((hook, decision, failure, monotonic_ns() - t0, Status.SHADOW))
        if failure is not None:
            self._record_failure(hook, run.current, failure)

    def _finish(self, run: Run) -> Outcome:
        for hook in run.plan.background:
            self._background.submit(hook, run.current)
            run.raw.append((hook, None, None, 0, Status.QUEUED))
        if run.decided or run.current is not run.event:
            outcome = merge(run)
        else:
            original = run.event
            outcome = Outcome(name=original.name, event=original, raw=run.raw,
                              revision=run.revision)
        if run.stop_key is not None:
            self._apply_stop_cap(run.stop_key, outcome)
        if self._sinks:
            self._dispatched(outcome)
        return outcome

    @staticmethod
    def _rewind(run: Run, mark: int) -> list[tuple[str, Any]]:
        """Undo the check phase from ``mark``: its results go, the payload is
        rebuilt from its private copy. Returns the snapshots."""
        assert run.snaps is not None
        del run.raw[mark:]
        run.current = rebuilt(run.current, run.snaps)
        run.decided = any(r[1] is not None for r in run.raw)
        return run.snaps

    @staticmethod
    def _warn_if_not_again(run: Run, mark: int) -> None:
        if not any(r[2] is not None and "in place" in str(r[2]) for r in run.raw[mark:]):
            log.warning("a check on %s mutated its payload in place once and not when run "
                        "again; the payload was restored", run.plan.spec.name)

    def _recheck(self, run: Run, mark: int) -> None:
        """The check phase again, on the restored payload, comparing after every hook."""
        self._rewind(run, mark)
        self._run_checks(run)
        self._warn_if_not_again(run, mark)

    async def _recheck_in_order(self, run: Run, mark: int) -> None:
        """The check phase again, one hook at a time on the restored payload,
        comparing after every hook: exactly what running them one by one gives."""
        snaps = self._rewind(run, mark)
        spec = run.plan.spec
        for hook in run.plan.checks:
            t0 = monotonic_ns()
            decision, failure = await call(hook, run.current, spec)
            restored, failure = check_mutation(hook, run.current, snaps, failure)
            if restored is not run.current:
                run.current, decision = restored, None
            res = self._result(hook, run.current, spec, decision, failure,
                               monotonic_ns() - t0, record=False)
            run.raw.append(res)
            if res[1] is not None:
                run.decided = True
                if res[1].verdict in ENDING:
                    break
        self._warn_if_not_again(run, mark)

    def _run_checks(self, run: Run, *, each: bool = True, record: bool = True
                    ) -> dict[asyncio.Future[Answer], tuple[int, Hook, int]]:
        """Run checks in order: sync ones inline, others started concurrently.

        Appends one result per check that answered (a None placeholder for each
        one still running, filled by _await_checks) and stops at the first
        answer that ends the event. Returns the checks still running.

        ``each=False`` (plans of plain sync hooks) skips the per-hook comparison
        with the payload's private copy; the caller compares once at the end and
        runs the phase again with ``each=True`` if anything was mutated.
        ``record=False`` leaves recording failures to the caller, whose pass may
        yet be thrown away (_record_failures).
        """
        spec = run.plan.spec
        raw = run.raw
        snaps = run.snaps if each else None
        current = run.current
        pending: dict[asyncio.Future[Answer], tuple[int, Hook, int]] = {}
        timed = self._timed
        perf = monotonic_ns
        t = perf() if timed else 0
        lat = 0
        sync, none, ending = _SYNC, _NONE, ENDING  # locals: this loop is the hot path
        for hook in run.plan.checks:
            if hook.mode is sync:
                failure = None
                try:
                    decision = hook.fn(current)  # type: ignore[misc]
                    if decision is not None:
                        decision = check_answer(hook, decision, spec)
                except HookFailure as exc:  # includes ContractError from check_answer
                    decision, failure = None, exc
                except HOOK_ERRORS as exc:
                    decision, failure = None, crash(hook, exc)
            else:
                stepped = start(hook, current, spec)
                if isinstance(stepped, asyncio.Future):
                    if snaps is None or not mutated(current, snaps):
                        pending[stepped] = (len(raw), hook, monotonic_ns())
                        raw.append(None)  # type: ignore[arg-type]
                        continue
                    # It mutated the payload before it first suspended: it is
                    # the culprit, not whichever check would compare next.
                    stepped.cancel()
                    decision, failure = None, None
                else:
                    decision, failure = stepped
            if snaps is not None:
                for name, snap in snaps:
                    if getattr(current, name) != snap:
                        current, failure = restore(hook, current, snaps, name)
                        decision = None
                        run.tainted = True
                        break
            if timed:
                now = perf()
                lat = now - t
                t = now
            if failure is None:
                raw.append((hook, decision, None, lat, none))
                if decision is not None:
                    run.decided = True
                    if decision.verdict in ending:
                        break  # later checks never start; earlier suspended ones may end first
            else:
                res = self._result(hook, current, spec, None, failure, lat, record=record)
                raw.append(res)
                if res[1] is not None:
                    run.decided = True
                    break  # a fail-closed failure blocks
        run.current = current
        return pending

    async def _await_checks(
        self, run: Run, pending: dict[asyncio.Future[Answer], tuple[int, Hook, int]]
    ) -> None:
        """Wait for suspended checks; cancel those after the first ending answer.

        The event ends at the first hook, in order, whose answer ends it, once
        every hook before it has answered: exactly what running them one by
        one would give.
        """
        try:
            await self._settle_checks(run, pending)
        finally:
            # Cancelled (the host gave up) or tainted: none of these may run on.
            for fut in pending:
                fut.cancel()

    async def _settle_checks(
        self, run: Run, pending: dict[asyncio.Future[Answer], tuple[int, Hook, int]]
    ) -> None:
        raw = run.raw
        spec = run.plan.spec
        first = min(i for i, _h, _t in pending.values())
        while pending and not run.tainted:  # tainted: the ordered rerun decides
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for fut in done:
                i, hook, t0 = pending.pop(fut)
                decision, failure = fut.result()
                if run.snaps is not None:
                    restored, failure = check_mutation(hook, run.current, run.snaps, failure)
                    if restored is not run.current:
                        run.current, decision = restored, None
                        run.tainted = True
                raw[i] = self._result(hook, run.current, spec, decision, failure,
                                      monotonic_ns() - t0, record=False)
                if raw[i][1] is not None:
                    run.decided = True
            for idx in range(first, len(raw)):
                res = raw[idx]
                if res is None:
                    break  # an earlier hook is still out: nothing is decided yet
                if res[1] is not None and res[1].verdict in ENDING:
                    for fut, (j, hook, t0) in list(pending.items()):
                        fut.cancel()
                        del pending[fut]
                        raw[j] = (hook, None, None, monotonic_ns() - t0, Status.CANCELLED)
                    for j in range(idx + 1, len(raw)):
                        r = raw[j]
                        if r[4] is not Status.CANCELLED:
                            raw[j] = (r[0], r[1], r[2], r[3], Status.SUPERSEDED)
                    break

    def _result(
        self,
        hook: Hook,
        event: Event,
        spec: EventSpec,
        decision: Decision | None,
        failure: HookFailure | None,
        latency: int,
        *,
        record: bool = True,
    ) -> RawResult:
        """One hook's effective result: its answer, or what its failure means.

        ``record=False`` leaves recording the failure to the caller, for a
        pass that may yet be thrown away and run again (_record_failures).
        """
        if failure is None:
            return (hook, decision, None, latency, _NONE)
        if record:
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

    def _apply_stop_cap(self, key: tuple[str, str], outcome: Outcome) -> None:
        count = self._stop_blocks.get(key, 0)
        if outcome.verdict is Verdict.BLOCK:
            if count >= self.stop_loop_cap:
                # A stop hook can never keep an agent running forever (rule 7).
                self._stop_blocks.pop(key, None)
                outcome.verdict = Verdict.NONE
                outcome.capped = True
                return
            self._stop_blocks[key] = count + 1
        else:
            self._stop_blocks.pop(key, None)

    def _reset_stop_counts(self, session_id: str) -> None:
        for name in STOP_EVENTS:
            self._stop_blocks.pop((name, session_id), None)

    def _observed_outcome(self, event: Event, plan: Plan,
                          answers: list[tuple[Hook, Decision | None, HookFailure | None, int]]
                          ) -> Outcome:
        """Observe events: hooks ran concurrently; decisions are warnings."""
        raw = [self._observed(h, event, d, f, lat) for h, d, f, lat in answers]
        for hook in plan.background:
            self._background.submit(hook, event)
            raw.append((hook, None, None, 0, Status.QUEUED))
        outcome = Outcome(name=event.name, event=event, raw=raw, revision=plan.revision)
        if self._sinks:
            self._dispatched(outcome)
        return outcome

    def _observed(self, hook: Hook, event: Event, decision: Decision | None,
                  failure: HookFailure | None, latency: int = 0) -> RawResult:
        if failure is not None:
            self._record_failure(hook, event, failure)
            return (hook, None, failure, latency, Status.FAILED)
        if decision is not None and (decision.verdict is not Verdict.NONE or decision.context):
            log.warning("hook %s returned %s on observe event %s; ignored",
                        hook.qualified_name, decision.verdict.value, event.name)
            return (hook, decision, None, latency, Status.IGNORED)
        return (hook, None, None, latency, _NONE)

    # -- lifecycle ----------------------------------------------------------------
    def drain(self, timeout: float | None = 10.0) -> bool:
        """Wait until every queued background invocation has run; False on timeout."""
        return self._background.drain(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Drain the background queues (with a deadline) and stop the engine loop."""
        self._background.drain(timeout)
        self._loop.close()

    # -- failures ---------------------------------------------------------------
    def _record_failures(self, event: Event, raw: Iterable[RawResult]) -> None:
        for hook, _decision, failure, _lat, _status in raw:
            if failure is not None:
                self._record_failure(hook, event, failure)

    def _record_failure(self, hook: Hook, event: Event, failure: HookFailure) -> None:
        log.warning("hook %s failed on %s (%s): %s", hook.qualified_name, event.name,
                    failure.mode.value, failure)
        if not self._sinks:
            return
        spec = event.spec
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
            invocation_digest=invocation_digest(hook.qualified_name, event),
            fail_closed=hook.fails_closed(event.name),
        )
        self._failed(record)

    # A sink that raises (a full disk under the audit log, a bug) is logged and
    # skipped: it must neither take the host down nor change the outcome.
    def _dispatched(self, outcome: Outcome) -> None:
        for sink in self._sinks:
            try:
                sink.dispatched(outcome)
            except Exception:
                log.exception("sink %r failed to take the outcome of %s", sink, outcome.name)

    def _failed(self, record: FailureRecord) -> None:
        for sink in self._sinks:
            try:
                sink.failed(record)
            except Exception:
                log.exception("sink %r failed to take the failure of %s on %s", sink,
                              record.hook, record.event)

    def report_failure(self, record: FailureRecord) -> None:
        """Hand a failure outside any dispatch (an extension bus drop, say) to the
        sinks, so it reaches the dead-letter store like a hook's failure."""
        log.warning("%s failed on %s (%s): %s", record.hook, record.event, record.mode.value,
                    record.error)
        self._failed(record)


