"""Reliability wrappers around any executor: timeout, retry, circuit breaker.

    from interlock.reliability import BreakerBook, Policy, wrap

    book = BreakerBook()                      # one per registry; outlives reloads
    hook.executor = wrap(executor, Policy(timeout=5, retries=2), breakers=book)
    hook.timeout = policy.total               # the budget bounds the whole call

See docs/reliability.md.
"""

from interlock.reliability._breaker import Breaker, BreakerBook, BreakerKey, BreakerState
from interlock.reliability._policy import SYSTEM_CLOCK, Clock, Policy, SystemClock
from interlock.reliability._retry import RetriesExhausted, backoff_delay, retryable
from interlock.reliability._wrap import Reliable, wrap

__all__ = [
    "SYSTEM_CLOCK",
    "Breaker",
    "BreakerBook",
    "BreakerKey",
    "BreakerState",
    "Clock",
    "Policy",
    "Reliable",
    "RetriesExhausted",
    "SystemClock",
    "backoff_delay",
    "retryable",
    "wrap",
]
