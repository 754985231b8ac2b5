"""Reliability wrappers around any executor: timeout, retry, circuit breaker.

    from interlock.reliability import BreakerBook, Policy, wrap

    book = BreakerBook()                      # one per registry; outlives reloads
    hook = harden(hook, Policy(timeout=5, retries=2), breakers=book)

``harden`` wraps the hook's executor with ``wrap()`` and sets ``Hook.timeout``
(the engine's bound on the whole call) to the policy's total budget.

See docs/reliability.md.
"""

from interlock.reliability._breaker import Breaker, BreakerBook, BreakerKey, BreakerState
from interlock.reliability._harden import GRACE, fail_open_warnings, harden
from interlock.reliability._policy import SYSTEM_CLOCK, Clock, Policy, SystemClock
from interlock.reliability._retry import RetriesExhausted, backoff_delay, retryable
from interlock.reliability._wrap import Reliable, wrap

__all__ = [
    "GRACE",
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
    "fail_open_warnings",
    "harden",
    "retryable",
    "wrap",
]
