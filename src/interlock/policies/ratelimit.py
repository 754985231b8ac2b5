"""Per-sender rate limit on inbound chat messages: a token bucket per sender.

Each sender gets ``burst`` messages at once and ``rate`` more per second.
A message over the limit is blocked, and the reason (sent back to the
sender) says when to try again. Buckets are kept for at most ``max_senders``
senders (least recently seen are forgotten first), so a flood of new sender
ids cannot grow memory without bound.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from interlock.engine.decisions import Decision, block
from interlock.events import Event

SHARED: Callable[[str, float, int], float] | None = None
"""``take(key, rate, burst)`` of buckets shared by a fleet's replicas (set by `serve
--fleet`: interlock.hosts.fleet.state.SharedBuckets); None keeps them in this process."""


@dataclass
class RateLimiter:
    rate: float = 0.5
    """Tokens added per second."""
    burst: int = 5
    """Bucket size: messages allowed at once."""
    max_senders: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _buckets: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, sender: str) -> float:
        """Take one token for ``sender``: 0.0 if allowed, else seconds until one is free."""
        if SHARED is not None:
            return SHARED(f"chat:{sender}", self.rate, self.burst)
        now = self.clock()
        with self._lock:
            tokens, last = self._buckets.pop(sender, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[sender] = (tokens - 1.0, now)
                wait = 0.0
            else:
                self._buckets[sender] = (tokens, now)
                wait = (1.0 - tokens) / self.rate if self.rate > 0 else float("inf")
            while len(self._buckets) > self.max_senders:
                self._buckets.popitem(last=False)
        return wait

    def check(self, event: Event) -> Decision | None:
        if event.name != "message_received":
            return None
        sender = event.sender_id or f"channel:{event.channel}"  # type: ignore[attr-defined]
        wait = self.take(sender)
        if wait <= 0:
            return None
        return block(f"rate limit: too many messages; try again in {wait:.0f} s"
                     if wait != float("inf") else "rate limit: messages are not accepted")
