"""The merged outcome of one dispatch, and its one JSON shape.

``hooks test --json``, ``POST /v1/events/{event}`` and the audit log all use
:class:`OutcomeRecord` (``Outcome.to_record()``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import msgspec

from interlock.engine.decisions import RANK, Decision, Verdict
from interlock.engine.redact import redact

if TYPE_CHECKING:
    from interlock.engine.errors import HookFailure
    from interlock.engine.events import Event
    from interlock.engine.hooks import Hook


class Status(enum.StrEnum):
    """What became of one hook's answer."""

    APPLIED = "applied"
    """It decided the outcome, or its change/context was applied."""
    SUPERSEDED = "superseded"
    """A stronger (or earlier equal) decision won."""
    NONE = "none"
    """No opinion."""
    FAILED = "failed"
    """It failed; its on_error decided what that meant."""
    SHADOW = "shadow"
    """Shadow mode: audited, never applied."""
    CANCELLED = "cancelled"
    """The event ended before it answered."""
    IGNORED = "ignored"
    """Not an effect: a decision on an observe event (a warning), or a stop
    hook's block that the stop-loop cap turned into no opinion."""
    QUEUED = "queued"
    """A background hook, handed to its queue."""


class HookRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One hook's part in a dispatch."""

    hook: str
    """Qualified name, ``source:name``."""
    verdict: str
    """block, modify, approve, ... or none."""
    status: Status
    latency_ms: float | None
    """None when hooks were not timed (no sink attached; see Engine(timed=...))."""
    reason: str | None = None
    failure: str | None = None
    """Failure mode (timeout, crash, contract, ...) when it failed."""
    error: str | None = None
    """What went wrong, when it failed."""


class ContextItem(msgspec.Struct, kw_only=True):
    hook: str
    text: str


class OutcomeRecord(msgspec.Struct, kw_only=True):
    """The one JSON shape of an outcome."""

    event: str
    decision: str
    """The merged decision: stop, block, skip, respond, retry, ask, approve, modify or none."""
    reason: str | None
    hint: str | None
    hook: str | None
    """The hook whose decision won, if any."""
    changes: dict[str, Any]
    """Fields changed by modifiers, with their final values."""
    value: Any
    """respond's value."""
    context: list[ContextItem]
    hooks: list[HookRecord]
    session_id: str
    revision: int
    capped: bool = False
    """True when the stop-loop cap turned a block into no opinion."""


class HookResult(msgspec.Struct):
    """One hook's part in a dispatch, as the dispatcher records it.

    A ``msgspec.Struct`` (built positionally, ~65 ns) because every hook that
    runs makes one. It still unpacks as ``hook, decision, failure, latency,
    status`` for code written against the tuple it replaced. Results are
    equal when their fields are, whichever kind of result they are.
    """

    hook: Hook
    decision: Decision | None
    """What counts: its answer, or the block its failure means when it fails closed."""
    failure: HookFailure | None
    latency: int
    """Nanoseconds; 0 when hooks were not timed."""
    status: Status

    def __iter__(self) -> Iterator[Any]:
        return iter((self.hook, self.decision, self.failure, self.latency, self.status))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HookResult):
            return NotImplemented
        return tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # mutable: status is set by the merge


class FailedResult(HookResult):
    """The result of a hook that failed.

    It keeps the failure's message and mode, not its traceback or the
    exceptions chained to it. A traceback holds the frames of the dispatch,
    which hold the results, which hold the failure: a cycle that the
    untracked parts of a dispatch (runs, events) would hide from the
    garbage collector, so every failed hook would leak its frames, events
    and answers for good. Nothing reads a stored failure's traceback (the
    crash site is taken when the failure is made).
    """

    def __post_init__(self) -> None:
        detach(self.failure)


def detach(failure: BaseException | None) -> None:
    """Drop ``failure``'s traceback and what it was raised from or during.

    Only the failure itself is changed: an exception it was chained to may
    be the host's own, still being handled, and keeps its traceback.
    """
    if failure is not None:
        failure.__traceback__ = None
        failure.__cause__ = failure.__context__ = None


class Quiet(HookResult, frozen=True):  # type: ignore[misc]  # msgspec allows it
    """The result of a hook that had no opinion, made once per plan and shared
    by every dispatch of it (the fast path); frozen, so it stays true."""


RawResult = HookResult
"""The old name of :class:`HookResult`."""


_NO_CHANGES: Mapping[str, Any] = MappingProxyType({})
_RANK = RANK
_APPLIED, _SUPERSEDED = Status.APPLIED, Status.SUPERSEDED
# Module constants: `Verdict.BLOCK` is a ~65 ns class attribute lookup on 3.11.
_BLOCK, _STOP = Verdict.BLOCK, Verdict.STOP
_ENDS = (Verdict.BLOCK, Verdict.STOP, Verdict.SKIP)


class Outcome(msgspec.Struct, kw_only=True):
    """The merged result of one dispatch.

    A ``msgspec.Struct`` because an event with no hooks still returns one:
    it must cost tens of nanoseconds, not hundreds. Tracked by the garbage
    collector: a host that keeps its last outcome closes a cycle through
    it (outcome -> results -> hook -> the host's bound method -> host).

    It is also where the merge rule lives (docs/engine.md, Phases of a gate
    event, Merge), for both paths of the dispatch loop: ``_take`` folds each
    counted answer in as it comes, and ``raw`` and ``contexts`` are made
    from the answers taken when first read, so a dispatch nobody inspects
    builds no per-hook record.
    """

    name: str
    """The event's name."""
    event: Event | None = None
    """The event as emitted; None on the shared outcome of an event with no hooks."""
    verdict: Verdict = Verdict.NONE
    """The merged decision."""
    reason: str | None = None
    hint: str | None = None
    hook: Hook | None = None
    """The hook whose decision won."""
    payload: Event | None = None
    """The changed payload, or None when no hook changed it (see ``final()``)."""
    changes: Mapping[str, Any] = _NO_CHANGES
    """Fields changed by modifiers, with their final values."""
    value: Any = None
    """respond's value."""
    revision: int = 0
    capped: bool = False
    """True when the stop-loop cap turned a block into no opinion."""
    _raw: Sequence[HookResult] = ()
    """Every hook's result as the loop made it (``raw`` before the merge marks
    the answers it took)."""
    _answers: list[Decision | None] | None = None
    """Per result in ``_raw``: the answer the merge took from that hook (one
    with no failure, not a shadow, not cut off), else None. None: nothing to
    mark."""
    _best: int = -1
    """Which result holds the strongest decision taken so far."""
    _contexts: Sequence[tuple[str, str]] | None = None

    # -- the merge rule ---------------------------------------------------------
    def _take(self, i: int, decision: Decision) -> None:
        """Fold in the decision that counts in result ``i``: the strongest
        decision seen wins, ties to the earliest hook (a strict comparison,
        as results are taken in hook order)."""
        verdict = decision.verdict
        if _RANK[verdict] > _RANK[self.verdict]:
            self._best = i
            self.verdict, self.reason, self.hint = verdict, decision.reason, decision.hint
            self.value = decision.value
            self.hook = self._raw[i].hook

    @property
    def raw(self) -> Sequence[HookResult]:
        """Every hook's result, in dispatch order.

        An answer the merge took is ``applied`` when it decided the outcome,
        or has no rank (its context or change applies anyway), else
        ``superseded``.
        """
        answers = self._answers
        if answers is None:  # nothing to mark (the shared no-hooks outcome too)
            return self._raw
        if self._contexts is None:
            self._contexts = self.contexts  # made from the answers, which go now
        raw, best, rank = self._raw, self._best, _RANK
        records = []
        for i, answer in enumerate(answers):
            r = raw[i]
            if answer is None:
                records.append(r)
            else:
                records.append(HookResult(
                    r.hook, answer, None, r.latency,
                    _APPLIED if i == best or rank[answer.verdict] == 0 else _SUPERSEDED))
        self._raw, self._answers = records, None
        return records

    @property
    def contexts(self) -> Sequence[tuple[str, str]]:
        """(hook, text) for every context of an answer the merge took, in hook order."""
        # The answers first: ``raw`` sets the contexts before it drops the
        # answers, so a reader in another thread (the audit writer and the
        # host) finds one or the other, never neither.
        answers = self._answers
        contexts = self._contexts
        if contexts is not None:
            return contexts
        if answers is None:
            return ()
        raw = self._raw
        contexts = self._contexts = [
            (raw[i].hook.qualified_name, answer.context)
            for i, answer in enumerate(answers)
            if answer is not None and answer.context is not None]
        return contexts

    def __eq__(self, other: object) -> bool:
        """Equal when what readers see is: the fields, records and contexts,
        whichever of them have been read (their private forms differ then)."""
        if not isinstance(other, Outcome):
            return NotImplemented
        return self is other or _seen(self) == _seen(other)

    __hash__ = None  # type: ignore[assignment]  # mutable (the stop-loop cap sets verdict)

    # -- what hosts ask -------------------------------------------------------
    @property
    def blocked(self) -> bool:
        return self.verdict is _BLOCK

    @property
    def stopped(self) -> bool:
        return self.verdict is _STOP

    @property
    def ends(self) -> bool:
        """True when the action must not happen (block, stop or skip)."""
        return self.verdict in _ENDS

    def final(self, event: Event | None = None) -> Event:
        """The payload to act on: the changed one, else the one emitted.

        The shared outcome of an event with no hooks does not hold the event,
        so hosts pass the event they emitted: ``outcome.final(event)``.
        """
        found = self.payload or self.event or event
        if found is None:
            raise ValueError("outcome.final(event): pass the event you emitted")
        return found

    def tool_block_error(self) -> dict[str, Any]:
        """The structured error a blocked tool call returns to the model."""
        return {
            "error": "tool call blocked",
            "tool_name": getattr(self.event, "tool_name", None),
            # Redacted: this goes back to the model (docs/engine.md, Failures).
            "reason": redact(self.reason or ""),
            "hint": redact(self.hint) if self.hint else self.hint,
            "hook": self.hook.qualified_name if self.hook is not None else None,
        }

    def context_text(self, cap: int = 10_000) -> str:
        """Every context text in order, each wrapped in delimiters naming its hook.

        Each text is capped at ``cap`` characters. Hosts put this into the
        user message or the tool result (docs/agent.md, What each decision does here); it is never
        persisted as if the user wrote it.
        """
        parts = []
        for hook, text in self.contexts:
            if len(text) > cap:
                text = text[:cap] + f"... [truncated {len(text) - cap} characters]"
            parts.append(f'<hook-context hook="{hook}">\n{text}\n</hook-context>')
        return "\n".join(parts)

    @property
    def hooks(self) -> list[HookRecord]:
        """Each hook's verdict, status and latency, in dispatch order."""
        out = []
        for r in self.raw:
            decision, failure = r.decision, r.failure
            out.append(
                HookRecord(
                    hook=r.hook.qualified_name,
                    verdict=(decision.verdict.value if decision is not None else "none"),
                    status=r.status,
                    latency_ms=round(r.latency / 1e6, 4) if r.latency else None,
                    reason=_redacted(decision.reason) if decision is not None else None,
                    failure=failure.mode.value if failure is not None else None,
                    error=redact(str(failure)) if failure is not None else None,
                )
            )
        return out


    def to_record(self, event: Event | None = None) -> OutcomeRecord:
        """The one JSON shape; pass the emitted event for a no-hooks outcome."""
        event = self.event or event
        verdict = self.verdict
        if verdict is Verdict.NONE and self.changes:
            verdict = Verdict.MODIFY
        return OutcomeRecord(
            event=self.name,
            decision=verdict.value,
            reason=_redacted(self.reason),
            hint=_redacted(self.hint),
            hook=self.hook.qualified_name if self.hook is not None else None,
            changes=dict(self.changes),
            value=self.value,
            context=[ContextItem(hook=h, text=t) for h, t in self.contexts],
            hooks=self.hooks,
            session_id=event.session_id if event is not None else "",
            revision=self.revision,
            capped=self.capped,
        )

    def to_dict(self, event: Event | None = None) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self.to_record(event))
        return out

    def summary(self) -> str:
        return (f"Outcome({self.name}, {self.verdict.value}, reason={self.reason!r}, "
                f"changes={sorted(self.changes)}, contexts={len(self.contexts)})")


def _seen(outcome: Outcome) -> tuple[Any, ...]:
    """What readers of ``outcome`` see, for equality."""
    o = outcome
    return (o.name, o.event, o.verdict, o.reason, o.hint, o.hook, o.payload, dict(o.changes),
            o.value, o.revision, o.capped, list(o.raw), list(o.contexts))


def _redacted(text: str | None) -> str | None:
    return redact(text) if text else text


def outcome_schema() -> dict[str, Any]:
    out: dict[str, Any] = msgspec.json.schema(OutcomeRecord)
    return out


class NoHooks(Outcome, frozen=True, gc=False):  # type: ignore[misc]  # msgspec allows it
    """The outcome of an event with no hooks: "no opinion", shared by every
    emit of that event type in every engine, so it is frozen (setting a field
    raises AttributeError). Its ``event`` is None: use ``final(event)``."""
