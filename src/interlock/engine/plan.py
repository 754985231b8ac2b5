"""Hook sets and dispatch plans.

A :class:`HookSet` is one registry revision: immutable, sorted once. For each
event it answers with a :class:`Plan`: the matching hooks split by phase, plus
what the dispatcher needs to know without looking it up again (container
fields to snapshot, whether anything can suspend).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from interlock.engine.catalog import EventSpec, Kind
from interlock.engine.contract import container_fields
from interlock.engine.events import EVENT_TYPES, Event
from interlock.engine.hooks import Hook, Mode

if TYPE_CHECKING:
    from interlock.engine.outcome import Outcome

STOP_EVENTS = frozenset({"before_stop", "subagent_stop"})


@dataclass(frozen=True, slots=True)
class Plan:
    """The hooks one event runs, split by phase, in dispatch order."""

    spec: EventSpec
    modifiers: tuple[Hook, ...]
    checks: tuple[Hook, ...]
    """Checks on gate events; every non-background hook on observe events."""
    shadows: tuple[Hook, ...]
    background: tuple[Hook, ...]
    may_suspend: bool
    """True when a hook the host waits for may await (async, blocking, executor)."""
    containers: tuple[str, ...]
    """Payload fields a hook could mutate in place (snapshotted per dispatch)."""
    gate: bool
    stop_event: bool
    lean: bool = False
    """Only plain sync modifiers and checks on a gate event (the common case):
    the dispatcher runs it without its per-dispatch state object until a hook
    answers or fails (DispatchLoop._fast)."""
    revision: int = 0
    """The hook set revision this plan belongs to (what outcomes report)."""
    compiled: list[Callable[[Event], Outcome]] = field(
        default_factory=list, compare=False, repr=False)
    """The engine's fast path for this plan once compiled (a one-item cache;
    a plan belongs to one engine's hook set)."""


class Resolver:
    """Plans for an event whose hooks have matchers: one plan per subject."""

    __slots__ = ("_by_values", "_cache", "_matched", "field_matched", "fields", "hooks",
                 "revision", "subject")

    def __init__(self, spec: EventSpec, hooks: tuple[Hook, ...], revision: int = 0) -> None:
        self.hooks = hooks
        self.revision = revision
        self.subject = spec.subject
        self.field_matched = any(h.matcher is not None and h.matcher.fields for h in hooks)
        self.fields = tuple(sorted({name for h in hooks if h.matcher is not None
                                    for name, _pat in h.matcher.fields}))
        """The payload fields some matcher reads."""
        self._cache: dict[str | None, Plan | None] = {}
        self._by_values: dict[tuple[str | None, ...], Plan | None] = {}
        self._matched: dict[int, Plan | None] = {}

    def resolve(self, event: Event) -> Plan | None:
        subject: str | None = None
        if self.subject is not None:
            subject = getattr(event, self.subject)
            if event.spec.name == "command":
                subject = f"command:{subject}"
        if self.field_matched:
            return self._by_fields(event, subject)
        try:
            return self._cache[subject]
        except KeyError:
            plan = make_plan(event.spec, self.hooks, event, subject, self.revision)
            if len(self._cache) < 4096:  # tool names are few; never grow without bound
                self._cache[subject] = plan
            return plan
    def _by_fields(self, event: Event, subject: str | None) -> Plan | None:
        """Field matchers: the plan for the subject and the values the matchers
        read, as the text they match (``Matcher.matches``): a repeat skips
        every regex (1,000 hooks with field matchers: ~600 us an emit)."""
        key = (subject, *[None if v is None else str(v)
                          for v in (getattr(event, f, None) for f in self.fields)])
        try:
            return self._by_values[key]
        except KeyError:
            plan = self._by_matches(event, subject)
            if len(self._by_values) < 4096:  # never grow without bound
                self._by_values[key] = plan
            return plan

    def _by_matches(self, event: Event, subject: str | None) -> Plan | None:
        """Field matchers: the plan for which hooks match, cached by that answer
        (building a frozen Plan per emit cost ~10 us with one hook)."""
        key = 0
        for bit, h in enumerate(self.hooks):
            if h.matcher is None or h.matcher.matches(event, subject):
                key |= 1 << bit
        try:
            return self._matched[key]
        except KeyError:
            selected = [h for bit, h in enumerate(self.hooks) if key >> bit & 1]
            plan = make_plan(event.spec, selected, revision=self.revision,
                             matched=True)
            if len(self._matched) < 4096:  # never grow without bound
                self._matched[key] = plan
            return plan


def make_plan(spec: EventSpec, hooks: Iterable[Hook], event: Event | None = None,
              subject: str | None = None, revision: int = 0, *, matched: bool = False
              ) -> Plan | None:
    """The plan of ``hooks`` for one event; ``matched``: their matchers were
    already asked (Resolver), so every hook given runs."""
    gate = spec.kind is Kind.GATE
    modifiers: list[Hook] = []
    checks: list[Hook] = []
    shadows: list[Hook] = []
    background: list[Hook] = []
    may_suspend = False
    for h in hooks:  # one pass: registering 1,000 hooks builds a plan 1,000 times
        if not matched and h.matcher is not None and (
                event is None or not h.matcher.matches(event, subject)):
            continue
        if h.background:
            background.append(h)
            continue
        may_suspend = may_suspend or h.mode is not Mode.SYNC
        if h.shadow:
            shadows.append(h)
        elif gate and h.modifies:
            modifiers.append(h)
        else:
            checks.append(h)
    if not (modifiers or checks or shadows or background):
        return None
    stop_event = spec.name in STOP_EVENTS
    lean = (gate and not shadows and not background and not may_suspend
            and not stop_event and spec.name != "user_input")
    return Plan(
        spec=spec,
        modifiers=tuple(modifiers),
        checks=tuple(checks),
        shadows=tuple(shadows),
        background=tuple(background),
        may_suspend=may_suspend,
        containers=container_fields(spec) if gate else (),
        gate=gate,
        stop_event=stop_event,
        lean=lean,
        revision=revision,
    )


class HookSet:
    """An immutable, numbered set of active hooks (one registry revision).

    Plans are built when an event first needs one, not when a hook is
    registered: registering 1,000 hooks one by one must not build 1,000 plans.
    """

    def __init__(self, hooks: Iterable[Hook], revision: int, *, presorted: bool = False,
                 by_event: dict[str, list[Hook]] | None = None) -> None:
        self.revision = revision
        # docs/engine.md, Order: priority, then source rank, then
        # registration order (Hook.sort_key).
        self.hooks: tuple[Hook, ...] = (
            tuple(hooks) if presorted else tuple(sorted(hooks, key=Hook.sort_key)))
        if by_event is None:
            by_event = {}
            for h in self.hooks:  # one pass, not one per event type
                for name in h.events:
                    by_event.setdefault(name, []).append(h)
        self._by_event = by_event
        """Event name -> its hooks, in order (lists never changed once here)."""
        events = {EVENT_TYPES[name] for name in by_event}
        if not STOP_EVENTS.isdisjoint(by_event):
            # user_input resets the stop-loop counters, so it must reach the
            # dispatcher even with no hooks of its own (docs/engine.md, Stop
            # loops).
            events.add(EVENT_TYPES["user_input"])
        self.events: frozenset[type[Event]] = frozenset(events)
        """The event types that reach the dispatcher."""
        self.built: dict[type[Event], Plan | Resolver] = {}
        """The entries built so far (see ``entry``)."""

    def with_hook(self, hook: Hook, revision: int) -> HookSet:
        """This set plus ``hook``, which sorts after every hook registered before it."""
        hooks = list(self.hooks)
        bisect.insort(hooks, hook, key=Hook.sort_key)
        by_event = dict(self._by_event)
        for name in hook.events:
            group = list(by_event.get(name, ()))
            bisect.insort(group, hook, key=Hook.sort_key)
            by_event[name] = group
        return HookSet(hooks, revision, presorted=True, by_event=by_event)

    def entry(self, cls: type[Event]) -> Plan | Resolver | None:
        """The plan of event type ``cls``, or a resolver when matchers decide per event."""
        try:
            return self.built[cls]
        except KeyError:
            pass
        if cls not in self.events:
            return None
        selected = tuple(self._by_event.get(cls.spec.name, ()))
        entry: Plan | Resolver
        if not selected:  # user_input, for the stop-loop counters
            entry = Plan(spec=cls.spec, modifiers=(), checks=(), shadows=(), background=(),
                         may_suspend=False, containers=(), gate=True, stop_event=False,
                         revision=self.revision)
        elif all(h.matcher is None for h in selected):
            plan = make_plan(cls.spec, selected, revision=self.revision)
            assert plan is not None
            entry = plan
        else:
            entry = Resolver(cls.spec, selected, self.revision)
        # Two threads may build the same entry at once; either copy is right.
        self.built[cls] = entry
        return entry

    @property
    def entries(self) -> dict[type[Event], Plan | Resolver]:
        """Every event type with hooks -> its plan or resolver (built now)."""
        out = {}
        for cls in self.events:
            entry = self.entry(cls)
            assert entry is not None
            out[cls] = entry
        return out

    def plan(self, event: Event) -> Plan | None:
        entry = self.entry(event.__class__)
        if isinstance(entry, Resolver):
            return entry.resolve(event)
        return entry
