"""The dispatch loop's fast path: a gate plan of plain sync hooks (``Plan.lean``)
on an untimed engine, run without the generator, the per-dispatch ``Run`` or a
clock (engine/loop.py describes the loop it stands in front of).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from interlock.engine.contract import _SCALARS, copy_payload
from interlock.engine.decisions import ENDING
from interlock.engine.errors import HOOK_ERRORS, HookFailure
from interlock.engine.events import Event
from interlock.engine.invoke import answer_checker, call_sync, crash
from interlock.engine.merge import merge_raw, mutated, snapshot
from interlock.engine.outcome import _NO_CHANGES, HookResult, Outcome, Quiet, Status
from interlock.engine.plan import Plan

if TYPE_CHECKING:
    from interlock.engine.loop import DispatchLoop

_NONE = Status.NONE


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
    ending, scalars = ENDING, _SCALARS
    result_of = loop._result
    record_failures, check = loop._record_failures, answer_checker(spec)
    # Every hook that had no opinion has the same result, made here once:
    # a dispatch in which no hook answers builds no result at all, and its
    # outcome holds this tuple (saves ~25% of a one-hook emit). They are
    # frozen, so no reader can change another dispatch's record.
    quiet = tuple(Quiet(hook, None, None, 0, _NONE) for hook in (*modifiers, *checks))
    # (position, hook) pairs made once: enumerate() would build an
    # iterator on every dispatch (~10% of a one-hook emit).
    numbered = tuple(enumerate(checks, len(modifiers)))
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
        # The results, built from the first hook that answers or fails on;
        # until then every hook so far had no opinion (quiet[:i]).
        raw: list[HookResult] | None = None
        decided = failed = False
        for i, hook in numbered:
            try:
                decision = hook.fn(event)  # type: ignore[misc]
                if decision is None:
                    if raw is not None:
                        raw.append(quiet[i])
                    continue
                decision = check(hook, decision)
            except HookFailure as exc:  # includes ContractError from check()
                failure: HookFailure = exc
            except HOOK_ERRORS as exc:
                failure = crash(hook, exc)
            else:
                if raw is None:
                    raw = list(quiet[:i])
                if decision is None:  # a dict answer that says nothing
                    raw.append(quiet[i])
                    continue
                raw.append(HookResult(hook, decision, None, 0, _NONE))
                decided = True
                if decision.verdict in ending:
                    break
                continue
            # Recorded below, once the payload is known untouched: the
            # rerun would run (and record) this hook again.
            res = result_of(hook, event, spec, None, failure, 0, record=False)
            if raw is None:
                raw = list(quiet[:i])
            raw.append(res)
            failed = True
            if res.decision is not None:
                decided = True
                break
        if snaps is None:
            if value != snap:
                return rerun_from(event, plan, [(containers[0], snap)])
        elif mutated(event, snaps):
            return rerun_from(event, plan, snaps)
        if raw is None:
            return Outcome(name=name, event=event, raw=quiet, revision=revision)
        if failed:
            record_failures(event, raw)
        if decided:
            return merge_raw(event, event, raw, _NO_CHANGES, revision)
        return Outcome(name=name, event=event, raw=raw, revision=revision)

    return fast
