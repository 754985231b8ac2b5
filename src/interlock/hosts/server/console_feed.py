"""The console's live feed: every gate decision a server makes, kept in memory.

:class:`DecisionFeed` is an engine sink (``Sink.dispatched``). It is called on
the dispatching thread, so it only appends the outcome to a bounded ring and
wakes the console's listeners; turning an outcome into the redacted record the
page shows happens later, once, when somebody asks for it. Observe events are
not decisions and are left out.

The feed also keeps, per hook, its recent latencies and failures (p50, p99 and
error rate on the hooks view) and, per agent (the ``platform`` field a bridge
sets), when it last called. Nothing here is durable: the audit store is the
record; the feed is what happened since the server started, capped.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from interlock.engine.catalog import Kind
from interlock.engine.redact import redact

if TYPE_CHECKING:
    from interlock.engine.outcome import Outcome
    from interlock.engine.sinks import FailureRecord

DEFAULT_CAPACITY = 10_000
LATENCY_SAMPLES = 512
"""Latencies kept per hook for its percentiles (the most recent ones)."""


@dataclass(slots=True)
class HookStats:
    """What the hooks view shows of one hook: recent latencies and failures."""

    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    calls: int = 0
    failures: int = 0

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {"calls": self.calls, "failures": self.failures,
                "error_rate": round(self.failures / self.calls, 4) if self.calls else 0.0,
                "p50_ms": _percentile(ordered, 0.50), "p99_ms": _percentile(ordered, 0.99)}


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


class _Item:
    """One decision in the ring; its row and its encoded row are built once, on first
    use, and shared by every viewer."""

    __slots__ = ("at", "encoded", "outcome", "row", "seq")

    def __init__(self, seq: int, at: float, outcome: Outcome) -> None:
        self.seq = seq
        self.at = at
        self.outcome = outcome
        self.row: dict[str, Any] | None = None
        self.encoded: bytes | None = None

    def as_row(self) -> dict[str, Any]:
        row = self.row
        if row is None:
            row = self.row = _row(self.seq, self.at, self.outcome)
        return row

    def as_bytes(self) -> bytes:
        encoded = self.encoded
        if encoded is None:
            import msgspec

            encoded = self.encoded = msgspec.json.encode(self.as_row())
        return encoded


class DecisionFeed:
    """A sink that keeps the last ``capacity`` gate decisions and wakes listeners."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._ring: deque[_Item] = deque(maxlen=capacity)
        self._seq = itertools.count(1)
        self._last = 0
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self.hooks: dict[str, HookStats] = {}
        self.agents: dict[str, float] = {}
        """platform -> Unix time of its last gate event."""

    # -- the sink -------------------------------------------------------------------
    def dispatched(self, outcome: Outcome) -> None:
        event = outcome.event
        if event is None or event.spec.kind is not Kind.GATE:
            return
        now = time.time()
        with self._lock:
            seq = next(self._seq)
            self._ring.append(_Item(seq, now, outcome))
            self._last = seq
            self.agents[getattr(event, "platform", "") or "api"] = now
            for hook, _decision, failure, latency_ns, _status in outcome.raw:
                stats = self.hooks.get(hook.qualified_name)
                if stats is None:
                    stats = self.hooks[hook.qualified_name] = HookStats()
                stats.calls += 1
                if failure is not None:
                    stats.failures += 1
                if latency_ns:
                    stats.latencies.append(latency_ns / 1e6)
            waiters = list(self._waiters)
        for loop, ready in waiters:
            try:
                loop.call_soon_threadsafe(ready.set)
            except RuntimeError:  # that listener's loop has closed
                self._waiters.discard((loop, ready))

    def failed(self, record: FailureRecord) -> None:
        """Failures reach the feed inside their outcome; the dead letters keep them."""

    # -- reading ----------------------------------------------------------------------
    @property
    def last(self) -> int:
        return self._last

    def record(self, seq: int) -> dict[str, Any] | None:
        """The full (redacted) record of decision ``seq``, if still in the ring."""
        with self._lock:
            found = next((i for i in reversed(self._ring) if i.seq == seq), None)
        return None if found is None else _record(found)

    def newer(self, after: int, limit: int = 1000) -> list[_Item]:
        """Decisions with ``seq > after``, oldest first (at most the newest ``limit``)."""
        out: list[_Item] = []
        with self._lock:
            for item in reversed(self._ring):
                if item.seq <= after or len(out) >= limit:
                    break
                out.append(item)
        out.reverse()
        return out

    def page(self, *, before: int | None = None, limit: int = 200,
             filters: Filters | None = None) -> list[dict[str, Any]]:
        """Rows newest first: those with ``seq < before`` that pass ``filters``."""
        with self._lock:
            items = list(reversed(self._ring))
        out: list[dict[str, Any]] = []
        for item in items:
            if before is not None and item.seq >= before:
                continue
            row = item.as_row()
            if filters is None or filters.keep(row):
                out.append(row)
                if len(out) >= limit:
                    break
        return out

    async def wait(self, after: int, seconds: float) -> bool:
        """Until a decision newer than ``after`` exists (True) or ``seconds`` pass."""
        if self._last > after:
            return True
        ready = asyncio.Event()
        key = (asyncio.get_running_loop(), ready)
        with self._lock:
            self._waiters.add(key)
        try:
            if self._last > after:
                return True
            try:
                async with asyncio.timeout(seconds):
                    await ready.wait()
            except TimeoutError:
                return False
            return True
        finally:
            with self._lock:
                self._waiters.discard(key)

    @property
    def listeners(self) -> int:
        return len(self._waiters)

    def hook_stats(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {name: stats.summary() for name, stats in self.hooks.items()}


def _row(seq: int, at: float, outcome: Outcome) -> dict[str, Any]:
    """What the list shows of a decision (redacted)."""
    event = outcome.event
    assert event is not None
    spec = event.spec
    subject = None
    if spec.subject:
        value = getattr(event, spec.subject, None)
        subject = redact(str(value)) if value is not None else None
    detail = _command_or_path(event)
    verdict = outcome.verdict.value
    if verdict == "none" and outcome.changes:
        verdict = "modify"
    total = sum(r.latency for r in outcome.raw) / 1e6 if outcome.raw else None
    return {
        "seq": seq, "at": at, "event": outcome.name,
        "tool": subject if spec.subject == "tool_name" else None,
        "subject": detail if detail is not None else subject,
        "verdict": verdict,
        "hook": outcome.hook.qualified_name if outcome.hook is not None else None,
        "reason": redact(outcome.reason) if outcome.reason else None,
        "latency_ms": round(total, 3) if total is not None else None,
        "session": getattr(event, "session_id", "") or "",
        "platform": getattr(event, "platform", "") or "",
    }


def _record(item: _Item) -> dict[str, Any]:
    """The full record: the row, each hook's part, the outcome and the payload."""
    outcome = item.outcome
    hooks = []
    for hook, decision, failure, latency_ns, status in outcome.raw:
        hooks.append({
            "hook": hook.qualified_name, "status": status.value,
            "verdict": decision.verdict.value if decision is not None else "none",
            "reason": redact(decision.reason) if decision is not None and decision.reason
            else None,
            "latency_ms": round(latency_ns / 1e6, 3) if latency_ns else None,
            "failure": failure.mode.value if failure is not None else None,
            "error": redact(str(failure)) if failure is not None else None})
    return {**item.as_row(), "hooks": hooks, "outcome": outcome.to_dict(outcome.event),
            "payload": _payload(outcome.event)}


def _command_or_path(event: Any) -> str | None:
    """What a person recognises a tool call by: its command, path or URL."""
    args = getattr(event, "args", None)
    if not isinstance(args, dict):
        return None
    for key in ("command", "path", "file_path", "url", "pattern", "query"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return redact(value[:500])
    return None


def _payload(event: Any) -> Any:
    import msgspec

    from interlock.engine.redact import redact_data

    return redact_data(msgspec.to_builtins(event))


class Filters:
    """The stream's filters: each given field must equal the row's (hook: the deciding
    hook; tool: the tool name; session: the session id)."""

    __slots__ = ("hook", "session", "tool", "verdict")

    def __init__(self, *, verdict: str | None = None, hook: str | None = None,
                 tool: str | None = None, session: str | None = None) -> None:
        self.verdict = verdict or None
        self.hook = hook or None
        self.tool = tool or None
        self.session = session or None

    @classmethod
    def of(cls, params: Any) -> Filters | None:
        made = cls(**{k: params.get(k) for k in cls.__slots__})
        return None if made.empty else made

    @property
    def empty(self) -> bool:
        return not (self.verdict or self.hook or self.tool or self.session)

    def keep(self, row: dict[str, Any]) -> bool:
        return ((self.verdict is None or row["verdict"] == self.verdict)
                and (self.hook is None or row["hook"] == self.hook)
                and (self.tool is None or row["tool"] == self.tool)
                and (self.session is None or row["session"] == self.session))

