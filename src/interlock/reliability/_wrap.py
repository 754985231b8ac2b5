"""``wrap()``: an executor with timeout, retries and a circuit breaker around it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from interlock.engine.errors import FailureMode, HookFailure
from interlock.engine.hooks import Executor
from interlock.reliability._breaker import BreakerBook, BreakerKey
from interlock.reliability._policy import SYSTEM_CLOCK, Clock, Policy
from interlock.reliability._retry import run_with_retries

if TYPE_CHECKING:
    import random

    from interlock.engine.decisions import Decision
    from interlock.engine.hooks import Invocation
    from interlock.reliability.metrics import Metrics


class Reliable(Executor):
    """An :class:`~interlock.engine.hooks.Executor`: breaker ▸ retry ▸ timeout ▸ executor.

    The breaker is outermost, so one invocation (with all its retries) counts
    once: three invocations that each exhausted their retries open it.
    """

    __slots__ = ("_rng", "breakers", "clock", "inner", "key", "metrics", "policy")

    def __init__(self, inner: Executor, policy: Policy, *, key: BreakerKey | None,
                 clock: Clock, breakers: BreakerBook | None, metrics: Metrics | None,
                 rng: random.Random | None) -> None:
        self.inner = inner
        self.policy = policy
        self.key = key
        self.clock = clock
        self.breakers = breakers
        self.metrics = metrics
        if rng is None:
            import random  # here: loading a config with no executor hook needs none

            rng = random.Random()
        self._rng = rng

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __call__(self, invocation: Invocation) -> Decision | None:
        book = self.breakers
        policy = self.policy
        if book is None or policy.breaker_threshold == 0:
            return await run_with_retries(self.inner, invocation, policy, self.clock,
                                          self._rng, self._retried)
        breaker = book.get(self.key or BreakerKey.of(invocation.hook),
                           policy.breaker_threshold, policy.breaker_cooldown)
        if not book.admit(breaker):
            wait = breaker.retry_in(book.clock.now())
            raise HookFailure(
                f"circuit breaker of hook {invocation.hook.qualified_name} is open after "
                f"{breaker.failures} consecutive failures; "
                + (f"next probe in {wait:.0f}s" if wait else "a probe is in flight"),
                mode=FailureMode.BREAKER_OPEN, retryable=False)
        try:
            decision = await run_with_retries(self.inner, invocation, policy, self.clock,
                                              self._rng, self._retried)
        except HookFailure:
            book.failed(breaker)
            raise
        except BaseException:
            book.released(breaker)  # cancelled (or an outer deadline): no verdict either way
            raise
        book.succeeded(breaker)  # any answer counts, a block included
        return decision

    def _retried(self, invocation: Invocation, failure: HookFailure, delay: float) -> None:
        if self.metrics is not None:
            self.metrics.retried(invocation.hook.qualified_name)


def wrap(
    executor: Executor,
    policy: Policy | None = None,
    *,
    key: BreakerKey | None = None,
    clock: Clock | None = None,
    breakers: BreakerBook | None = None,
    metrics: Metrics | None = None,
    rng: random.Random | None = None,
) -> Reliable:
    """Wrap ``executor`` with timeout, retries and a circuit breaker.

    - ``policy``: the hook's numbers (docs/reliability.md's defaults when None).
    - ``key``: the breaker key; by default derived from the invocation's hook
      (source, name, definition digest).
    - ``clock``: ``now()`` and ``sleep()``; the system clock by default. The
      breaker book reads its own clock (pass the same one to both in tests).
    - ``breakers``: the book that keeps breaker state across reloads; None
      means no breaker.
    - ``metrics``: counts retries (breaker opens are counted by
      ``metrics.watch(book)``).
    """
    return Reliable(executor, policy or Policy(), key=key, clock=clock or SYSTEM_CLOCK,
                    breakers=breakers, metrics=metrics, rng=rng)
