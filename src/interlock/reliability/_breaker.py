"""Circuit breakers, one per hook definition, kept in a book that outlives reloads.

A breaker counts consecutive failed invocations (after retries). At the
threshold it opens: calls fail at once with ``FailureMode.BREAKER_OPEN``, which
the engine turns into a block for a fail-closed hook, so an open breaker never
lets traffic through. After the cooldown one probe is let through (half-open):
success closes the breaker, failure opens it for another cooldown. A block is
an answer, so it counts as a success.

Breakers are keyed by source, name and definition digest (its paths relative to
the hook's place, ``Hook.portable_digest``, so replicas holding the project at
other paths share a key): a reload that keeps a hook's definition keeps its
breaker (the book belongs to whoever owns the registry, not to a hook set), and
an edited hook starts with a fresh one.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from interlock.reliability._policy import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from interlock.engine.hooks import Hook


class BreakerKey(NamedTuple):
    source: str
    name: str
    digest: str

    @classmethod
    def of(cls, hook: Hook) -> BreakerKey:
        return cls(hook.source.label, hook.name, hook.portable_digest or hook.digest)

    @property
    def hook(self) -> str:
        """The hook's qualified name, ``source:name``."""
        return f"{self.source}:{self.name}"


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


Listener = Callable[["Breaker", BreakerState, BreakerState], None]
"""Called as ``listener(breaker, old, new)`` on every state change."""


class Breaker(msgspec.Struct, eq=False):
    """The state of one hook definition's breaker. Change it only through the book."""

    key: BreakerKey
    threshold: int
    cooldown: float
    state: BreakerState = BreakerState.CLOSED
    failures: int = 0
    """Consecutive failed invocations."""
    opened_at: float = 0.0
    opens: int = 0
    """How many times it opened."""
    probing: bool = False
    """A half-open probe is in flight; everything else is refused meanwhile."""
    taken: bool = False
    """Made by :meth:`BreakerBook.take` before any call here: the first call sets
    its own threshold and cooldown."""

    def retry_in(self, now: float) -> float:
        """Seconds until an open breaker lets a probe through."""
        if self.state is not BreakerState.OPEN:
            return 0.0
        return max(0.0, self.opened_at + self.cooldown - now)


class BreakerBook:
    """Every breaker of an engine, by key. Thread-safe; create one per registry."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._breakers: dict[BreakerKey, Breaker] = {}
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._kept: set[BreakerKey] | None = None
        """The keys the last :meth:`forget` kept (None: it never ran, any key counts)."""

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def get(self, key: BreakerKey, threshold: int = 3, cooldown: float = 60.0) -> Breaker:
        breaker = self._breakers.get(key)
        if breaker is None:
            with self._lock:
                breaker = self._breakers.setdefault(key, Breaker(key, threshold, cooldown))
        elif breaker.taken:
            with self._lock:
                breaker.threshold, breaker.cooldown, breaker.taken = threshold, cooldown, False
        return breaker

    def state(self, key: BreakerKey) -> BreakerState:
        """The state callers would see now (an expired cooldown reads as half-open)."""
        breaker = self._breakers.get(key)
        if breaker is None:
            return BreakerState.CLOSED
        if breaker.state is BreakerState.OPEN and breaker.retry_in(self.clock.now()) == 0:
            return BreakerState.HALF_OPEN
        return breaker.state

    def snapshot(self) -> list[Breaker]:
        with self._lock:
            return list(self._breakers.values())

    def forget(self, keep: set[BreakerKey]) -> None:
        """Drop breakers of definitions no longer loaded (call after a reload)."""
        with self._lock:
            self._kept = set(keep)
            for key in [k for k in self._breakers if k not in keep]:
                del self._breakers[key]

    # -- transitions ----------------------------------------------------------
    def admit(self, breaker: Breaker) -> bool:
        """May this invocation run? Starts the half-open probe when the cooldown is over."""
        if breaker.state is BreakerState.CLOSED:
            return True
        with self._lock:
            if breaker.state is BreakerState.OPEN:
                if breaker.retry_in(self.clock.now()) > 0:
                    return False
                self._move(breaker, BreakerState.HALF_OPEN)
            if breaker.state is BreakerState.HALF_OPEN:
                if breaker.probing:
                    return False
                breaker.probing = True
            return True

    def succeeded(self, breaker: Breaker) -> None:
        if breaker.state is BreakerState.CLOSED and breaker.failures == 0:
            return
        with self._lock:
            breaker.failures = 0
            breaker.probing = False
            if breaker.state is not BreakerState.CLOSED:
                self._move(breaker, BreakerState.CLOSED)

    def failed(self, breaker: Breaker) -> None:
        with self._lock:
            breaker.failures += 1
            was_probe = breaker.probing
            breaker.probing = False
            if breaker.state is BreakerState.HALF_OPEN or (
                breaker.state is BreakerState.CLOSED and breaker.failures >= breaker.threshold
            ) or (was_probe and breaker.state is not BreakerState.OPEN):
                breaker.opened_at = self.clock.now()
                breaker.opens += 1
                self._move(breaker, BreakerState.OPEN)

    def released(self, breaker: Breaker) -> None:
        """The invocation was cancelled: neither a success nor a failure."""
        if breaker.probing:
            with self._lock:
                breaker.probing = False

    def take(self, key: BreakerKey, state: BreakerState, *, age: float = 0.0,
             threshold: int = 3, cooldown: float = 60.0) -> Breaker | None:
        """Take a state another replica reached (interlock.hosts.fleet): open as if opened
        ``age`` seconds ago, or closed. A hook loaded here but not called yet gets its
        breaker now (with the other replica's numbers until its first call here), so it
        starts open; a key the last :meth:`forget` did not keep is ignored (None). A
        probe in flight here keeps its course."""
        with self._lock:
            breaker = self._breakers.get(key)
            if breaker is None:
                if self._kept is not None and key not in self._kept:
                    return None
                breaker = self._breakers[key] = Breaker(key, threshold, cooldown, taken=True)
            if state is BreakerState.OPEN and breaker.state is not BreakerState.OPEN \
                    and not breaker.probing:
                breaker.opened_at = self.clock.now() - age
                breaker.opens += 1
                self._move(breaker, BreakerState.OPEN)
            elif state is BreakerState.CLOSED and breaker.state is BreakerState.OPEN:
                breaker.failures = 0
                self._move(breaker, BreakerState.CLOSED)
            return breaker

    def _move(self, breaker: Breaker, new: BreakerState) -> None:
        old = breaker.state
        breaker.state = new
        for listener in self._listeners:
            listener(breaker, old, new)
