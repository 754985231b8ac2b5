"""The dispatch loop's fast path: a gate plan of plain sync hooks (``Plan.lean``)
on an untimed engine, run without the generator, the per-dispatch ``Run`` or a
clock (engine/loop.py describes the loop it stands in front of).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from msgspec.structs import replace as msgspec_replace

from interlock.engine.contract import _SCALARS, copy_payload
from interlock.engine.decisions import ENDING, Decision, Verdict
from interlock.engine.errors import HOOK_ERRORS, HookFailure, sync_cancelled
from interlock.engine.events import Event
from interlock.engine.invoke import answer_checker, call_sync, crash
from interlock.engine.merge import mutated, snapshot
from interlock.engine.outcome import Outcome, Quiet, Status
from interlock.engine.plan import Plan

if TYPE_CHECKING:
    from interlock.engine.loop import DispatchLoop

_NONE = Status.NONE
_NO_ANSWERS: list[Decision | None] = []
"""Never written: a dispatch's own list replaces it before any answer is kept."""


def compile_fast(loop: DispatchLoop, plan: Plan) -> Callable[[Event], Outcome]:
    """The fast path for one plan of plain sync modifiers and checks on an
    untimed engine.

    The same phases as the loop's, less what such a plan cannot need: no
    Run, no generator, no clock. Modifiers with no opinion that leave the
    payload alone change nothing; the first one that answers, fails or
    mutates the payload hands the rest of the dispatch to the loop
    (``_modifier_answered``). The check phase compares with the private
    copy once, at the end; a check that mutated the payload in place hands
    the dispatch over to the loop's ordered rerun (``_mutated_in_place``). The plan's parts
    are bound here, once, so the entry table calls this function directly
    (the indirection and the lookups cost ~200 ns an emit).
    """
    modifiers, checks = plan.modifiers, plan.checks
    spec, revision, name = plan.spec, plan.revision, plan.spec.name
    containers = plan.containers
    field = containers[0] if len(containers) == 1 else None
    ending, scalars, no_opinion = ENDING, _SCALARS, Verdict.NONE
    result_of = loop._result
    record_failures, check = loop._record_failures, answer_checker(spec)
    # Every hook that had no opinion has the same result, made here once:
    # a dispatch in which no hook answers builds no result at all, and its
    # outcome holds this tuple (saves ~25% of a one-hook emit). They are
    # frozen, so no reader can change another dispatch's record.
    quiet = tuple(Quiet(hook, None, None, 0, _NONE) for hook in (*modifiers, *checks))
    # (position, hook) pairs made once: enumerate() would build an
    # iterator on every dispatch (~10% of a one-hook emit).
    numbered = tuple((i, hook, hook.fn) for i, hook in enumerate(checks, len(modifiers)))
    size = len(quiet)
    # The outcome of a dispatch no hook answered, copied from one made here (with
    # its event set) instead of built field by field: ~35 ns of a one-hook emit.
    # Never handed out itself, so nothing changes it.
    unanswered, replace = Outcome(name=name, _raw=quiet, revision=revision), msgspec_replace
    steered = tuple(enumerate(modifiers))
    handover_from, rerun_from = loop._modifier_answered, loop._mutated_in_place

    def fast(event: Event) -> Outcome:
        if field is not None:  # the usual case (tool args): one private copy
            value = getattr(event, field)
            snap = None
            if value.__class__ is dict:  # copy_payload, inline for a flat dict
                for v in value.values():
                    if v.__class__ not in scalars:
                        snap = copy_payload(value)
                        break
                else:
                    snap = value.copy()
            else:
                snap = copy_payload(value)
            snaps = None
        else:
            value = snap = None
            snaps = snapshot(event, containers)
        # The modify phase: a modifier with no opinion that left the payload
        # alone (the usual case) changes nothing; the first that answers,
        # fails or mutates the payload in place hands the rest of the
        # dispatch to the loop, which carries on from that modifier.
        for i, hook in steered:
            answer = call_sync(hook, event, spec)
            if answer[0] is None and answer[1] is None and (
                    value == snap if snaps is None else not mutated(event, snaps)):
                continue
            if snaps is None and field is not None:
                snaps = [(field, snap)]
            return handover_from(event, plan, i, answer, snaps)
        # The outcome, made at the first hook that answers or fails, folds
        # each answer in as it comes (Outcome._take, the merge rule); its
        # per-hook records are made only if someone reads them.
        outcome: Outcome | None = None
        answers = _NO_ANSWERS  # replaced with the outcome's own list when it is made
        failed = False
        for i, hook, fn in numbered:
            # A failure is recorded below, once the payload is known
            # untouched: the rerun would run (and record) this hook again.
            try:
                given = fn(event)  # type: ignore[misc]  # checks have fns
                if given is None:
                    continue
                decision = check(hook, given)
                if decision is None:  # a dict answer that says nothing
                    continue
                res = None
            except HookFailure as exc:  # includes ContractError from check()
                res = result_of(hook, event, spec, None, exc, 0, record=False)
            except HOOK_ERRORS as exc:
                res = result_of(hook, event, spec, None, crash(hook, exc), 0, record=False)
            except BaseException as exc:
                if not sync_cancelled(exc):
                    raise
                res = result_of(hook, event, spec, None, crash(hook, exc), 0, record=False)
            if outcome is None:
                answers = [None] * size
                outcome = Outcome(name=name, event=event, revision=revision,
                                  _raw=quiet, _answers=answers)
            if res is None:
                answers[i] = decision
            else:  # its answer stays None: its status stays "failed", its block counts
                if not failed:
                    outcome._raw, failed = list(quiet), True
                outcome._raw[i] = res  # type: ignore[index]  # the list just made
                decision = res.decision
            # No opinion (a context) never outranks anything: nothing to fold,
            # its context is read from the answers.
            if decision is None or decision.verdict is no_opinion:
                continue
            outcome._take(i, decision)
            if decision.verdict in ending:
                del answers[i + 1:]  # the hooks after it never ran
                break
        if snaps is None:
            if value != snap:
                return rerun_from(event, plan, [(containers[0], snap)])
        elif mutated(event, snaps):
            return rerun_from(event, plan, snaps)
        if outcome is None:
            return replace(unanswered, event=event)
        if failed:
            record_failures(event, outcome._raw[:len(answers)])
        return outcome

    return fast
