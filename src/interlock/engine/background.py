"""Background work: per-hook FIFO queues drained on the engine's own loop.

Background hooks and observers handed over with ``Engine.notify`` go here. A
full queue drops the invocation and records it as a failure (mode
``dropped``), so nothing is lost silently. ``drain()`` waits, with a
deadline, for everything queued.
"""

from __future__ import annotations

import collections
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from interlock.engine.errors import FailureMode, HookFailure
from interlock.engine.events import Event
from interlock.engine.hooks import Hook
from interlock.engine.invoke import call
from interlock.engine.logs import logger
from interlock.engine.loop_thread import LoopThread

log = logger("interlock")

RecordFailure = Callable[[Hook, Event, HookFailure], None]


class _Queue:
    __slots__ = ("busy", "items")

    def __init__(self) -> None:
        self.items: collections.deque[tuple[Hook, Event, contextvars.Context]] = \
            collections.deque()
        self.busy = False


class Background:
    def __init__(self, loop: LoopThread, record_failure: RecordFailure, limit: int) -> None:
        self._loop = loop
        self._record_failure = record_failure
        self.limit = limit
        self._queues: dict[Hook, _Queue] = {}
        self._cond = threading.Condition()
        self._pending = 0

    def submit(self, hook: Hook, event: Event) -> bool:
        """Queue one invocation; False (and a dropped-failure record) when full."""
        with self._cond:
            queue = self._queues.get(hook)
            if queue is None:
                queue = self._queues[hook] = _Queue()
            if len(queue.items) >= self.limit:
                dropped = True
            else:
                dropped = False
                # The submitter's context (the replay flag, tracing) goes with the item:
                # the queue's drainer runs in whichever context started it.
                queue.items.append((hook, event, contextvars.copy_context()))
                self._pending += 1
                start = not queue.busy
                queue.busy = True
        if dropped:
            self._record_failure(hook, event, HookFailure(
                f"queue of hook {hook.qualified_name} is full ({self.limit}); invocation "
                "dropped", mode=FailureMode.DROPPED))
            return False
        if start:
            self._loop.submit(self._drain(queue))
        return True

    def _next(self, queue: _Queue) -> tuple[Hook, Event, contextvars.Context] | None:
        with self._cond:
            if not queue.items:
                queue.busy = False
                return None
            return queue.items.popleft()

    def _drain(self, queue: _Queue) -> Coroutine[Any, Any, None]:
        async def run() -> None:
            import asyncio  # on the engine's loop: imported already

            while (item := self._next(queue)) is not None:
                hook, event, ctx = item
                try:
                    _decision, failure = await asyncio.create_task(
                        call(hook, event, event.spec), context=ctx)
                    if failure is not None:
                        self._record_failure(hook, event, failure)
                except asyncio.CancelledError:
                    # The loop is closing (close() past its deadline): this one and
                    # those still queued never finish, and each is recorded.
                    self._cut_off(queue, hook, event)
                    raise
                finally:
                    with self._cond:
                        self._pending -= 1
                        self._cond.notify_all()

        return run()

    def _cut_off(self, queue: _Queue, hook: Hook, event: Event) -> None:
        """Record the invocation a closing loop cancelled and empty its queue."""
        with self._cond:
            rest = list(queue.items)
            queue.items.clear()
            queue.busy = False
            self._pending -= len(rest)
            self._cond.notify_all()
        for h, e, _ctx in ((hook, event, None), *rest):
            self._record_failure(h, e, HookFailure(
                f"hook {h.qualified_name}'s background invocation was dropped: the engine "
                "closed before it finished", mode=FailureMode.DROPPED))

    def drain(self, timeout: float | None) -> bool:
        """Wait until everything queued has run; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)
