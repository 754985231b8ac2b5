"""The store: a backend plus one writer thread that batches every write.

Sinks hand records over with a ``deque.append`` (tens of nanoseconds on the
dispatching thread). The writer wakes every ``interval`` seconds, or sooner
when a batch is full, turns what it took into rows (redacting them), and
writes them in one transaction. A record is *acknowledged* once that
transaction has committed: :meth:`Store.flush` returns only then.

A write that fails (disk full, database down) keeps its batch and retries it
with backoff; nothing is acknowledged until it lands.

:meth:`Store.health` reads only what the writer keeps in memory (backlog,
oldest unwritten record, write errors, last commit, unresolved dead letters
per hook), so `/v1/status` and `/metrics` never wait on the database.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from interlock.engine.logs import logger
from interlock.engine.redact import redact
from interlock.store._prune import CHUNK, NAMES, Pruner
from interlock.store._records import (
    AuditEntry,
    AuditQuery,
    BreakerRecord,
    DeadLetter,
    Retention,
    audit_rows,
    breaker_record,
)
from interlock.store._sql import SQLBackend

if TYPE_CHECKING:
    import asyncio

    from interlock.engine.outcome import Outcome
    from interlock.engine.sinks import FailureRecord
    from interlock.reliability import Breaker, BreakerBook, BreakerState

log = logger("interlock")

_OUTCOME, _FAILURE, _BREAKER, _ACTION = 0, 1, 2, 3

MAX_PAYLOAD = 1 << 20
"""Characters of one kept payload (``audit_payloads``); a larger one is not kept."""

ISOLATE_AFTER = 3
"""Failed writes of one batch after which it is written record by record, to find
one that no retry can write (a failure of that kind isolates at once)."""

STORE_HOOK, UNWRITABLE = "interlock:store", "unwritable"
"""The dead letter that keeps a record no retry can write."""

STALE_AFTER = 10.0
"""Seconds the oldest unwritten record may wait before the store reads unhealthy
(in fast audit; in strict, ``STRICT_WAIT``)."""

STRICT_WAIT = 5.0
"""Seconds a strict answer waits for its commit before it is refused (a 503)."""


class Store:
    """Dead letters, the audit log and breaker states, on one backend."""

    def __init__(self, backend: SQLBackend, *, interval: float = 0.05, max_batch: int = 5000,
                 max_pending: int = 1_000_000, retention: Retention | None = None,
                 prune_chunk: int = CHUNK) -> None:
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
        self._closed = threading.Event()  # set by close(); cuts a retry's backoff short
        self.dropped = 0
        """Records refused because ``max_pending`` were already waiting (logged)."""
        self.write_errors = 0
        """Failed write attempts so far (each is retried)."""
        self.failing = False
        """True while the last write attempt failed."""
        self.refused = 0
        """Strict answers refused because their records did not commit in time."""
        self.refused_at: float | None = None
        self.unwritable = 0
        """Records no retry could write, set aside as dead letters of ``interlock:store``."""
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.last_commit_at: float | None = None
        self.audit_mode = "fast"
        """``strict`` when answers wait for :meth:`settled` (set by the server)."""
        self.audit_payloads = False
        """True: each gate event's payload is kept too (redacted), for `interlock policy
        diff --audit` (set by the server's ``--audit-payloads``)."""
        self._inflight: list[tuple[int, Any, float]] = []
        self._waiters: list[tuple[int, asyncio.Future[bool]]] = []
        self._counts_lock = threading.Lock()
        self._unresolved: collections.Counter[tuple[str, str]] = collections.Counter(
            backend.unresolved_by_key())
        self._overflow: collections.Counter[tuple[str, str]] = collections.Counter(
            {(h, m): n for h, m, n, _, _ in backend.overflow()})
        self._ids = itertools.count(1)
        self._prefix = os.urandom(4).hex()
        self._next_prune = 0.0
        self._pruner = Pruner(backend, chunk=prune_chunk)
        self._names: dict[Any, str] = {}
        self._thread = threading.Thread(target=self._run, name="interlock-store", daemon=True)
        self._thread.start()

    @property
    def location(self) -> str:
        return self.backend.location

    def health(self) -> dict[str, Any]:
        """The store's health, from memory only (never waits on the database).

        ``ok`` is False while writes fail, when the oldest unwritten record is
        older than ``STALE_AFTER`` seconds, or once records were refused; the
        reasons are in ``problems``.
        """
        now = time.time()
        inflight, queue = self._inflight, self._queue
        oldest: float | None = None
        with contextlib.suppress(IndexError):  # the writer may take them meanwhile
            oldest = inflight[0][2] if inflight else queue[0][2]
        backlog = len(inflight) + len(queue)
        age = round(now - oldest, 3) if oldest is not None and backlog else 0.0
        problems = []
        moved = self.backend.file_problem()
        if moved is not None and not (self.failing and self.last_error == moved):
            problems.append(moved)
        if self.failing:
            problems.append(f"writes are failing: {self.last_error}")
        # In strict audit, unhealthy as soon as answers would be refused.
        stale = STRICT_WAIT if self.audit_mode == "strict" else STALE_AFTER
        if age > stale:
            problems.append(f"the oldest unwritten record is {age:.0f} s old")
        refused_at = self.refused_at
        if refused_at is not None and (self.last_commit_at or 0.0) < refused_at:
            problems.append(f"strict audit refused {self.refused} answer(s) since the "
                            "last commit: the store did not commit within "
                            f"{STRICT_WAIT:.0f} s")
        if self.dropped:
            problems.append(f"{self.dropped} records were refused: the backlog was full")
        with self._counts_lock:
            unresolved = sum(self._unresolved.values())
            overflow = [{"hook": h, "mode": m, "count": n}
                        for (h, m), n in sorted(self._overflow.items()) if n]
        return {
            "ok": not problems, "problems": problems, "backend": self.backend.name,
            "location": self.location, "backlog": backlog, "oldest_unwritten_age_s": age,
            "write_errors": self.write_errors, "failing": self.failing,
            "last_error": self.last_error, "last_error_at": self.last_error_at,
            "last_commit_at": self.last_commit_at,
            "last_commit_age_s": (round(now - self.last_commit_at, 3)
                                  if self.last_commit_at is not None else None),
            "dropped": self.dropped, "unwritable": self.unwritable,
            "refused": self.refused,
            "pruned": {n: self._pruner.pruned[n] for n in NAMES.values()},
            "last_prune_at": self._pruner.last_at,
            "unresolved_dead_letters": unresolved,
            "dead_letter_overflow": overflow, "audit": self.audit_mode,
        }

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

    @property
    def dispatch_prefix(self) -> str:
        """The start of every ``dispatch_id`` this store writes (``PREFIX-N``): tells one
        process's audit rows from another's (docs/fleet.md joins it to the revisions)."""
        return self._prefix

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

    async def settled(self, within: float = STRICT_WAIT) -> bool:
        """Wait, without blocking the event loop, until everything submitted so far
        has committed; False after ``within`` seconds. What strict audit (docs/reliability.md)
        awaits before an answer leaves."""
        import asyncio  # the async hosts' path: they have imported it already

        seq = self._last_submitted
        if self._committed >= seq:
            return True
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        with self._cond:
            if self._committed >= seq:
                return True
            self._waiters.append((seq, future))
        self._wake.set()  # commit now: a waiting answer is worth a batch of its own
        try:
            async with asyncio.timeout(within):
                return await asyncio.shield(future)
        except TimeoutError:
            self.refused += 1
            self.refused_at = time.time()
            return False

    def _release(self) -> None:
        """Wake the :meth:`settled` waiters whose records have committed (holding _cond)."""
        done = [w for w in self._waiters if w[0] <= self._committed]
        if not done:
            return
        self._waiters = [w for w in self._waiters if w[0] > self._committed]
        for _, future in done:
            with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits
                future.get_loop().call_soon_threadsafe(_resolve, future)

    def close(self, timeout: float = 30.0) -> bool:
        """Flush (with a deadline), stop the writer and close the backend. A store whose
        file was deleted or replaced takes nothing more until a restart, so closing
        does not wait for it (docs/reliability.md, "The store")."""
        ok = self.flush(0 if self.backend.file_problem() else timeout)
        self._closed.set()
        self._wake.set()
        self._thread.join(timeout)
        self.backend.close()
        left = self.backlog
        if left:  # the last word on them: never a silent "will retry" at exit
            log.error("interlock store: %d records not written to %s: it did not commit "
                      "them before shutdown (%s); they are lost", left, self.location,
                      self.last_error or f"no answer within {timeout:.0f} s")
        return ok and not left

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the writer thread ----------------------------------------------------------
    def _run(self) -> None:
        pending: list[tuple[int, Any, float]] = []
        taken = 0  # records taken off the queue: all of them are settled once pending is
        failures = 0  # consecutive failed writes of this batch
        backoff = 0.1
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            closing = self._closed.is_set()
            if not closing:
                self._prune_some()
            queue = self._queue
            while queue and len(pending) < self.max_batch:
                pending.append(queue.popleft())
                taken += 1
            self._inflight = pending
            if pending:
                permanent = False
                try:
                    added, over = self._write(pending)
                except Exception as exc:
                    self._failed(exc, len(pending))
                    permanent = self.backend.permanent(exc)
                    failures += 1
                else:
                    failures = 0
                    self._count(added, over)
                    pending = []
                if failures:
                    # Outside the except: its traceback would keep the failed statement,
                    # and with it the dropped connection, alive through the backoff.
                    if closing:
                        return
                    if permanent or failures % ISOLATE_AFTER == 0:
                        pending = self._isolate(pending)
                    if pending:
                        self._closed.wait(backoff)
                        backoff = min(backoff * 2, 5.0)
                        continue
                    failures = 0
                backoff = 0.1
                self._settle(taken)
                self._inflight = pending
                if queue:
                    self._wake.set()  # more waiting: don't sleep on it
                    continue
            if closing and not queue:
                return

    def _count(self, added: collections.Counter[tuple[str, str]],
               over: collections.Counter[tuple[str, str]]) -> None:
        with self._counts_lock:
            self._unresolved.update(added)
            self._overflow.update(over)

    def _settle(self, upto: int) -> None:
        """Every record up to ``upto`` (in submission order) is written or set aside."""
        self.failing = False
        self.last_commit_at = time.time()
        with self._cond:
            self._committed = upto
            self._cond.notify_all()
            if self._waiters:
                self._release()

    def _isolate(self, pending: list[tuple[int, Any, float]]) -> list[tuple[int, Any, float]]:
        """Write a failing batch one record at a time: a record that fails alone for a
        reason no retry can fix (``backend.permanent``) is set aside as a dead letter;
        the others commit. Returns what is left to retry, from the first record that
        failed for another reason (an outage: the rest would fail alike)."""
        for i, item in enumerate(pending):
            try:
                self._count(*self._write([item]))
            except Exception as exc:
                if not self.backend.permanent(exc):
                    return pending[i:]
                why = _safe(f"{type(exc).__name__}: {exc}")
            else:
                continue
            if not self._set_aside(item, why):
                return pending[i:]  # neither written nor kept: it waits, as in an outage
        return []

    def _set_aside(self, item: tuple[int, Any, float], why: str) -> bool:
        """Keep a record no retry can write as a dead letter of ``interlock:store``
        naming what it was (docs/reliability.md, "Storage"); never drop it silently.
        Past ``retention.dead_letters_per_key`` such letters are counted, not stored,
        like any hook's. False when it could not be kept either."""
        kind, record, at = item
        what = _describe(kind, record)
        key = (STORE_HOOK, UNWRITABLE)
        with self._counts_lock:
            full = self._unresolved[key] >= self.retention.dead_letters_per_key
        letter = DeadLetter(
            at=at, hook=STORE_HOOK, event=_safe(getattr(record, "name", "")) or "store",
            subject=None, session_id=_safe(str(getattr(getattr(record, "event", None),
                                                       "session_id", "") or "")),
            attempts=1, mode=UNWRITABLE, contract_version=0, invocation_id="",
            invocation_digest="", digest="", error=redact(f"not written: {why}; {what}"),
            fail_closed=False)
        try:
            self.backend.write([], [] if full else [letter], [],
                               [(*key, 1, at, at)] if full else [])
        except Exception as exc:
            log.error("interlock store %s: a record no retry can write could not be kept "
                      "as a dead letter either, so it waits: %s", self.location,
                      redact(_safe(str(exc))))
            return False
        one = collections.Counter({key: 1})
        self._count(*((collections.Counter(), one) if full else (one, collections.Counter())))
        self.unwritable += 1
        log.error("interlock store %s: a record no retry can write is set aside as a dead "
                  "letter of interlock:store (%s): %s", self.location, why, what)
        return True

    def _failed(self, exc: Exception, count: int) -> None:
        self.write_errors += 1
        self.failing = True
        self.last_error = redact(_safe(str(exc)))[:500]
        self.last_error_at = time.time()
        log.error("interlock store %s: write of %d records failed, will retry: %s",
                  self.location, count, self.last_error)

    def _write(self, items: list[tuple[int, Any, float]]) -> tuple[
            collections.Counter[tuple[str, str]], collections.Counter[tuple[str, str]]]:
        """Write one batch; returns the dead letters it stored and those it only
        counted (past ``retention.dead_letters_per_key``), by (hook, mode)."""
        added: collections.Counter[tuple[str, str]] = collections.Counter()
        over: collections.Counter[tuple[str, str]] = collections.Counter()
        spans: dict[tuple[str, str], tuple[float, float]] = {}
        cap = self.retention.dead_letters_per_key
        with self._counts_lock:
            stored = collections.Counter(self._unresolved)
        audit: list[tuple[Any, ...]] = []
        names = self._names
        if len(names) > 10_000:  # hooks come and go with reloads
            names.clear()
        letters: list[DeadLetter] = []
        breakers: list[BreakerRecord] = []
        payloads: list[tuple[Any, ...]] = []
        keep = self.audit_payloads
        for kind, item, at in items:
            if kind == _OUTCOME:
                dispatch = f"{self._prefix}-{next(self._ids)}"
                audit.extend(audit_rows(item, at, dispatch, names))
                if keep and item.event is not None and item.event.spec.kind.value != "observe":
                    row = payload_row(item.event, at, dispatch)
                    if len(row[3]) <= MAX_PAYLOAD:  # a whole conversation is not kept
                        payloads.append(row)
            elif kind == _FAILURE:
                key = (item.hook, str(item.mode))
                if stored[key] + added[key] >= cap:
                    # A flood: the first `cap` tell the story; the rest are counted.
                    over[key] += 1
                    first, _ = spans.get(key, (item.at, item.at))
                    spans[key] = (first, item.at)
                    continue
                letters.append(DeadLetter.from_failure(item))
                added[key] += 1
            elif kind == _ACTION:
                audit.append(item)
            else:
                breakers.append(item)
        overflow = [(h, m, n, *spans[(h, m)]) for (h, m), n in over.items()]
        self.backend.write(audit, letters, breakers, overflow, payloads)
        return added, over

    def _prune_some(self) -> None:
        """Start a prune when one is due, and go on with it by one chunk; the batch
        that follows commits before the next chunk (docs/reliability.md, "Stalls").
        The first prune after open is done whole, before anyone's first write commits
        and they go on."""
        pruner = self._pruner
        if time.monotonic() >= self._next_prune:
            self._next_prune = time.monotonic() + self.retention.every
            pruner.start(self.retention)
        if not pruner.pending:
            return
        first = pruner.last_at is None
        try:
            while not pruner.step():
                if not first:
                    self._wake.set()  # more to delete: after the next batch
                    return
            # Other processes (the CLI, other servers on one PostgreSQL) resolve too.
            counts = self.backend.unresolved_by_key()
            with self._counts_lock:
                self._unresolved = collections.Counter(counts)
        except Exception as exc:
            pruner.abandon()
            log.error("interlock store %s: pruning failed: %s", self.location, redact(str(exc)))

    # -- reading (any thread) ---------------------------------------------------------
    def audit(self, query: AuditQuery | None = None) -> list[AuditEntry]:
        return self.backend.audit(query or AuditQuery())

    def dead_letters(self, *, unresolved: bool = False, hook: str | None = None,
                     limit: int = 100, before: int | None = None) -> list[DeadLetter]:
        """The newest ``limit`` dead letters (oldest first), with ids below ``before``
        when given: pass the smallest id of one page to get the next."""
        return self.backend.dead_letters(unresolved=unresolved, hook=hook, limit=limit,
                                         before=before)

    def resolve(self, ident: int, *, by: str | None = None, note: str | None = None) -> bool:
        """Mark dead letter ``ident`` operator-resolved; it is kept. False if unknown
        or already resolved."""
        who = by or os.environ.get("USER") or "operator"
        key = self.backend.resolve(ident, by=who, note=redact(note) if note else None,
                                   at=time.time())
        if key is None:
            return False
        with self._counts_lock:
            if self._unresolved[key] > 0:
                self._unresolved[key] -= 1
        return True

    def counts(self) -> dict[str, int]:
        return self.backend.counts()

    def unresolved_by_hook(self) -> dict[str, int]:
        """Unresolved dead letters per hook, as committed (kept in memory: no query)."""
        out: dict[str, int] = {}
        with self._counts_lock:
            for (hook, _mode), n in self._unresolved.items():
                if n:
                    out[hook] = out.get(hook, 0) + n
        return out

    def breakers(self) -> list[BreakerRecord]:
        return self.backend.breakers()

    def prune(self) -> None:
        """Prune now, on this thread (it also happens on its own every
        ``retention.every`` seconds, on the writer's)."""
        self.flush()
        self._pruner.run(self.retention)

    def payloads(self, since: float, limit: int = 1000) -> list[tuple[float, str, str, str]]:
        """Kept gate-event payloads since ``since`` (newest ``limit``, oldest first)."""
        return self.backend.payloads(since, limit)

    def gate_dispatches(self, since: float) -> int:
        """Dispatches of gate events audited since ``since``, with a payload or not."""
        from interlock.engine.catalog import SPECS, Kind

        gates = [s.name for s in SPECS if s.kind is not Kind.OBSERVE]
        return self.backend.gate_dispatches(since, gates)


def payload_row(event: Any, at: float, dispatch: str) -> tuple[Any, ...]:
    """(at, dispatch_id, event, payload JSON) of a gate event, its strings redacted as
    transcripts are."""
    import json

    from interlock.engine.redact import redact_data

    return (at, dispatch, event.name, json.dumps(redact_data(event.to_dict()), default=str))


def _safe(text: str) -> str:
    """``text`` as any backend can store it: no NUL, no lone surrogate."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def _describe(kind: int, record: Any) -> str:
    """One line saying what a record set aside was."""
    if kind == _OUTCOME:
        event = record.event
        session = event.session_id if event is not None else ""
        return _safe(f"the audit of one {record.name} dispatch (session {session!r}, "
                     f"outcome {record.verdict.value})")
    return _safe(f"{('audit', 'dead letter', 'breaker state', 'operator action')[kind]} "
                 f"{record!r}"[:2000])


def _resolve(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(True)
