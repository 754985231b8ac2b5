"""How late the server's event loop runs: the probe that tells a stall's cause.

Every answer of `interlock serve` passes through one event loop. When a
request is slow, either the loop was blocked (something ran on it for that
long: a slow query, a big JSON body, a checkpoint that should be on a thread)
or the process did not get the CPU (a loaded machine). A task that asks to
wake every :data:`PERIOD` seconds and measures how late it woke tells the two
apart: a loop lag as long as the stall means the loop was blocked. Status shows
the worst lag since start and over the last minute (docs/reliability.md,
Stalls).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

PERIOD = 0.1
WINDOW = 60.0


class LoopLag:
    """The worst event-loop lag since start and over the last :data:`WINDOW` s."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._recent = 0.0  # worst in the current window
        self._previous = 0.0  # worst in the window before it
        self._window_start = time.monotonic()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._probe())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def note(self, lag: float, now: float) -> None:
        if now - self._window_start >= WINDOW:
            self._previous, self._recent = self._recent, 0.0
            self._window_start = now
        self._recent = max(self._recent, lag)
        self.worst = max(self.worst, lag)

    def status(self) -> dict[str, Any]:
        return {"event_loop_lag": {"max_s": round(self.worst, 4),
                                   "recent_max_s": round(max(self._recent, self._previous), 4)}}

    def exposition(self) -> str:
        recent = max(self._recent, self._previous)
        return ("# HELP interlock_event_loop_lag_max_seconds Worst lateness of the server's "
                "event loop over the last one to two minutes\n"
                "# TYPE interlock_event_loop_lag_max_seconds gauge\n"
                f"interlock_event_loop_lag_max_seconds {recent:.6f}\n")

    async def _probe(self) -> None:
        while True:
            due = time.monotonic() + PERIOD
            await asyncio.sleep(PERIOD)
            now = time.monotonic()
            self.note(max(0.0, now - due), now)
