"""The state of one gate dispatch and how its results merge into an outcome."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from interlock.engine.contract import copy_payload
from interlock.engine.decisions import RANK
from interlock.engine.events import Event
from interlock.engine.outcome import HookResult, Outcome, Status
from interlock.engine.plan import Plan


class Run(msgspec.Struct, gc=False):
    """The state of one gate dispatch while its phases run (a Struct: cheap to make)."""

    event: Event
    current: Event
    plan: Plan
    snaps: list[tuple[str, Any]] | None
    stop_key: tuple[str, str] | None
    revision: int
    raw: list[HookResult] = []
    changes: dict[str, Any] = {}
    decided: bool = False
    """True once any hook answered or failed (else the merge is trivial)."""
    tainted: bool = False
    """A check mutated the payload in place while others could see it: the
    concurrent check phase is void and runs again one hook at a time."""


def snapshot(event: Event, containers: tuple[str, ...]) -> list[tuple[str, Any]] | None:
    """Private copies of the fields a hook could mutate in place."""
    if not containers:
        return None
    if len(containers) == 1:  # the usual case (tool args): no comprehension frame
        name = containers[0]
        return [(name, copy_payload(getattr(event, name)))]
    return [(n, copy_payload(getattr(event, n))) for n in containers]


def mutated(event: Event, snaps: list[tuple[str, Any]]) -> bool:
    for name, snap in snaps:  # noqa: SIM110 - any(generator) costs ~200 ns more here
        if getattr(event, name) != snap:
            return True
    return False


def merge(run: Run) -> Outcome:
    """The outcome: the strongest decision seen, ties to the earliest hook
    (docs/engine.md, Phases of a gate event, Merge)."""
    return merge_raw(run.event, run.current, run.raw, run.changes, run.revision)


def merge_raw(original: Event, current: Event, raw: list[HookResult],
              changes: Mapping[str, Any], revision: int) -> Outcome:
    """merge() on the parts of a Run (the lean path has no Run to build).

    One pass: each answer is marked applied or superseded as it is seen
    (the best so far is applied until a stronger one comes), rather than
    collected and marked after (a second pass cost ~20% of a dispatch in
    which three hooks answer).
    """
    best: HookResult | None = None
    best_rank = 0
    best_answered = False
    contexts: list[tuple[str, str]] = []
    rank_of, not_applied = RANK, _NOT_APPLIED
    decided = False
    for r in raw:
        decision = r.decision
        if decision is None:
            continue
        # Answered: no failure, not a shadow, not cut off. Only these are
        # marked; a failure's block keeps its "failed" status.
        answered = r.status is _NONE
        if not answered and r.status in not_applied:
            continue
        decided = True
        if decision.context is not None:
            contexts.append((r.hook.qualified_name, decision.context))
        rank = rank_of[decision.verdict]
        if rank > best_rank:  # strict: ties go to the earliest hook
            if best_answered:
                best.status = _SUPERSEDED  # type: ignore[union-attr]
            best, best_rank, best_answered = r, rank, answered
            if answered:
                r.status = _APPLIED
        elif answered:
            # no opinion or modify: its context or change is applied anyway
            r.status = _APPLIED if rank == 0 else _SUPERSEDED
    payload = current if current is not original else None
    name = original.name
    if not decided:
        return Outcome(name=name, event=original, payload=payload, raw=raw, revision=revision)
    if best is None:
        return Outcome(name=name, event=original, payload=payload, changes=changes,
                       contexts=contexts, raw=raw, revision=revision)
    decision = best.decision
    assert decision is not None
    return Outcome(name=name, event=original, verdict=decision.verdict,
                   reason=decision.reason, hint=decision.hint, hook=best.hook,
                   payload=payload, changes=changes, value=decision.value,
                   contexts=contexts, raw=raw, revision=revision)


_NOT_APPLIED = frozenset({Status.SHADOW, Status.CANCELLED, Status.SUPERSEDED, Status.QUEUED})
# Enum members as module constants: `Status.NONE` is a ~65 ns class attribute
# lookup on Python 3.11, and merge runs on every dispatch where a hook answers.
_NONE, _APPLIED, _SUPERSEDED = Status.NONE, Status.APPLIED, Status.SUPERSEDED
