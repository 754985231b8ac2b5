"""Helpers to test hooks the way Interlock tests its own.

    from interlock.testing import RecordingSink, fire

    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    outcome = fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
"""

from __future__ import annotations

import threading
from typing import Any

from interlock._dispatch import Engine
from interlock._outcome import Outcome
from interlock._sinks import FailureRecord
from interlock.events import make


class RecordingSink:
    """Keeps every outcome and failure in memory, in order."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.failures: list[FailureRecord] = []
        self._lock = threading.Lock()

    def dispatched(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)

    def failed(self, record: FailureRecord) -> None:
        with self._lock:
            self.failures.append(record)

    def verdicts(self) -> list[tuple[str, str, str]]:
        """(event, hook, verdict) for every hook of every recorded dispatch."""
        return [(o.name, r.hook, r.verdict) for o in self.outcomes for r in o.hooks]


def fire(engine: Engine, event: str, payload: dict[str, Any] | None = None,
         **fields: Any) -> Outcome:
    """Build event ``event`` from fields and emit it through the sync facade."""
    return engine.emit_sync(make(event, payload, **fields))


async def afire(engine: Engine, event: str, payload: dict[str, Any] | None = None,
                **fields: Any) -> Outcome:
    """Build event ``event`` from fields and emit it through the async API."""
    return await engine.emit(make(event, payload, **fields))
