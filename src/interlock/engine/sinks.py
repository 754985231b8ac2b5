"""Sinks: where audit records and failures go (audit log, dead letters, metrics)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from interlock.engine.errors import FailureMode

if TYPE_CHECKING:
    from interlock.engine.outcome import Outcome


class FailureRecord(msgspec.Struct, kw_only=True):
    """One hook failure that the dispatcher isolated (a dead letter to be)."""

    hook: str
    event: str
    session_id: str
    subject: str | None
    mode: FailureMode
    error: str
    attempts: int = 1
    invocation_id: str = ""
    digest: str = ""
    """The hook's definition digest."""
    invocation_digest: str = ""
    """Digest of what the hook was asked (hook, event, payload): equal for retries
    and replays of the same call, so duplicates can be found."""
    fail_closed: bool = True
    contract_version: int = 1
    at: float = msgspec.field(default_factory=time.time)


class Sink(Protocol):
    """Receives every dispatch's outcome and every isolated failure.

    Called on the dispatching thread, so implementations must be quick: batch
    and write elsewhere.
    """

    def dispatched(self, outcome: Outcome) -> None: ...

    def failed(self, record: FailureRecord) -> None: ...


def invocation_digest(hook: str, event: Any) -> str:
    """A short stable digest of one hook's invocation (its hook, event and payload)."""
    import hashlib  # failures only: loading the engine needs no OpenSSL

    body = msgspec.json.encode([hook, event.name, event])
    return hashlib.blake2b(body, digest_size=12).hexdigest()
