"""An outcome that is already decided, in a form ``await`` reads for free.

``Engine.emit`` for an event with no hooks returns one of these instead of a
fresh coroutine. Building and running a coroutine costs more than the whole
no-hook dispatch; awaiting a finished ``asyncio.Future`` is a few C calls
(its iterator hands back the result without suspending or raising).

It still behaves as the coroutine the caller asked for:

- it is a :class:`collections.abc.Coroutine`, so ``asyncio.create_task``,
  ``asyncio.run``, ``gather``, ``wait_for`` and ``run_coroutine_threadsafe``
  take it; ``send(None)`` finishes at once with the outcome;
- asyncio does not treat it as a future (``_asyncio_future_blocking`` is
  None), so it is never bound to, or compared with, any event loop;
- it can be awaited any number of times, from any loop or thread; it holds
  a shared immutable outcome and nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, NoReturn

from interlock.engine.outcome import Outcome


class _NoLoop:
    """The loop a settled future is built with; it never schedules anything.

    A finished future runs no callbacks of its own. One added later (nobody
    in asyncio does) runs on the caller's running loop.
    """

    def get_debug(self) -> bool:
        return False

    def call_soon(self, callback: Callable[..., Any], *args: Any,
                  context: Any = None) -> asyncio.Handle:
        return asyncio.get_running_loop().call_soon(callback, *args, context=context)


_NO_LOOP = _NoLoop()


class Settled(asyncio.Future[Outcome], Coroutine[Any, Any, Outcome]):
    """A finished, reusable awaitable of one shared outcome."""

    __slots__ = ()

    # Not None marks an object as a future to asyncio (asyncio.isfuture); as
    # a coroutine, a Settled is wrapped in a Task by whoever needs one.
    _asyncio_future_blocking = None  # type: ignore[assignment]

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(loop=_NO_LOOP)  # type: ignore[arg-type]
        self.set_result(outcome)

    def send(self, value: Any) -> NoReturn:
        raise StopIteration(self.result())

    def close(self) -> None:
        """Nothing to release: there is no frame behind a settled outcome."""

    def throw(self, typ: Any, val: Any = None, tb: TracebackType | None = None) -> NoReturn:
        # As a coroutine that has not started: the exception comes straight out.
        if val is None:
            val = typ() if isinstance(typ, type) else typ
        if tb is not None:
            val = val.with_traceback(tb)
        raise val
