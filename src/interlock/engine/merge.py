"""The state of one gate dispatch and how its results merge into an outcome."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from interlock.engine.contract import copy_payload
from interlock.engine.decisions import Decision
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
    changes, current = run.changes, run.current
    if changes:
        # Each changed field's final value is the payload's: a check that
        # mutated the rewrite in place changed the object the modifier handed
        # back, and only the payload was restored (docs/engine.md, Immutability).
        changes = {name: getattr(current, name) for name in changes}
    return merge_raw(run.event, current, run.raw, changes, run.revision)


def merge_raw(original: Event, current: Event, raw: list[HookResult],
              changes: Mapping[str, Any], revision: int) -> Outcome:
    """merge() on the parts of a Run: every result the merge counts, folded
    into one outcome in hook order by the rule both paths share
    (``Outcome._take``; the fast path folds each answer as it comes)."""
    payload = current if current is not original else None
    outcome = Outcome(name=original.name, event=original, payload=payload, _raw=raw,
                      revision=revision)
    answers: list[Decision | None] | None = None
    not_applied = _NOT_APPLIED
    for i, r in enumerate(raw):
        decision = r.decision
        # Counted: an answer (no failure, not a shadow, not cut off), or the
        # block a fail-closed failure means. Only answers are marked; a
        # failure's block keeps its "failed" status.
        if decision is None or r.status in not_applied:
            continue
        if answers is None:
            answers = [None] * len(raw)
        if r.status is _NONE:
            answers[i] = decision
        outcome._take(i, decision)
    if answers is not None:
        outcome._answers = answers
        outcome.changes = changes
    return outcome


_NOT_APPLIED = frozenset({Status.SHADOW, Status.CANCELLED, Status.SUPERSEDED, Status.QUEUED})
# Enum members as module constants: `Status.NONE` is a ~65 ns class attribute
# lookup on Python 3.11.
_NONE = Status.NONE
