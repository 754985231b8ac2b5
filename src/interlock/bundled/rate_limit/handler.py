"""rate-limit: a token bucket per chat sender on message_received."""

from __future__ import annotations

from typing import Any

from interlock.engine.decisions import Decision
from interlock.events import Event
from interlock.policies.ratelimit import RateLimiter

_limiter = RateLimiter()


def configure(options: dict[str, Any]) -> None:
    """Options: rate (messages per second), burst, max_senders."""
    global _limiter
    _limiter = RateLimiter(rate=float(options.get("rate", 0.5)),
                           burst=int(options.get("burst", 5)),
                           max_senders=int(options.get("max_senders", 10_000)))


def handle(event: Event) -> Decision | None:
    return _limiter.check(event)
