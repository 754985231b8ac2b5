"""What the stores keep: dead letters, audit entries and breaker states.

Every string that came from a hook passes through :mod:`interlock.engine.redact`
here, on the writer's thread, before it reaches any backend.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from interlock.engine.redact import redact

if TYPE_CHECKING:
    from interlock.engine.outcome import Outcome
    from interlock.engine.sinks import FailureRecord
    from interlock.reliability import Breaker


class DeadLetter(msgspec.Struct, kw_only=True):
    """One hook failure, stored durably with a redacted error."""

    id: int = 0
    """Assigned by the store; 0 until written."""
    at: float
    """Unix time of the failure."""
    hook: str
    event: str
    subject: str | None
    session_id: str
    attempts: int
    mode: str
    """timeout, crash, contract, exhausted, dropped, breaker_open, ineligible, unapproved,
    drifted, unloadable."""
    contract_version: int
    invocation_id: str
    invocation_digest: str
    """Digest of the hook, event and payload: equal for repeats of the same call."""
    digest: str
    """The hook's definition digest."""
    error: str
    fail_closed: bool
    resolved_at: float | None = None
    resolved_by: str | None = None
    note: str | None = None

    @classmethod
    def from_failure(cls, record: FailureRecord) -> DeadLetter:
        return cls(
            at=record.at, hook=record.hook, event=record.event,
            subject=_clean(record.subject), session_id=record.session_id,
            attempts=record.attempts, mode=str(record.mode),
            contract_version=record.contract_version,
            invocation_id=record.invocation_id,
            invocation_digest=record.invocation_digest, digest=record.digest,
            error=redact(record.error), fail_closed=record.fail_closed,
        )


class AuditEntry(msgspec.Struct, kw_only=True):
    """One hook's decision in one dispatch."""

    id: int = 0
    at: float
    dispatch_id: str
    """Shared by every entry of one dispatch."""
    session_id: str
    event: str
    subject: str | None
    hook: str
    verdict: str
    """What this hook answered: block, modify, ..., or none (a fail-closed failure reads block)."""
    status: str
    """applied, superseded, none, failed, shadow, cancelled, ignored, queued."""
    reason: str | None
    latency_ms: float | None
    revision: int
    outcome: str
    """The dispatch's merged decision."""
    failure: str | None = None
    error: str | None = None


class BreakerRecord(msgspec.Struct, kw_only=True):
    """The last known state of one breaker (for `interlock status`)."""

    hook: str
    digest: str
    state: str
    failures: int
    opens: int
    updated_at: float
    retry_at: float | None
    """Unix time of the next probe when open."""


def _clean(text: str | None) -> str | None:
    return None if text is None else redact(text)


def audit_rows(outcome: Outcome, at: float, dispatch_id: str,
               names: dict[Any, str]) -> list[tuple[Any, ...]]:
    """One row per hook in ``outcome`` (columns in ``AUDIT_COLS`` order), redacted.

    Built straight from ``outcome.raw`` on the writer thread: no intermediate
    records, and ``names`` caches each hook's qualified name.
    """
    event = outcome.event
    session_id = event.session_id if event is not None else ""
    subject = None
    if event is not None and event.spec.subject:
        value = getattr(event, event.spec.subject, None)
        subject = _clean(str(value)) if value is not None else None
    verdict = outcome.verdict.value
    if verdict == "none" and outcome.changes:
        verdict = "modify"
    name = outcome.name
    revision = outcome.revision
    rows = []
    for hook, decision, failure, latency_ns, status in outcome.raw:
        qualified = names.get(hook)
        if qualified is None:
            qualified = names[hook] = hook.qualified_name
        if decision is not None:
            hook_verdict = decision.verdict.value
            reason = decision.reason
            if reason:
                reason = redact(reason)
        else:
            hook_verdict, reason = "none", None
        rows.append((
            at, dispatch_id, session_id, name, subject, qualified, hook_verdict,
            status.value, reason, round(latency_ns / 1e6, 4) if latency_ns else None,
            revision, verdict,
            failure.mode.value if failure is not None else None,
            redact(str(failure)) if failure is not None else None,
        ))
    return rows


def breaker_record(breaker: Breaker, now_wall: float, now_mono: float) -> BreakerRecord:
    wait = breaker.retry_in(now_mono)
    return BreakerRecord(
        hook=breaker.key.hook, digest=breaker.key.digest, state=str(breaker.state),
        failures=breaker.failures, opens=breaker.opens, updated_at=now_wall,
        retry_at=now_wall + wait if breaker.state == "open" else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditQuery:
    """Filters for the audit log; every one given must hold."""

    session: str | None = None
    hook: str | None = None
    """A qualified name (``project:guard``) or a bare name (``guard``, any source)."""
    verdict: str | None = None
    event: str | None = None
    since: float | None = None
    """Unix time, inclusive."""
    until: float | None = None
    """Unix time, exclusive."""
    limit: int = 100
    """The newest ``limit`` entries (returned oldest first); 0 for all."""
    after: int | None = None
    """Only entries written after the one with this ``id`` (``audit --follow``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Retention:
    """How much the stores keep. Pruning runs on open and every ``every`` seconds.

    Dead letters: pruning removes only resolved ones (past ``dead_letter_age``,
    then the oldest past ``dead_letter_rows``); an unresolved one stays until an
    operator resolves it. A flood is bounded by ``dead_letters_per_key``.
    """

    audit_rows: int = 1_000_000
    audit_age: float = 30 * 86400
    dead_letter_rows: int = 100_000
    dead_letter_age: float = 90 * 86400
    dead_letters_per_key: int = 1000
    """Unresolved dead letters kept per hook and failure mode; past that, further
    failures of that kind are only counted (status: ``dead_letter_overflow``)."""
    every: float = 300.0


def now() -> float:
    return time.time()


def as_dicts(rows: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = msgspec.to_builtins(rows)
    return out
