"""Hook sets and dispatch plans.

A :class:`HookSet` is one registry revision: immutable, sorted once. For each
event it answers with a :class:`Plan`: the matching hooks split by phase, plus
what the dispatcher needs to know without looking it up again (container
fields to snapshot, whether anything can suspend).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from interlock.engine.catalog import EventSpec, Kind
from interlock.engine.contract import container_fields
from interlock.engine.events import EVENT_TYPES, Event
from interlock.engine.hooks import Hook, Mode

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
    """Only plain sync checks on a gate event (the common case): the dispatcher
    runs it without its per-dispatch state object (Engine._dispatch_lean)."""
    revision: int = 0
    """The hook set revision this plan belongs to (what outcomes report)."""


class Resolver:
    """Plans for an event whose hooks have matchers: one plan per subject."""

    __slots__ = ("_cache", "field_matched", "hooks", "revision", "subject")

    def __init__(self, spec: EventSpec, hooks: tuple[Hook, ...], revision: int = 0) -> None:
        self.hooks = hooks
        self.revision = revision
        self.subject = spec.subject
        self.field_matched = any(h.matcher is not None and h.matcher.fields for h in hooks)
        self._cache: dict[str | None, Plan | None] = {}

    def resolve(self, event: Event) -> Plan | None:
        subject: str | None = None
        if self.subject is not None:
            subject = getattr(event, self.subject)
            if event.spec.name == "command":
                subject = f"command:{subject}"
        if self.field_matched:
            return make_plan(event.spec, self.hooks, event, subject, self.revision)
        try:
            return self._cache[subject]
        except KeyError:
            plan = make_plan(event.spec, self.hooks, event, subject, self.revision)
            if len(self._cache) < 4096:  # tool names are few; never grow without bound
                self._cache[subject] = plan
            return plan


def make_plan(spec: EventSpec, hooks: Iterable[Hook], event: Event | None = None,
              subject: str | None = None, revision: int = 0) -> Plan | None:
    matched = [h for h in hooks if h.matcher is None
               or (event is not None and h.matcher.matches(event, subject))]
    if not matched:
        return None
    gate = spec.kind is Kind.GATE
    plan = Plan(
        spec=spec,
        modifiers=tuple(h for h in matched
                        if gate and h.modifies and not h.shadow and not h.background),
        checks=tuple(h for h in matched
                     if not h.background and not h.shadow and not (gate and h.modifies)),
        shadows=tuple(h for h in matched if h.shadow and not h.background),
        background=tuple(h for h in matched if h.background),
        may_suspend=any(h.mode is not Mode.SYNC for h in matched if not h.background),
        containers=container_fields(spec) if gate else (),
        gate=gate,
        stop_event=spec.name in STOP_EVENTS,
        revision=revision,
    )
    lean = (gate and not plan.modifiers and not plan.shadows and not plan.background
            and not plan.may_suspend and not plan.stop_event and spec.name != "user_input")
    return dataclasses.replace(plan, lean=lean) if lean else plan


class HookSet:
    """An immutable, numbered set of active hooks (one registry revision)."""

    def __init__(self, hooks: Iterable[Hook], revision: int) -> None:
        self.revision = revision
        # docs/engine.md, Order: priority, then source rank, then
        # registration order (Hook.sort_key).
        self.hooks: tuple[Hook, ...] = tuple(sorted(hooks, key=Hook.sort_key))
        entries: dict[type[Event], Plan | Resolver] = {}
        for name, cls in EVENT_TYPES.items():
            selected = tuple(h for h in self.hooks if name in h.events)
            if not selected:
                continue
            if all(h.matcher is None for h in selected):
                plan = make_plan(cls.spec, selected, revision=revision)
                assert plan is not None
                entries[cls] = plan
            else:
                entries[cls] = Resolver(cls.spec, selected, revision)
        self.entries = entries
        """Event class -> its plan, or a resolver when matchers decide per event."""

    def plan(self, event: Event) -> Plan | None:
        entry = self.entries.get(event.__class__)
        if isinstance(entry, Resolver):
            return entry.resolve(event)
        return entry
