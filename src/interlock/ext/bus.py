"""The in-process bus between extensions: publish and subscribe by topic.

Delivery is asynchronous: ``publish`` only queues, and each subscription's
FIFO queue drains on the bus's own loop thread, so a slow listener never
blocks the publisher or other listeners. Queues are bounded. When one is
full the message is not queued for that subscriber; the drop is counted on
the subscription, logged, reported to ``on_overflow`` and returned by
``publish``, so nothing is lost silently. A listener that raises is counted,
logged and reported to ``on_error``. An ExtensionSet sends both reports to
its engine's sinks, so they land in the dead-letter store.
``drain(timeout)`` waits until everything queued has been delivered.

Topics are matched exactly, or as globs (``git.*``) when the subscription
uses ``*``, ``?`` or ``[``.
"""

from __future__ import annotations

import collections
import fnmatch
import inspect
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from interlock.engine.errors import HOOK_ERRORS
from interlock.engine.logs import logger
from interlock.engine.loop_thread import LoopThread

log = logger("interlock.extensions.bus")

Listener = Callable[["Message"], Any]
DEFAULT_QUEUE = 256


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    data: Any
    sender: str
    """Name of the extension that published it ('' for the host)."""
    ts: float


@dataclass(frozen=True, slots=True)
class Published:
    """What ``publish`` did: how many subscribers got it queued, and how many dropped it."""

    queued: int
    dropped: int


@dataclass(eq=False)
class Subscription:
    topic: str
    listener: Listener
    subscriber: str
    maxsize: int
    delivered: int = 0
    dropped: int = 0
    errors: int = 0
    items: collections.deque[Message] = field(default_factory=collections.deque)
    busy: bool = False
    active: bool = True

    def matches(self, topic: str) -> bool:
        if any(c in self.topic for c in "*?["):
            return fnmatch.fnmatchcase(topic, self.topic)
        return topic == self.topic


class EventBus:
    def __init__(self, *, maxsize: int = DEFAULT_QUEUE,
                 on_overflow: Callable[[Subscription, Message], None] | None = None,
                 on_error: Callable[[Subscription, Message, BaseException], None] | None = None,
                 ) -> None:
        self.maxsize = maxsize
        self.on_overflow = on_overflow
        self.on_error = on_error
        self._subs: list[Subscription] = []
        self._cond = threading.Condition()
        self._pending = 0
        self._loop = LoopThread()

    def subscribe(self, topic: str, listener: Listener, *, subscriber: str = "",
                  maxsize: int | None = None) -> Subscription:
        """Call ``listener(message)`` (sync or async) for each message on ``topic``."""
        sub = Subscription(topic, listener, subscriber, maxsize or self.maxsize)
        with self._cond:
            self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._cond:
            sub.active = False
            self._pending -= len(sub.items)
            sub.items.clear()
            self._subs = [s for s in self._subs if s is not sub]
            self._cond.notify_all()

    def unsubscribe_all(self, subscriber: str) -> None:
        for sub in [s for s in self._subs if s.subscriber == subscriber]:
            self.unsubscribe(sub)

    def publish(self, topic: str, data: Any = None, *, sender: str = "") -> Published:
        message = Message(topic, data, sender, time.time())
        queued = dropped = 0
        overflowed: list[Subscription] = []
        starts: list[Subscription] = []
        with self._cond:
            for sub in self._subs:
                if not sub.matches(topic):
                    continue
                if len(sub.items) >= sub.maxsize:
                    sub.dropped += 1
                    dropped += 1
                    overflowed.append(sub)
                    continue
                sub.items.append(message)
                self._pending += 1
                queued += 1
                if not sub.busy:
                    sub.busy = True
                    starts.append(sub)
        for sub in overflowed:
            log.warning("bus: queue of %s on %r is full (%d); message from %r dropped "
                        "(%d dropped so far)", sub.subscriber or "listener", sub.topic,
                        sub.maxsize, sender, sub.dropped)
            if self.on_overflow is not None:
                try:
                    self.on_overflow(sub, message)
                except Exception:  # the queued messages must still be delivered
                    log.exception("bus: on_overflow failed")
        for sub in starts:
            self._loop.submit(self._drain(sub))
        return Published(queued, dropped)

    def _next(self, sub: Subscription) -> Message | None:
        with self._cond:
            if not sub.items or not sub.active:
                sub.busy = False
                return None
            return sub.items.popleft()

    def _drain(self, sub: Subscription) -> Coroutine[Any, Any, None]:
        async def run() -> None:
            while (message := self._next(sub)) is not None:
                try:
                    result = sub.listener(message)
                    if inspect.isawaitable(result):
                        await result
                    sub.delivered += 1
                except HOOK_ERRORS as exc:  # a listener's sys.exit() too: the loop goes on
                    sub.errors += 1
                    log.exception("bus: listener of %s on %r failed", sub.subscriber or "?",
                                  sub.topic)
                    if self.on_error is not None:
                        try:
                            self.on_error(sub, message, exc)
                        except Exception:
                            log.exception("bus: on_error failed")
                finally:
                    with self._cond:
                        self._pending -= 1
                        self._cond.notify_all()

        return run()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued message was delivered; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending <= 0, timeout)

    def stats(self) -> list[dict[str, Any]]:
        with self._cond:
            return [{"subscriber": s.subscriber, "topic": s.topic, "queued": len(s.items),
                     "delivered": s.delivered, "dropped": s.dropped, "errors": s.errors,
                     "maxsize": s.maxsize} for s in self._subs]

    def close(self, timeout: float = 5.0) -> None:
        self.drain(timeout)
        self._loop.close()


class BusClient:
    """``ctx.events``: the bus as one extension sees it (its name is the sender)."""

    def __init__(self, bus: EventBus, name: str) -> None:
        self._bus = bus
        self.name = name
        self.subscriptions: list[Subscription] = []

    def publish(self, topic: str, data: Any = None) -> Published:
        return self._bus.publish(topic, data, sender=self.name)

    def subscribe(self, topic: str, listener: Listener | None = None, *,
                  maxsize: int | None = None) -> Any:
        """Subscribe ``listener``; without one, a decorator."""

        def add(fn: Listener) -> Listener:
            self.subscriptions.append(
                self._bus.subscribe(topic, fn, subscriber=self.name, maxsize=maxsize))
            return fn

        if listener is not None:
            return add(listener)
        return add

    def close(self) -> None:
        for sub in self.subscriptions:
            self._bus.unsubscribe(sub)
        self.subscriptions.clear()
