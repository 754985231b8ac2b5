"""The dispatch loop: one event, its plan's hooks, one merged outcome.

:class:`DispatchLoop` is the core the :class:`~interlock.Engine` drives; the
engine adds the registry and the API. The rules it follows are those of
docs/engine.md (Phases of a gate event, Order, Failures).

There is one loop. ``_steps`` runs any plan: for a gate event the modify
phase, the check phase, shadows and background, then the merge; for an
observe event every hook, its answers recorded as warnings. It is a
generator that yields only where a hook suspends (an awaitable to wait on)
and returns the outcome, so one text serves both drivers: :func:`drive`
awaits what it yields (``emit``), :func:`drive_sync` runs a plan in which no
hook can suspend without any event loop (``emit_sync``).

In front of it sits one fast path, ``_fast`` (engine/fast.py): a gate plan
of plain sync modifiers and checks (``Plan.lean``) on an engine with no sink
and no timing, the common case, run without the generator, the per-dispatch
:class:`Run` or a clock. The first modifier that answers, fails or mutates
the payload hands the dispatch to the loop, which carries on from it
(``_gate_from``); the check phase compares the payload with its private copy
once, at the end, and if a check mutated it in place, hands over to the
loop's ordered rerun. Timing and
sinks are not branches inside it: an engine with a sink or ``timed=True``
sends every plan through the loop, which always times its hooks and hands
each outcome to the sinks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Generator, Iterable
from typing import TYPE_CHECKING, Any

from interlock.engine.background import Background
from interlock.engine.catalog import EventSpec, FailClosed
from interlock.engine.contract import (
    Validator,
    apply_changes,
    check_mutation,
    copy_payload,
    rebuilt,
    restore,
)
from interlock.engine.decisions import ENDING, Decision, Verdict
from interlock.engine.errors import ContractError, FailureMode, HookFailure
from interlock.engine.events import Event
from interlock.engine.fast import compile_fast
from interlock.engine.hooks import Hook, Mode
from interlock.engine.invoke import (
    Answer,
    call,
    call_sync,
    new_id,
    start,
    timed,
    timed_call,
)
from interlock.engine.logs import logger
from interlock.engine.loop_thread import monotonic_ns
from interlock.engine.merge import Run, merge, mutated, snapshot
from interlock.engine.outcome import FailedResult, HookResult, Outcome, Status
from interlock.engine.plan import STOP_EVENTS, Plan
from interlock.engine.sinks import FailureRecord, Sink, invocation_digest

if TYPE_CHECKING:
    import asyncio

    Steps = Generator[Awaitable[Any], Any, Outcome]
    """The loop as a generator: yields what to wait for, returns the outcome."""
    Pending = dict[asyncio.Future[Answer], tuple[int, Hook, int]]
    """Checks still running: their future -> (slot in raw, hook, start time)."""

log = logger("interlock")

# Enum members as module constants: a class attribute lookup on an enum costs
# ~65 ns on Python 3.11, and these are read for every hook that runs.
_SYNC = Mode.SYNC
_NONE, _FAILED = Status.NONE, Status.FAILED


def drive_sync(steps: Steps) -> Outcome:
    """Run the loop for a plan in which no hook can suspend."""
    try:
        step = steps.send(None)
    except StopIteration as done:
        outcome: Outcome = done.value
        return outcome
    steps.close()
    raise RuntimeError(f"a hook suspended on the sync path ({step!r}); plans whose hooks "
                       "may suspend run on the engine's loop")


async def drive(steps: Steps) -> Outcome:
    """Run the loop, awaiting what it yields.

    Whatever the await raises, cancellation included, is thrown back into the
    loop at its ``yield``, so its ``finally`` blocks (cancel the checks still
    running, record failures once) run before it propagates; never swallowed.
    """
    send, throw = steps.send, steps.throw
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = send(value) if error is None else throw(error)
        except StopIteration as done:
            outcome: Outcome = done.value
            return outcome
        error = None
        try:
            value = await step
        except BaseException as exc:  # rethrown into the loop, which re-raises it
            error = exc


def _failure_block_reason(hook: Hook, failure: HookFailure) -> str:
    # Fixed engine text, never the hook's own output: a block reason can become
    # the model's next instruction (docs/engine.md, Failures).
    reason = (f"blocked by the engine: fail-closed hook {hook.qualified_name!r} "
              f"did not answer ({failure.mode.value})")
    # The engine's own text: which file changed, or which handler did not load.
    if failure.mode in (FailureMode.DRIFTED, FailureMode.UNLOADABLE):
        reason += f": {failure}"
    return reason


class DispatchLoop:
    """The dispatch core: runs plans. The Engine subclasses it."""

    stop_loop_cap: int
    _sinks: tuple[Sink, ...]
    _validators: dict[str, list[Validator]]
    _stop_blocks: dict[tuple[str, str], int]
    _background: Background

    # -- the fast path ----------------------------------------------------------
    def _fast(self, event: Event, plan: Plan) -> Outcome:
        """Run ``plan`` (``plan.lean``) on the fast path, compiled once per plan."""
        compiled = plan.compiled
        if not compiled:
            compiled.append(compile_fast(self, plan))
        return compiled[0](event)

    def _mutated_in_place(self, event: Event, plan: Plan, snaps: list[tuple[str, Any]]
                          ) -> Outcome:
        """The fast path's handover: the loop's ordered rerun on the restored payload
        (the first pass's results go: every check runs again; the modifiers before
        them had no opinion and left the payload alone)."""
        mark = len(plan.modifiers)
        raw = [HookResult(hook, None, None, 0, _NONE) for hook in plan.modifiers]
        run = Run(event, event, plan, snaps, None, plan.revision, raw)
        drive_sync(self._rerun(run, mark))  # type: ignore[arg-type]  # returns None
        self._record_failures(run.current, run.raw[mark:])
        return self._finish(run)

    def _modifier_answered(self, event: Event, plan: Plan, index: int, answer: Answer,
                           snaps: list[tuple[str, Any]] | None) -> Outcome:
        """The fast path's handover in the modify phase: modifier ``index``
        answered, failed or mutated the payload (``snaps``: the payload before
        it); the loop takes its answer and runs the rest, as if it had run every
        hook so far (those before it had no opinion)."""
        raw = [HookResult(hook, None, None, 0, _NONE) for hook in plan.modifiers[:index]]
        run = Run(event, event, plan, snaps, None, plan.revision, raw)
        return drive_sync(self._gate_from(run, index, answer))

    # -- the loop ---------------------------------------------------------------
    def _steps(self, event: Event, plan: Plan) -> Steps:
        return self._gate(event, plan) if plan.gate else self._observe(event, plan)

    def _gate(self, event: Event, plan: Plan) -> Steps:
        """A gate event: modify phase, check phase, shadows, background, merge."""
        return (yield from self._gate_from(self._begin(event, plan), 0, None))

    def _gate_from(self, run: Run, start: int, answer: Answer | None) -> Steps:
        """The gate event's phases from modifier ``start`` on; ``answer``: that
        modifier's answer when it has already run (the fast path's handover)."""
        plan = run.plan
        spec = plan.spec
        for hook in plan.modifiers[start:]:
            t0 = monotonic_ns()
            if answer is None:
                answer = (call_sync(hook, run.current, spec) if hook.mode is _SYNC
                          else (yield call(hook, run.current, spec)))
            if self._modified(run, hook, answer, t0):
                break
            answer = None
        else:
            if plan.checks:
                yield from self._checks(run)
        for hook in plan.shadows:
            t0 = monotonic_ns()
            answer = (call_sync(hook, run.current, spec) if hook.mode is _SYNC
                      else (yield call(hook, run.current, spec)))
            self._shadowed(run, hook, answer, t0)
        return self._finish(run)

    def _observe(self, event: Event, plan: Plan) -> Steps:
        """An observe event: every hook runs (concurrently when they can suspend);
        a decision is a warning, never an effect."""
        spec = plan.spec
        hooks = (*plan.checks, *plan.shadows)
        if plan.may_suspend:
            import asyncio  # only where a hook can suspend (docs/engine.md, Timers)

            answers = yield asyncio.gather(*(timed_call(h, event, spec) for h in hooks))
        else:
            answers = [timed(call_sync, h, event, spec) for h in hooks]
        raw = [self._observed(h, event, *a) for h, a in zip(hooks, answers, strict=True)]
        for hook in plan.background:
            self._background.submit(hook, event)
            raw.append(HookResult(hook, None, None, 0, Status.QUEUED))
        outcome = Outcome(name=event.name, event=event, _raw=raw, revision=plan.revision)
        if self._sinks:
            self._dispatched(outcome)
        return outcome

    def _checks(self, run: Run) -> Generator[Awaitable[Any], Any, None]:
        """The check phase (docs/engine.md, Phases of a gate event).

        Sync checks run inline; others start concurrently and are awaited in
        ``_settle``. The event ends at the first check, in order, whose answer
        ends it. If a check mutated the payload in place, the phase runs again
        on the restored payload, one hook at a time (``_rerun``): exactly what
        running them one by one gives. Failures are recorded once, from the
        pass that counts, also when the host cancels mid-phase.
        """
        mark = len(run.raw)
        # Suspended checks overlap, so compare after every hook; a plan of
        # plain sync checks compares once at the end instead.
        each = run.plan.may_suspend
        try:
            pending = self._start_checks(run, each)
            if pending:
                try:
                    yield from self._settle(run, pending)
                finally:
                    for fut in pending:  # cancelled or tainted: none may run on
                        fut.cancel()
            if run.tainted or (not each and run.snaps is not None
                               and mutated(run.current, run.snaps)):
                yield from self._rerun(run, mark)
        finally:
            self._record_failures(run.current, run.raw[mark:])

    def _start_checks(self, run: Run, each: bool) -> Pending:
        """Run checks in order: sync ones inline, others started concurrently.

        Appends one result per check that answered (a None placeholder for each
        one still running, filled by ``_settle``) and stops at the first answer
        that ends the event. Returns the checks still running. ``each``:
        compare the payload with its private copy after every hook.
        """
        spec = run.plan.spec
        raw = run.raw
        snaps = run.snaps if each else None
        current = run.current
        pending: Pending = {}
        clock = monotonic_ns
        t = clock()
        for hook in run.plan.checks:
            if hook.mode is _SYNC:
                decision, failure = call_sync(hook, current, spec)
            else:
                stepped = start(hook, current, spec)
                if not isinstance(stepped, tuple):  # a future: it suspended
                    if snaps is None or not mutated(current, snaps):
                        pending[stepped] = (len(raw), hook, clock())
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
            now = clock()
            res = self._result(hook, current, spec, decision, failure, now - t, record=False)
            t = now
            raw.append(res)
            if res.decision is not None:
                run.decided = True
                if res.decision.verdict in ENDING:
                    break  # later checks never start; earlier suspended ones may end first
        run.current = current
        return pending

    def _settle(self, run: Run, pending: Pending) -> Generator[Awaitable[Any], Any, None]:
        """Wait for suspended checks; cut off those after the first ending answer."""
        import asyncio

        raw = run.raw
        spec = run.plan.spec
        first = min(i for i, _h, _t in pending.values())
        while pending and not run.tainted:  # tainted: the ordered rerun decides
            done, _ = yield asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
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
                if raw[i].decision is not None:
                    run.decided = True
            self._cut_off(raw, pending, first)

    @staticmethod
    def _cut_off(raw: list[HookResult], pending: Pending, first: int) -> None:
        """Once every check before the first ending answer has answered, the
        checks after it are cancelled (if running) or superseded."""
        for idx in range(first, len(raw)):
            res = raw[idx]
            if res is None:
                return  # an earlier check is still out: nothing is decided yet
            if res.decision is not None and res.decision.verdict in ENDING:
                for fut, (j, hook, t0) in list(pending.items()):
                    fut.cancel()
                    del pending[fut]
                    raw[j] = HookResult(hook, None, None, monotonic_ns() - t0,
                                        Status.CANCELLED)
                for later in raw[idx + 1:]:
                    if later.failure is not None:
                        # Failed before the event ended: recorded as failed,
                        # but its fail-closed block came after the end and
                        # does not count.
                        later.decision = None
                    elif later.status is not Status.CANCELLED:
                        later.status = Status.SUPERSEDED
                return

    def _rerun(self, run: Run, mark: int) -> Generator[Awaitable[Any], Any, None]:
        """The check phase again from ``mark``, one hook at a time on the
        restored payload, comparing after every hook to find the culprit."""
        assert run.snaps is not None
        snaps = run.snaps
        del run.raw[mark:]  # the first pass's results (and failures) go with it
        run.current = rebuilt(run.current, snaps)
        run.decided = any(r.decision is not None for r in run.raw)
        spec = run.plan.spec
        for hook in run.plan.checks:
            t0 = monotonic_ns()
            decision, failure = (call_sync(hook, run.current, spec) if hook.mode is _SYNC
                                 else (yield call(hook, run.current, spec)))
            restored, failure = check_mutation(hook, run.current, snaps, failure)
            if restored is not run.current:
                run.current, decision = restored, None
            res = self._result(hook, run.current, spec, decision, failure,
                               monotonic_ns() - t0, record=False)
            run.raw.append(res)
            if res.decision is not None:
                run.decided = True
                if res.decision.verdict in ENDING:
                    break
        if not any(r.failure is not None and "in place" in str(r.failure)
                   for r in run.raw[mark:]):
            log.warning("a check on %s mutated its payload in place once and not when run "
                        "again; the payload was restored", spec.name)

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
                changes = decision.changes or {}
                current = apply_changes(spec, current, changes,
                                        self._validators.get(spec.name, ()))
                run.changes.update(changes)
                if run.snaps is not None:
                    # Only the fields it replaced need a new private copy; the
                    # others are the same objects, already compared above.
                    run.snaps = [(n, copy_payload(getattr(current, n)) if n in changes else s)
                                 for n, s in run.snaps]
            except ContractError as exc:
                failure, decision = exc, None
        run.current = current
        res = self._result(hook, current, spec, decision, failure, monotonic_ns() - t0)
        run.raw.append(res)
        if res.decision is None:
            return False
        run.decided = True
        return res.decision.verdict in ENDING

    def _shadowed(self, run: Run, hook: Hook, answer: Answer, t0: int) -> None:
        decision, failure = answer
        run.decided = True  # shadow records are merged as such
        shown = HookResult if failure is None else FailedResult
        run.raw.append(shown(hook, decision, failure, monotonic_ns() - t0, Status.SHADOW))
        if failure is not None:
            self._record_failure(hook, run.current, failure)

    def _finish(self, run: Run) -> Outcome:
        for hook in run.plan.background:
            self._background.submit(hook, run.current)
            run.raw.append(HookResult(hook, None, None, 0, Status.QUEUED))
        if run.decided or run.current is not run.event:
            outcome = merge(run)
        else:
            outcome = Outcome(name=run.event.name, event=run.event, _raw=run.raw,
                              revision=run.revision)
        if run.stop_key is not None:
            self._apply_stop_cap(run.stop_key, outcome)
        if self._sinks:
            self._dispatched(outcome)
        return outcome

    def _result(self, hook: Hook, event: Event, spec: EventSpec, decision: Decision | None,
                failure: HookFailure | None, latency: int, *, record: bool = True
                ) -> HookResult:
        """One hook's effective result: its answer, or what its failure means.

        ``record=False`` leaves recording the failure to the caller, for a
        pass that may yet be thrown away and run again.
        """
        if failure is None:
            return HookResult(hook, decision, None, latency, _NONE)
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
        return FailedResult(hook, effective, failure, latency, _FAILED)

    def _observed(self, hook: Hook, event: Event, decision: Decision | None,
                  failure: HookFailure | None, latency: int = 0) -> HookResult:
        if failure is not None:
            self._record_failure(hook, event, failure)
            return FailedResult(hook, None, failure, latency, _FAILED)
        if decision is not None and (decision.verdict is not Verdict.NONE or decision.context):
            log.warning("hook %s returned %s on observe event %s; ignored",
                        hook.qualified_name, decision.verdict.value, event.name)
            return HookResult(hook, decision, None, latency, Status.IGNORED)
        return HookResult(hook, None, None, latency, _NONE)

    # -- the stop-loop cap ------------------------------------------------------
    def _apply_stop_cap(self, key: tuple[str, str], outcome: Outcome) -> None:
        count = self._stop_blocks.get(key, 0)
        if outcome.verdict is Verdict.BLOCK:
            if count >= self.stop_loop_cap:
                # A stop hook can never keep an agent running forever
                # (docs/engine.md, Stop loops).
                self._stop_blocks.pop(key, None)
                # The block decided nothing: no hook or reason is the
                # winner's, and its record says it was not applied.
                outcome._raw = [
                    HookResult(r.hook, r.decision, r.failure, r.latency, Status.IGNORED)
                    if r.status is Status.APPLIED and r.decision is not None
                    and r.decision.verdict is Verdict.BLOCK else r
                    for r in outcome.raw]
                outcome.verdict = Verdict.NONE
                outcome.hook = outcome.reason = outcome.hint = None
                outcome._best = -1
                outcome.capped = True
                return
            self._stop_blocks[key] = count + 1
        else:
            self._stop_blocks.pop(key, None)

    def _reset_stop_counts(self, session_id: str) -> None:
        for name in STOP_EVENTS:
            self._stop_blocks.pop((name, session_id), None)

    # -- failures and sinks -----------------------------------------------------
    def _record_failures(self, event: Event, raw: Iterable[HookResult | None]) -> None:
        for r in raw:
            if r is not None and r.failure is not None:
                self._record_failure(r.hook, event, r.failure)

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
