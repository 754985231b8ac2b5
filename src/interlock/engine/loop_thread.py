"""Running hook code: timers only where something can hang, and the
background loop that observers, background hooks and the sync facade share."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported when the loop starts: the sync path never needs them
    import asyncio
    from concurrent.futures import Future

T = TypeVar("T")


class Resume:
    """Awaitable that continues a coroutine that has already been stepped once.

    The dispatcher steps an async hook's coroutine inline with ``send(None)``;
    most hooks finish there and never need a timer (an ``asyncio.timeout``
    costs ~20 us in bench/dispatch.py; docs/engine.md, Timers). Only a hook
    that actually suspended is resumed through this object, under a timer.
    The future it yielded is handed on to whichever task awaits us, unchanged.
    """

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coro = coro
        self.first = first

    def close_if_cancelled(self, task: asyncio.Future[Any]) -> None:
        """Done callback of the task that resumes us. A task cancelled before its
        first step never resumed the hook: close it now, so its ``finally``
        blocks run at once rather than whenever it is garbage collected."""
        if task.cancelled():
            self.coro.close()

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        value = self.first
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # forward cancellation and timeouts into the hook
                try:
                    value = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


class LoopThread:
    """A private event loop on a daemon thread.

    The sync facade runs dispatches that may suspend here, and background
    hooks and observer queues drain here, so a sync host never has to run a
    loop of its own.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is not None:
            return loop
        with self._lock:
            if self._loop is None:
                import asyncio

                ready = threading.Event()
                new_loop = asyncio.new_event_loop()

                def run() -> None:
                    asyncio.set_event_loop(new_loop)
                    ready.set()
                    new_loop.run_forever()

                self._thread = threading.Thread(target=run, name="interlock-loop", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = new_loop
            return self._loop

    def in_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run ``coro`` on the loop thread in a copy of the caller's context.

        The caller's contextvars (replay mode, tracing context) reach the
        hooks, as they would with ``await`` on the caller's own loop.
        """
        from concurrent.futures import Future

        ctx = contextvars.copy_context()
        result: Future[T] = Future()
        loop = self.loop

        def start() -> None:
            task = loop.create_task(coro, context=ctx)

            def done(t: asyncio.Task[T]) -> None:
                if t.cancelled():
                    result.cancel()
                elif (exc := t.exception()) is not None:
                    result.set_exception(exc)
                else:
                    result.set_result(t.result())

            task.add_done_callback(done)

        loop.call_soon_threadsafe(start)
        return result

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.in_thread():
            coro.close()
            raise RuntimeError("the sync facade cannot be called from a hook on the engine loop")
        return self.submit(coro).result()

    def call_soon(self, fn: Callable[[], Any]) -> None:
        self.loop.call_soon_threadsafe(fn)

    def close(self) -> None:
        """Stop the loop, first cancelling what still runs on it (checks cut
        off by an ending answer, background hooks) and waiting, for at most
        ``DRAIN_SECONDS``, for their cleanup: a killed subprocess reaped, a
        ``finally`` run. Left pending, asyncio reports them on stderr when the
        loop goes, which an agent would show its model as part of a reason."""
        loop = self._loop
        if loop is None:
            return
        if loop.is_running() and not self.in_thread():
            import asyncio

            drained = asyncio.run_coroutine_threadsafe(_drain(DRAIN_SECONDS), loop)
            try:
                drained.result(timeout=DRAIN_SECONDS + 1)
            except Exception:  # closing goes on whatever the drain met
                drained.cancel()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        if not loop.is_running():
            loop.close()
        self._loop = None
        self._thread = None


DRAIN_SECONDS = 2.0
"""How long closing the loop waits for cancelled tasks to finish their cleanup."""


async def _drain(seconds: float) -> None:
    """Cancel every other task on this loop and wait for them, within ``seconds``."""
    import asyncio

    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=seconds)


monotonic_ns = time.perf_counter_ns
"""The clock for hook latencies (bound directly: it is read once per hook)."""
