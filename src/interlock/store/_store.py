"""The store: a backend plus one writer thread that batches every write.

Sinks hand records over with a ``deque.append`` (tens of nanoseconds on the
dispatching thread). The writer wakes every ``interval`` seconds, or sooner
when a batch is full, turns what it took into rows (redacting them), and
writes them in one transaction. A record is *acknowledged* once that
transaction has committed: :meth:`Store.flush` returns only then.

A write that fails (disk full, database down) keeps its batch and retries it
with backoff; nothing is acknowledged until it lands.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from interlock.redact import redact
from interlock.store._records import (
    AuditEntry,
    AuditQuery,
    BreakerRecord,
    DeadLetter,
    Retention,
    audit_rows,
    breaker_record,
)
from interlock.store._sql import AUDIT, DL, SQLBackend

if TYPE_CHECKING:
    from interlock._outcome import Outcome
    from interlock._sinks import FailureRecord
    from interlock.reliability import Breaker, BreakerBook, BreakerState

log = logging.getLogger("interlock")

_OUTCOME, _FAILURE, _BREAKER, _ACTION = 0, 1, 2, 3


class Store:
    """Dead letters, the audit log and breaker states, on one backend."""

    def __init__(self, backend: SQLBackend, *, interval: float = 0.05, max_batch: int = 5000,
                 max_pending: int = 1_000_000, retention: Retention | None = None) -> None:
        self.backend = backend
        self.interval = interval
        self.max_batch = max_batch
        self.max_pending = max_pending
        self.retention = retention or Retention()
        self._queue: collections.deque[tuple[int, Any, float]] = collections.deque()
        self._submitted = itertools.count(1)
        self._last_submitted = 0
        self._committed = 0
        self._cond = threading.Condition()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self.dropped = 0
        """Records refused because ``max_pending`` were already waiting (logged)."""
        self.write_errors = 0
        self._ids = itertools.count(1)
        self._prefix = os.urandom(4).hex()
        self._next_prune = 0.0
        self._names: dict[Any, str] = {}
        self._thread = threading.Thread(target=self._run, name="interlock-store", daemon=True)
        self._thread.start()

    @property
    def location(self) -> str:
        return self.backend.location

    # -- submitting (any thread; quick) -----------------------------------------
    def _submit(self, kind: int, item: Any) -> int:
        if len(self._queue) >= self.max_pending:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 10_000 == 0:
                log.error("interlock store %s is %d records behind; %d refused so far",
                          self.location, len(self._queue), self.dropped)
            return 0
        with self._lock:  # sequence and queue order must agree for flush() to be exact
            seq = next(self._submitted)
            self._queue.append((kind, item, time.time()))
            self._last_submitted = seq
        if len(self._queue) >= self.max_batch:
            self._wake.set()
        return seq

    def submit_outcome(self, outcome: Outcome) -> int:
        """Queue the audit entries of one dispatch; returns its sequence number."""
        return self._submit(_OUTCOME, outcome)

    def submit_failure(self, record: FailureRecord) -> int:
        """Queue one dead letter; returns its sequence number."""
        return self._submit(_FAILURE, record)

    def submit_action(self, *, who: str, action: str, target: str,
                      note: str | None = None) -> int:
        """Queue an operator's action (an approval, a resolve, ...) as an audit row:
        event ``operator_action``, hook = who did it, verdict = the action, subject =
        what it was done to, reason = the note."""
        at = time.time()
        return self._submit(_ACTION, (at, f"{self._prefix}-op-{next(self._ids)}", "",
                                      "operator_action", redact(target), redact(who), action,
                                      "ok", redact(note) if note else None, None, 0, action,
                                      None, None))

    @property
    def backlog(self) -> int:
        """Records submitted but not yet committed."""
        return self._last_submitted - self._committed

    def submit_breaker(self, breaker: Breaker, now_mono: float) -> int:
        return self._submit(_BREAKER, breaker_record(breaker, time.time(), now_mono))

    def watch(self, book: BreakerBook) -> None:
        """Record every breaker state change of ``book`` (for `interlock status`)."""
        def changed(breaker: Breaker, old: BreakerState, new: BreakerState) -> None:
            self.submit_breaker(breaker, book.clock.now())

        book.listen(changed)

    # -- acknowledging ----------------------------------------------------------
    @property
    def acknowledged(self) -> int:
        """Sequence number up to which every submitted record has committed."""
        return self._committed

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until everything submitted so far has committed; False on timeout."""
        return self.wait(self._last_submitted, timeout)

    def wait(self, seq: int, timeout: float | None = 30.0) -> bool:
        """Wait until record ``seq`` (what ``submit_*`` returned) has committed."""
        if self._committed >= seq:
            return True
        self._wake.set()
        with self._cond:
            return self._cond.wait_for(lambda: self._committed >= seq, timeout)

    def close(self, timeout: float = 30.0) -> bool:
        """Flush (with a deadline), stop the writer and close the backend."""
        ok = self.flush(timeout)
        self._closed = True
        self._wake.set()
        self._thread.join(timeout)
        self.backend.close()
        return ok

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the writer thread ----------------------------------------------------------
    def _run(self) -> None:
        pending: list[tuple[int, Any, float]] = []
        backoff = 0.1
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            closing = self._closed
            queue = self._queue
            while queue and len(pending) < self.max_batch:
                pending.append(queue.popleft())
            if pending:
                try:
                    self._write(pending)
                except Exception as exc:
                    self.write_errors += 1
                    log.error("interlock store %s: write of %d records failed, will retry: %s",
                              self.location, len(pending), redact(str(exc)))
                    if closing:
                        return
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
                    continue
                backoff = 0.1
                with self._cond:
                    self._committed += len(pending)
                    self._cond.notify_all()
                pending = []
                if queue:
                    self._wake.set()  # more waiting: don't sleep on it
                    continue
            if closing and not queue:
                return
            if time.monotonic() >= self._next_prune:
                self._prune()

    def _write(self, items: list[tuple[int, Any, float]]) -> None:
        audit: list[tuple[Any, ...]] = []
        names = self._names
        if len(names) > 10_000:  # hooks come and go with reloads
            names.clear()
        letters: list[DeadLetter] = []
        breakers: list[BreakerRecord] = []
        for kind, item, at in items:
            if kind == _OUTCOME:
                audit.extend(audit_rows(item, at, f"{self._prefix}-{next(self._ids)}", names))
            elif kind == _FAILURE:
                letters.append(DeadLetter.from_failure(item))
            elif kind == _ACTION:
                audit.append(item)
            else:
                breakers.append(item)
        self.backend.write(audit, letters, breakers)

    def _prune(self) -> None:
        r = self.retention
        self._next_prune = time.monotonic() + r.every
        now = time.time()
        try:
            self.backend.prune(AUDIT, r.audit_rows, now - r.audit_age)
            self.backend.prune(DL, r.dead_letter_rows, now - r.dead_letter_age)
        except Exception as exc:
            log.error("interlock store %s: pruning failed: %s", self.location, redact(str(exc)))

    # -- reading (any thread) ---------------------------------------------------------
    def audit(self, query: AuditQuery | None = None) -> list[AuditEntry]:
        return self.backend.audit(query or AuditQuery())

    def dead_letters(self, *, unresolved: bool = False, hook: str | None = None,
                     limit: int = 100) -> list[DeadLetter]:
        return self.backend.dead_letters(unresolved=unresolved, hook=hook, limit=limit)

    def resolve(self, ident: int, *, by: str | None = None, note: str | None = None) -> bool:
        """Mark dead letter ``ident`` operator-resolved; it is kept. False if unknown
        or already resolved."""
        who = by or os.environ.get("USER") or "operator"
        return self.backend.resolve(ident, by=who, note=redact(note) if note else None,
                                    at=time.time())

    def counts(self) -> dict[str, int]:
        return self.backend.counts()

    def unresolved_by_hook(self) -> dict[str, int]:
        return self.backend.unresolved_by_hook()

    def breakers(self) -> list[BreakerRecord]:
        return self.backend.breakers()

    def prune(self) -> None:
        """Prune now (it also happens on its own every ``retention.every`` seconds)."""
        self.flush()
        r = self.retention
        now = time.time()
        self.backend.prune(AUDIT, r.audit_rows, now - r.audit_age)
        self.backend.prune(DL, r.dead_letter_rows, now - r.dead_letter_age)
