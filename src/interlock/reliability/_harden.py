"""Wiring for a registry: wrap a hook's executor, and the doctor's warnings."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

from interlock._catalog import BY_NAME, FailClosed, Kind
from interlock.reliability._breaker import BreakerBook, BreakerKey
from interlock.reliability._policy import Clock, Policy
from interlock.reliability._wrap import wrap

if TYPE_CHECKING:
    from interlock._hooks import Hook
    from interlock.metrics import Metrics

GRACE = 1.0
"""Seconds the engine's outer bound leaves over the budget, so a budget that runs
out is reported by the wrapper (with its attempts), not cut short by the engine."""


def harden(hook: Hook, policy: Policy | None = None, *, breakers: BreakerBook | None,
           metrics: Metrics | None = None, clock: Clock | None = None) -> Hook:
    """A copy of ``hook`` whose executor runs behind timeout, retries and a breaker.

    ``policy`` defaults to DESIGN.md's numbers with the hook's own timeout per
    attempt. The copy's ``timeout`` (the engine's bound on the whole call)
    becomes the policy's total budget plus :data:`GRACE`. Python hooks are
    returned unchanged: the engine calls them directly (DESIGN.md, sync hooks
    run with no timer).
    """
    if hook.executor is None:
        return hook
    policy = policy or Policy(timeout=hook.timeout)
    total = policy.total
    return dataclasses.replace(
        hook,
        executor=wrap(hook.executor, policy, key=BreakerKey.of(hook), clock=clock,
                      breakers=breakers, metrics=metrics),
        timeout=None if total is None else total + GRACE,
        meta=dict(hook.meta),
    )


def fail_open_warnings(hooks: Iterable[Hook], policy: Policy | None = None) -> list[str]:
    """What `hooks doctor` says about fail-open hooks on gate events.

    Where a block would stop an action, a fail-open hook can be switched off by
    whoever can make it fail: after ``breaker_threshold`` failures its breaker
    opens and it is skipped for ``breaker_cooldown`` seconds.
    """
    policy = policy or Policy()
    out = []
    for hook in hooks:
        for name in hook.events:
            spec = BY_NAME[name]
            if spec.kind is not Kind.GATE or spec.fail_closed is FailClosed.NO_EFFECT:
                continue
            if hook.fails_closed(name) or hook.shadow:
                continue
            out.append(
                f"hook {hook.qualified_name} fails open on gate event {name}: anyone who "
                f"can make it fail {policy.breaker_threshold} times in a row turns it off "
                f"for {policy.breaker_cooldown:g}s (its circuit breaker opens). If it guards "
                "anything, set on_error = \"closed\".")
    return out
