"""The engine: register hooks, emit events, get outcomes.

:class:`Engine` keeps the registry (one immutable :class:`HookSet` per
revision) and the API; the dispatch loop it drives is in ``engine/loop.py``.

Hot path: an event with no hooks costs one dict read and returns a shared
outcome. An event whose hooks are plain sync checks goes from the entry table
straight to the loop's fast path, with no timer and no coroutine; the sync
facade never touches an event loop unless a matched hook can suspend.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, overload

from interlock.engine.after_import import after_import
from interlock.engine.background import Background
from interlock.engine.catalog import SPECS, Kind
from interlock.engine.catalog import spec as catalog_spec
from interlock.engine.contract import Validator
from interlock.engine.decisions import Decision
from interlock.engine.events import EVENT_TYPES, Event
from interlock.engine.fast import compile_fast
from interlock.engine.hooks import Hook, HookFn, HookOptions, Matcher, OnError
from interlock.engine.logs import logger
from interlock.engine.loop import DispatchLoop, drive, drive_sync
from interlock.engine.loop_thread import LoopThread
from interlock.engine.outcome import NoHooks, Outcome
from interlock.engine.plan import HookSet, Plan, Resolver
from interlock.engine.sinks import FailureRecord, Sink

if TYPE_CHECKING:
    from interlock.engine.settled import Settled

log = logger("interlock")

F = TypeVar("F", bound=Callable[..., Any])
E = TypeVar("E", bound=Event)
HookAnswer = Decision | Awaitable[Decision | None] | None
"""What a hook returns (None: no opinion)."""
R = TypeVar("R", bound=HookAnswer)

Runner = Callable[[Event], Outcome]
"""What the sync entry table holds for an event with hooks."""


# What an event with no hooks gets: one shared outcome per event type, held
# directly in the engine's entry table so the no-hook path is one dict read.
_PASSED = {EVENT_TYPES[s.name]: NoHooks(name=s.name) for s in SPECS}
# The same outcomes, ready for ``await`` without a coroutine (see _settled),
# made by the first emit(): a Settled is an asyncio future, and the sync
# facade must not import asyncio (docs/engine.md, Timers).
_SETTLED: dict[type[Event], Settled] | None = None


def _settled_outcomes() -> dict[type[Event], Settled]:
    global _SETTLED
    settled = _SETTLED
    if settled is None:
        from interlock.engine.settled import Settled

        # Made whole, then published: a first emit in another thread meanwhile
        # makes its own rather than read a half-made table.
        settled = _SETTLED = {cls: Settled(outcome) for cls, outcome in _PASSED.items()}
    return settled


def _event_names(event: str | type[Event] | Iterable[str | type[Event]]) -> tuple[str, ...]:
    """Event names from names or event classes (``BeforeToolCall``)."""
    items = (event,) if isinstance(event, str | type) else tuple(event)
    names = []
    for item in items:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, type) and issubclass(item, Event):
            names.append(item.spec.name)
        else:
            raise TypeError(f"Engine.on() takes event names or event classes from "
                            f"interlock.events (for example BeforeToolCall), not {item!r}")
    return tuple(names)


def _not_an_event(method: str, event: object) -> TypeError:
    return TypeError(f"Engine.{method}() takes an event payload from interlock.events "
                     f"(for example BeforeToolCall(...)), not {type(event).__name__}; "
                     f"build one by name with interlock.events.event_type(name)(**fields)")


class Handle:
    """Returned by registration; ``unregister()`` removes the hook again."""

    __slots__ = ("_engine", "hook")

    def __init__(self, engine: Engine, hook: Hook) -> None:
        self._engine = engine
        self.hook = hook

    def unregister(self) -> None:
        self._engine.unregister(self.hook)


class Engine(DispatchLoop):
    """The hook engine: register hooks, emit events, get outcomes.

    ``await engine.emit(event)`` is the async API; ``engine.emit_sync(event)``
    is the facade for sync hosts.
    """

    def __init__(
        self,
        *,
        sinks: Iterable[Sink] = (),
        stop_loop_cap: int = 8,
        queue_limit: int = 1000,
        default_timeout: float = 60.0,
        timed: bool = False,
    ) -> None:
        """``timed``: measure every hook's latency even with no sink attached.

        With a sink (audit log, metrics, a RecordingSink) latencies are always
        measured; without one the hot path skips the clock (~85 ns a hook).
        """
        self._sinks: tuple[Sink, ...] = tuple(sinks)
        self._timed = bool(self._sinks) or timed
        self._always_timed = timed
        self.stop_loop_cap = stop_loop_cap
        self.default_timeout = default_timeout
        self._lock = threading.RLock()
        self._order = itertools.count(1)
        self._validators: dict[str, list[Validator]] = {}
        self._stop_blocks: dict[tuple[str, str], int] = {}
        self._loop = LoopThread()
        self._background = Background(self._loop, self._record_failure, queue_limit)
        self._install(HookSet((), 0))

    @property
    def sinks(self) -> tuple[Sink, ...]:
        return self._sinks

    def add_sink(self, sink: Sink) -> None:
        """Attach a sink (audit log, dead letters, metrics); turns on hook timing."""
        with self._lock:
            self._sinks = (*self._sinks, sink)
            self._timed = True
            self._install(self._set)  # the timed loop, which hands outcomes to sinks

    def record(self, outcome: Outcome) -> None:
        """Hand ``outcome``, a decision made outside the hooks (a permission rule's,
        docs/agent.md, Permissions), to the sinks as a dispatch of its own: the
        audit log and the metrics count it as they count the hooks'."""
        if self._sinks:
            self._dispatched(outcome)

    def remove_sink(self, sink: Sink) -> None:
        with self._lock:
            self._sinks = tuple(s for s in self._sinks if s is not sink)
            self._timed = bool(self._sinks) or self._always_timed
            self._install(self._set)

    # -- registry -------------------------------------------------------------
    def _install(self, hookset: HookSet) -> None:
        events = hookset.events
        # The sync entry table: every event type maps to its shared no-hook
        # outcome, or to the runner of its hooks. One dict read and a class
        # check decide the hot path.
        table: dict[type[Event], Outcome | Runner] = {}
        for cls, outcome in _PASSED.items():
            table[cls] = self._first_runner(hookset, cls, table) if cls in events else outcome
        self._set = hookset
        self._table = table
        # emit()'s table, like ``table``: made by the first emit() (_settled_table).
        self._settled: dict[type[Event], Settled | None] = {}

    def _settled_table(self, event: Event) -> Settled | None:
        """emit()'s entry for ``event`` when its table is not made yet: makes it for
        the hooks in force (under the lock, so a concurrent install cannot be
        overwritten by a table of the hooks before it)."""
        with self._lock:
            settled = self._settled
            if not settled:
                events = self._set.events
                settled = {cls: (None if cls in events else done)
                           for cls, done in _settled_outcomes().items()}
                self._settled = settled
        try:
            return settled[event.__class__]
        except KeyError:
            raise _not_an_event("emit", event) from None

    def _has_hooks(self, event_type: type[Event]) -> bool:
        """Whether any hook is on ``event_type`` now (adapters skip building costly
        fields when none is): the sync entry table's one read."""
        return self._table[event_type].__class__ is not NoHooks

    @property
    def _entries(self) -> dict[type[Event], Plan | Resolver]:
        return self._set.entries

    def _first_runner(self, hookset: HookSet, cls: type[Event],
                      table: dict[type[Event], Outcome | Runner]) -> Runner:
        """The runner of ``cls`` until its first emit, which builds the real one
        and puts it in the table (that revision's table: a newer one is left alone)."""
        def first(event: Event) -> Outcome:
            entry = hookset.entry(cls)
            if entry is None:  # pragma: no cover - events with hooks have an entry
                return _PASSED[cls]
            runner = table[cls] = self._runner(entry)
            return runner(event)
        return first

    def _runner(self, entry: Plan | Resolver) -> Runner:
        """What emit_sync calls for an event with hooks: for a plan of plain sync
        checks on an untimed engine, the fast path itself."""
        if isinstance(entry, Plan):
            plan = entry
            if plan.lean and not self._timed:
                if not plan.compiled:
                    plan.compiled.append(compile_fast(self, plan))
                return plan.compiled[0]
            run = self._run_sync
            return lambda event: run(event, plan)
        resolve, run = entry.resolve, self._run_sync
        return lambda event: run(event, resolve(event))

    @property
    def revision(self) -> int:
        return self._set.revision

    @property
    def hooks(self) -> tuple[Hook, ...]:
        return self._set.hooks

    def replace_hooks(self, hooks: Iterable[Hook], revision: int | None = None) -> int:
        """Swap in a whole new set of hooks atomically; returns the new revision."""
        hooks = list(hooks)
        with self._lock:
            for h in hooks:
                if h.order == 0:
                    h.order = next(self._order)
            new = HookSet(hooks, revision if revision is not None else self._set.revision + 1)
            self._install(new)
            return new.revision

    def register(self, hook: Hook) -> Handle:
        """Add one hook. A matcher that could never match one of its events is
        refused here (RegistrationError), where a person registers hooks; the
        config loader refuses it too, naming the file and field."""
        if hook.matcher is not None:
            hook.matcher.check(hook.name, hook.events)
        with self._lock:
            hook.order = next(self._order)
            # The latest registered hook sorts after every hook of its priority
            # and source: insert it, do not sort them all (docs/engine.md, Order).
            self._install(self._set.with_hook(hook, self._set.revision + 1))
        return Handle(self, hook)

    def unregister(self, hook: Hook) -> None:
        with self._lock:
            self.replace_hooks([h for h in self._set.hooks if h is not hook])

    @overload
    def on(self, event: type[E], fn: Callable[[E], HookAnswer],
           **options: Unpack[HookOptions]) -> Handle: ...

    @overload
    def on(self, event: type[E], fn: None = None, **options: Unpack[HookOptions]
           ) -> Callable[[Callable[[E], R]], Callable[[E], R]]: ...

    @overload
    def on(self, event: str | Iterable[str | type[Event]], fn: HookFn,
           **options: Unpack[HookOptions]) -> Handle: ...

    @overload
    def on(self, event: str | Iterable[str | type[Event]], fn: None = None,
           **options: Unpack[HookOptions]) -> Callable[[F], F]: ...

    def on(
        self, event: str | type[Event] | Iterable[str | type[Event]], fn: HookFn | None = None,
        **options: Unpack[HookOptions],
    ) -> Handle | Callable[[Any], Any]:
        """Register ``fn`` for ``event``; usable as a decorator.

        ``event`` is an event class, ``@engine.on(BeforeToolCall)``, which
        types the handler's ``event`` for type checkers; or its name,
        ``@engine.on("before_tool_call")``; or several of either.

        Returns a :class:`Handle` when ``fn`` is given, else a decorator that
        registers and returns the function unchanged. Options are those of
        :class:`HookOptions`.
        """
        def make(f: HookFn) -> Handle:
            return self.register(self.hook_for(event, f, **options))

        if fn is not None:
            return make(fn)

        def decorator(f: F) -> F:
            make(f)
            return f

        return decorator

    def hook_for(self, event: str | type[Event] | Iterable[str | type[Event]], fn: HookFn,
                 **options: Unpack[HookOptions]) -> Hook:
        """The hook :meth:`on` would register, not yet registered (to wrap it first)."""
        opts: dict[str, Any] = dict(options)
        on_error = opts.pop("on_error", None)
        timeout = opts.pop("timeout", None)
        return Hook(
            name=opts.pop("name", None) or str(getattr(fn, "__qualname__", repr(fn))),
            events=_event_names(event),
            fn=fn,
            matcher=Matcher.parse(opts.pop("matcher", None)),
            on_error=OnError(on_error) if on_error is not None else None,
            timeout=timeout if timeout is not None else self.default_timeout,
            **opts,
        )

    def add_validator(self, event: str, validator: Validator) -> None:
        """Re-validate payloads of ``event`` after every change a modifier makes."""
        catalog_spec(event)  # did-you-mean error for unknown names
        self._validators.setdefault(event, []).append(validator)

    # -- emitting -------------------------------------------------------------
    def emit_sync(self, event: Event) -> Outcome:
        """Dispatch ``event`` and return the merged outcome (sync hosts)."""
        try:
            entry = self._table[event.__class__]
        except KeyError:
            raise _not_an_event("emit_sync", event) from None
        if entry.__class__ is NoHooks:
            return entry
        return entry(event)  # type: ignore[operator]

    def prepare_sync(self, event: Event) -> Callable[[], Outcome]:
        """:meth:`emit_sync` in two halves: the hooks in force now are taken here
        (emit_sync's one read), and run when the result is called. A host pairing
        them with what is swapped beside them (Registry.dispatch_sync) takes this
        half under its own lock, and runs the hooks outside it."""
        try:
            entry = self._table[event.__class__]
        except KeyError:
            raise _not_an_event("emit_sync", event) from None
        if entry.__class__ is NoHooks:
            return lambda: entry
        return lambda: entry(event)  # type: ignore[operator]

    def _run_sync(self, event: Event, plan: Plan | None) -> Outcome:
        if plan is None:
            return _PASSED[event.__class__]
        if plan.lean and not self._timed:
            return self._fast(event, plan)
        if plan.may_suspend:
            return self._loop.run(drive(self._steps(event, plan)))
        return drive_sync(self._steps(event, plan))

    def emit(self, event: Event) -> Coroutine[Any, Any, Outcome]:
        """Dispatch ``event``; ``await`` it for the merged outcome.

        A coroutine, as from an ``async def``: await it, or hand it to
        ``asyncio.create_task``, ``gather`` or ``asyncio.run``. For an event
        with no hooks it is an already-finished one (:class:`Settled`), which
        skips building a coroutine frame on the hottest path.

        The hooks that run are those in force when ``emit()`` is called, on
        both paths: a hook registered or removed before the coroutine is
        awaited does not change what this event runs.
        """
        try:
            settled = self._settled[event.__class__]
        except KeyError:
            settled = self._settled_table(event)
        if settled is not None:
            return settled
        # .get: a concurrent replace_hooks may have dropped this event's hooks
        # between the two reads; then it has none, as the new revision says.
        hookset = self._set
        cls = event.__class__
        entry = hookset.built.get(cls)  # built on its first emit, then one read
        return self._emit(event, entry if entry is not None else hookset.entry(cls))

    async def _emit(self, event: Event, entry: Plan | Resolver | None) -> Outcome:
        # entry: this event's Plan or Resolver when emit() was called, or None.
        if type(entry) is Plan:
            plan: Plan | None = entry
        elif isinstance(entry, Resolver):
            plan = entry.resolve(event)
        else:
            plan = None
        if plan is None:
            return _PASSED[event.__class__]
        if plan.lean and not self._timed:
            compiled = plan.compiled
            return compiled[0](event) if compiled else self._fast(event, plan)
        if not plan.may_suspend:  # nothing to await: step the loop here (a timed engine)
            return drive_sync(self._steps(event, plan))
        return await drive(self._steps(event, plan))

    def notify(self, event: Event) -> None:
        """Hand an observe event to the background queues; never waits."""
        if event.spec.kind is not Kind.OBSERVE:
            raise ValueError(f"notify() is for observe events; {event.name} is a gate event")
        plan = self._set.plan(event)
        if plan is None:
            return
        for hook in (*plan.checks, *plan.shadows, *plan.background):
            self._background.submit(hook, event)

    # -- lifecycle ----------------------------------------------------------------
    def drain(self, timeout: float | None = 10.0) -> bool:
        """Wait until every queued background invocation has run; False on timeout."""
        return self._background.drain(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Drain the background queues (with a deadline) and stop the engine loop."""
        self._background.drain(timeout)
        self._loop.close()

    def report_failure(self, record: FailureRecord) -> None:
        """Hand a failure outside any dispatch (an extension bus drop, say) to the
        sinks, so it reaches the dead-letter store like a hook's failure."""
        log.warning("%s failed on %s (%s): %s", record.hook, record.event, record.mode.value,
                    record.error)
        self._failed(record)


# emit is a plain method that returns a coroutine: mark it, so tools that ask
# (asyncio.iscoroutinefunction, AsyncMock(spec=Engine)) still see an async API.
# Python 3.12+: inspect's own mark, set when inspect arrives (whoever asks has
# imported it; the engine does not: docs/one-policy.md, Speed).
if sys.version_info >= (3, 12):
    after_import("inspect", lambda inspect: inspect.markcoroutinefunction(Engine.emit))
else:  # 3.11: the marker asyncio.iscoroutinefunction reads, once asyncio is imported
    def _mark_emit(coroutines: ModuleType) -> None:
        Engine.emit._is_coroutine = coroutines._is_coroutine  # type: ignore[attr-defined]

    after_import("asyncio.coroutines", _mark_emit)
