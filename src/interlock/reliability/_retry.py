"""Timeout and retry around one executor: attempts inside one total budget.

Failures are classified by :func:`retryable`: timeouts and crashes are worth
another attempt, a contract error (the hook answered garbage, and will again)
or a refusal (breaker open, unapproved, ineligible) is terminal. Executors
refine it with ``HookFailure(retryable=..., retry_after=...)``: an HTTP 503
with ``Retry-After: 2`` is retryable after 2 s, a 400 is terminal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from interlock.engine.errors import FailureMode, HookCrash, HookFailure, HookTimeout
from interlock.reliability._policy import Clock, Policy

if TYPE_CHECKING:
    import random

    from interlock.engine.decisions import Decision
    from interlock.engine.hooks import Executor, Invocation

_TERMINAL_MODES = frozenset({
    FailureMode.CONTRACT, FailureMode.BREAKER_OPEN, FailureMode.UNAPPROVED,
    FailureMode.INELIGIBLE, FailureMode.DROPPED, FailureMode.EXHAUSTED,
})


class RetriesExhausted(HookFailure):
    """Every attempt failed, or the budget ran out before the next one."""

    mode = FailureMode.EXHAUSTED

    def __init__(self, message: str, *, attempts: int, last: HookFailure) -> None:
        super().__init__(message, retryable=False)
        self.attempts = attempts
        self.last = last


def retryable(failure: HookFailure) -> bool:
    """Is another attempt worth making after ``failure``?"""
    if failure.mode in _TERMINAL_MODES:
        return False
    return failure.retryable


def backoff_delay(policy: Policy, retry: int, rng: random.Random) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**(retry-1))] (retry counts from 1)."""
    ceiling = min(policy.backoff_max, policy.backoff * (2 ** (retry - 1)))
    return rng.uniform(0.0, ceiling)


async def attempt_once(executor: Executor, inv: Invocation, limit: float | None) -> Decision | None:
    """One attempt under ``limit`` seconds; every failure comes out as a HookFailure."""
    import asyncio  # awaited on a loop: imported already

    name = inv.hook.qualified_name
    try:
        async with asyncio.timeout(limit) as timer:
            return await executor(inv)
    except TimeoutError:
        if timer.expired():
            raise HookTimeout(f"hook {name} timed out after {limit:g}s "
                              f"(attempt {inv.attempt})") from None
        raise  # an outer deadline: not ours to classify
    except HookFailure:
        raise
    except Exception as exc:
        from interlock.engine.invoke import crash_site

        where = crash_site(exc)
        raise HookCrash(f"hook {name} raised {type(exc).__name__}: {exc}"
                        + (f" (at {where})" if where else "")) from exc


async def run_with_retries(
    executor: Executor,
    inv: Invocation,
    policy: Policy,
    clock: Clock,
    rng: random.Random,
    on_retry: Callable[[Invocation, HookFailure, float], None] | None = None,
) -> Decision | None:
    """Run ``inv`` until it answers, fails terminally, or retries or budget run out.

    Every attempt keeps the invocation id (the wire contract promises it is
    stable across retries) and carries its attempt number.
    """
    total = policy.total
    deadline = None if total is None else clock.now() + total
    attempt = 1
    while True:
        this = inv if attempt == inv.attempt else dataclasses.replace(inv, attempt=attempt)
        limit = policy.timeout
        if deadline is not None:
            remaining = deadline - clock.now()
            limit = remaining if limit is None else min(limit, remaining)
            limit = max(limit, 0.0)
        try:
            return await attempt_once(executor, this, limit)
        except HookFailure as exc:
            failure = exc
        if attempt > policy.retries or not retryable(failure):
            raise _final(inv, failure, attempt, "")
        delay = backoff_delay(policy, attempt, rng)
        if failure.retry_after is not None:
            delay = max(delay, min(failure.retry_after, policy.retry_after_cap))
        if deadline is not None and clock.now() + delay >= deadline:
            raise _final(inv, failure, attempt, " (time budget spent)")
        if on_retry is not None:
            on_retry(this, failure, delay)
        await clock.sleep(delay)
        attempt += 1


def _final(inv: Invocation, failure: HookFailure, attempts: int, why: str) -> HookFailure:
    if attempts == 1 and not why:
        failure.attempts = 1  # type: ignore[attr-defined]  # read by the engine's dead letter
        return failure
    return RetriesExhausted(
        f"hook {inv.hook.qualified_name} gave up after {attempts} attempt"
        f"{'s' if attempts > 1 else ''}{why}; last failure ({failure.mode.value}): {failure}",
        attempts=attempts, last=failure)
