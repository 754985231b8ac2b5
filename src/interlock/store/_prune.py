"""Retention, deleted in bounded chunks between the writer's batches.

One DELETE of a whole retention's worth of rows (300,000 audit rows at the
cap) held the writer, and every strict answer waiting for its commit, for as
long as it took. Here each statement deletes at most ``chunk`` rows, and the
writer commits the waiting batch between two of them, so a commit waits for
one chunk at most (docs/reliability.md, "Stalls").
"""

from __future__ import annotations

import collections
import threading
import time
from typing import TYPE_CHECKING

from interlock.engine.logs import logger
from interlock.store._sql import AUDIT, DL, PAYLOADS

if TYPE_CHECKING:
    from interlock.store._records import Retention
    from interlock.store._sql import SQLBackend

log = logger("interlock")

CHUNK = 5000
"""Rows one prune statement deletes at most."""

NAMES = {AUDIT: "audit", PAYLOADS: "payloads", DL: "dead_letters"}
"""How each table's pruned rows are counted in health, status and /metrics."""


class Pruner:
    """One prune at a time, taken a chunk at a time; counts what it deleted."""

    def __init__(self, backend: SQLBackend, *, chunk: int = CHUNK) -> None:
        self.backend = backend
        self.chunk = chunk
        self.pruned: collections.Counter[str] = collections.Counter()
        """Rows deleted since start, by ``NAMES`` value."""
        self.last_at: float | None = None
        """When the last prune finished."""
        self._todo: list[str] = []
        self._run: collections.Counter[str] = collections.Counter()
        self._retention: Retention | None = None
        self._now = 0.0
        self._lock = threading.Lock()

    @property
    def pending(self) -> bool:
        """A prune was started and has chunks left."""
        return bool(self._todo)

    def start(self, retention: Retention) -> None:
        with self._lock:
            if not self._todo:
                self._todo = [AUDIT, PAYLOADS, DL]
                self._retention = retention
                self._now = time.time()

    def step(self) -> bool:
        """Delete until one statement deletes a whole chunk (more may be left) or the
        prune is done; True when done."""
        with self._lock:
            r = self._retention
            while self._todo and r is not None:
                table = self._todo[0]
                if table == DL:
                    n = self.backend.prune_dead_letters(
                        r.dead_letter_rows, self._now - r.dead_letter_age, limit=self.chunk)
                else:
                    n = self.backend.prune(table, r.audit_rows, self._now - r.audit_age,
                                           limit=self.chunk)
                self._run[NAMES[table]] += n
                self.pruned[NAMES[table]] += n
                if n >= self.chunk:
                    return False
                self._todo.pop(0)
            self._finish()
            return True

    def run(self, retention: Retention) -> None:
        """A whole prune, now, on this thread."""
        self.start(retention)
        while not self.step():
            pass

    def abandon(self) -> None:
        """Drop what is left of a prune that failed (the next one starts afresh)."""
        with self._lock:
            self._todo = []
            self._finish()

    def _finish(self) -> None:
        run, self._run = self._run, collections.Counter()
        self.last_at = time.time()
        if sum(run.values()):
            log.info("interlock store %s: pruned %d audit rows, %d payloads and %d resolved "
                     "dead letters (retention, docs/reliability.md)", self.backend.location,
                     run["audit"], run["payloads"], run["dead_letters"])
