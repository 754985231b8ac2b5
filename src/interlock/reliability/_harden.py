"""Wiring for a registry: wrap a hook's executor, and the doctor's warnings."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from interlock.engine.catalog import BY_NAME, FailClosed, Kind
from interlock.engine.coroutines import iscoroutinefunction
from interlock.engine.errors import FailureMode, HookFailure
from interlock.reliability._breaker import Breaker, BreakerBook, BreakerKey
from interlock.reliability._policy import Clock, Policy
from interlock.reliability._wrap import wrap

if TYPE_CHECKING:
    from interlock.engine.hooks import Hook
    from interlock.reliability.metrics import Metrics

GRACE = 1.0
"""Seconds the engine's outer bound leaves over the budget, so a budget that runs
out is reported by the wrapper (with its attempts), not cut short by the engine."""


def harden(hook: Hook, policy: Policy | None = None, *, breakers: BreakerBook | None,
           metrics: Metrics | None = None, clock: Clock | None = None) -> Hook:
    """A copy of ``hook`` whose executor runs behind timeout, retries and a breaker.

    ``policy`` defaults to docs/reliability.md's numbers with the hook's own
    timeout per attempt. The copy's ``timeout`` (the engine's bound on the whole
    call) becomes the policy's total budget plus :data:`GRACE`.

    A Python hook gets only the breaker (no retries, no timer: the engine calls
    it directly and times it itself, docs/engine.md): its function is wrapped
    to ask the breaker first. A raise counts as a failure, any answer as a
    success. A cancelled call counts as a failure when it ran for the hook's whole
    timeout (the engine's timer cut it), and as neither otherwise (a shutdown or
    an ending run cut it short).
    """
    if hook.executor is None:
        policy = policy or Policy(timeout=hook.timeout)
        if breakers is None or policy.breaker_threshold == 0 or hook.fn is None:
            return hook
        return dataclasses.replace(hook, fn=_guarded_fn(hook, policy, breakers),
                                   meta=dict(hook.meta))
    policy = policy or Policy(timeout=hook.timeout)
    total = policy.total
    return dataclasses.replace(
        hook,
        executor=wrap(hook.executor, policy, key=BreakerKey.of(hook), clock=clock,
                      breakers=breakers, metrics=metrics),
        timeout=None if total is None else total + GRACE,
        meta=dict(hook.meta),
    )


def _guarded_fn(hook: Hook, policy: Policy, book: BreakerBook) -> Any:
    """``hook.fn`` behind its breaker (sync stays sync, async stays async)."""
    fn = hook.fn
    assert fn is not None
    key = BreakerKey.of(hook)
    name = hook.qualified_name
    threshold, cooldown = policy.breaker_threshold, policy.breaker_cooldown
    timeout = hook.timeout

    def admitted() -> Breaker:
        breaker = book.get(key, threshold, cooldown)
        if not book.admit(breaker):
            wait = breaker.retry_in(book.clock.now())
            raise HookFailure(
                f"circuit breaker of hook {name} is open after {breaker.failures} "
                "consecutive failures; "
                + (f"next probe in {wait:.0f}s" if wait else "a probe is in flight"),
                mode=FailureMode.BREAKER_OPEN, retryable=False)
        return breaker

    if iscoroutinefunction(fn) or iscoroutinefunction(
            getattr(fn, "__call__", None)):  # noqa: B004 - async callable objects
        async def guarded_async(event: Any) -> Any:
            breaker = admitted()
            began = time.monotonic()
            try:
                answer = await fn(event)  # type: ignore[misc]
            except Exception:
                book.failed(breaker)
                raise
            except BaseException:
                # The engine's timer starts when the hook first suspends, so a timeout
                # has always run at least ``timeout`` seconds by this clock.
                if timeout is not None and time.monotonic() - began >= timeout:
                    book.failed(breaker)
                else:
                    book.released(breaker)  # cut short: no verdict either way
                raise
            book.succeeded(breaker)
            return answer

        return functools.wraps(fn)(guarded_async)

    def guarded(event: Any) -> Any:
        breaker = admitted()
        try:
            answer = fn(event)
        except Exception:
            book.failed(breaker)
            raise
        except BaseException:
            book.released(breaker)
            raise
        book.succeeded(breaker)
        return answer

    return functools.wraps(fn)(guarded)


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
            if policy.breaker_threshold == 0:
                out.append(
                    f"hook {hook.qualified_name} fails open on gate event {name}: each time "
                    "it fails, the call goes through as if it had no opinion (it has no "
                    "breaker: breaker_threshold = 0). If it guards anything, set "
                    "on_error = \"closed\".")
                continue
            out.append(
                f"hook {hook.qualified_name} fails open on gate event {name}: anyone who "
                f"can make it fail {policy.breaker_threshold} times in a row turns it off "
                f"for {policy.breaker_cooldown:g}s (its circuit breaker opens). If it guards "
                "anything, set on_error = \"closed\".")
    return out
