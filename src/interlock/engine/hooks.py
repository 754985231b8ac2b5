"""Hook definitions: what runs, on which events, in which order and mode."""

from __future__ import annotations

import enum
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import msgspec

from interlock.engine.catalog import BY_NAME, COMMON, Kind
from interlock.engine.coroutines import iscoroutinefunction
from interlock.engine.errors import RegistrationError

if TYPE_CHECKING:
    from interlock.engine.decisions import Decision
    from interlock.engine.events import Event


class Source(enum.IntEnum):
    """Where a hook came from. Lower is stronger and runs first at equal priority."""

    MANAGED = 0
    CODE = 1
    PROJECT = 2
    USER = 3
    BUNDLED = 4
    PACKAGE = 5

    @property
    def label(self) -> str:
        return _SOURCE_LABELS[self]


# Computed once: Enum.name is a Python-level property (~160 ns with .lower()),
# and qualified_name is read for every context and every record.
_SOURCE_LABELS: dict[Source, str] = {s: s.name.lower() for s in Source}


class OnError(enum.StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class Mode(enum.IntEnum):
    """How the dispatcher calls a hook (decided once, at registration)."""

    SYNC = 0
    """A plain function, called on the caller's thread with no timer."""
    ASYNC = 1
    """A coroutine function; it gets a timer only if it suspends."""
    BLOCKING = 2
    """A sync function declared blocking: a worker thread, with its timeout."""
    EXECUTOR = 3
    """An out-of-process executor (command, worker, http, ...)."""


@dataclass(frozen=True, slots=True)
class Invocation:
    """One call of one hook, as executors see it."""

    event: Event
    hook: Hook
    invocation_id: str
    attempt: int = 1
    replay: bool = False

    def wire(self) -> dict[str, Any]:
        """The native wire contract v1 request body."""
        ev = self.event
        return {
            "contract_version": 1,
            "invocation_id": self.invocation_id,
            "event": ev.name,
            "hook": self.hook.name,
            "session_id": ev.session_id,
            "cwd": ev.cwd,
            "replay": self.replay,
            "payload": ev.to_dict(),
        }


class Executor(Protocol):
    """Runs a hook out of process. Returns a decision, None, or raises HookFailure.

    Subclass it to get the no-op ``aclose``; whoever retires an executor (a
    config reload, a shutdown) awaits ``aclose()`` on every one.
    """

    async def __call__(self, invocation: Invocation) -> Decision | None: ...

    async def aclose(self) -> None:
        """Release what it holds (processes, connection pools); nothing by default."""
        return None


class HookOptions(TypedDict, total=False):
    """Keyword options when registering a Python hook in code."""

    name: str
    priority: int
    matcher: str | Mapping[str, str] | None
    modifies: bool
    on_error: OnError | str | None
    background: bool
    shadow: bool
    blocking: bool
    timeout: float | None
    source: Source
    description: str


HookFn = Callable[..., "Decision | Awaitable[Decision | None] | None"]

_GLOB_STAR = re.compile(r"(?<![.\])}\\*+?])\*")


def compile_matcher(pattern: str) -> re.Pattern[str] | None:
    """Compile a matcher into an anchored full match.

    Matchers are regular expressions matched against the whole subject
    (``read`` does not match ``read_and_exec``). ``*`` on its own, or a
    ``*`` that does not follow a regex atom, is a wildcard, so ``*``,
    ``command:*`` and ``mcp__github__*`` mean what they look like.
    Returns None for "match everything".
    """
    if pattern in ("", "*", ".*"):
        return None
    try:
        return re.compile(_GLOB_STAR.sub(".*", pattern))
    except re.error as exc:
        raise RegistrationError(f"matcher {pattern!r} is not a valid pattern: {exc}") from None


# A frozen msgspec struct, not a frozen slotted dataclass: the engine defines it on
# every import, and such a dataclass takes ~1 ms to define (docs/one-policy.md, Speed).
class Matcher(msgspec.Struct, frozen=True):
    """A compiled matcher: one pattern on the event's subject and/or field patterns."""

    subject: re.Pattern[str] | None = None
    fields: tuple[tuple[str, re.Pattern[str]], ...] = ()
    text: str = "*"

    @classmethod
    def parse(cls, spec: str | Mapping[str, str] | None) -> Matcher | None:
        if spec is None:
            return None
        if isinstance(spec, str):
            pat = compile_matcher(spec)
            return None if pat is None else cls(subject=pat, text=spec)
        fields = []
        subject = None
        for key, value in spec.items():
            pat = compile_matcher(str(value))
            if pat is None:
                continue
            if key == "subject":
                subject = pat
            else:
                fields.append((key, pat))
        if subject is None and not fields:
            return None
        return cls(subject=subject, fields=tuple(fields), text=str(dict(spec)))

    def check(self, hook: str, events: tuple[str, ...]) -> None:
        """Refuse a matcher that could never match one of ``events``."""
        for ev in events:
            spec = BY_NAME[ev]
            if self.subject is not None and spec.subject is None:
                raise RegistrationError(
                    f"hook {hook!r}: matcher {self.text!r} matches a tool or command name, "
                    f"but {ev} has none, so it would never run there; drop {ev} from its "
                    "events, or match a payload field instead (for example "
                    "{\"platform\": \"telegram\"})")
            if self.fields:
                names = {f.name for f in COMMON} | {f.name for f in spec.fields}
                for name, _pat in self.fields:
                    if name not in names:
                        raise RegistrationError(
                            f"hook {hook!r}: matcher field {name!r} is not a field of {ev}; "
                            f"its fields: {', '.join(sorted(names))}")

    def matches(self, event: Event, subject: str | None) -> bool:
        if self.subject is not None and (
            subject is None or self.subject.fullmatch(subject) is None
        ):
            return False
        for name, pat in self.fields:
            value = getattr(event, name, None)
            if value is None or pat.fullmatch(str(value)) is None:
                return False
        return True


@dataclass(eq=False, slots=True)
class Hook:
    """One hook: a Python callable or an executor, and how to run it."""

    name: str
    events: tuple[str, ...]
    fn: HookFn | None = None
    """A Python callable taking the event (sync or async)."""
    executor: Executor | None = None
    """An out-of-process executor, for command, worker, http, prompt and agent hooks."""
    priority: int = 0
    """Lower runs first."""
    source: Source = Source.CODE
    matcher: Matcher | None = None
    modifies: bool = False
    """A modifier runs in the modify phase and may return modify."""
    on_error: OnError | None = None
    """None means the default: closed on gate events, open on observe events."""
    background: bool = False
    """The host does not wait; failures are still recorded."""
    shadow: bool = False
    """Runs and is audited; its decision is not applied."""
    blocking: bool = False
    """A sync function that blocks: run it on a worker thread with a timeout."""
    timeout: float | None = 60.0
    description: str = ""
    kind: str = "python"
    """python | command | worker | http | prompt | agent (for listings and policy)."""
    digest: str = ""
    """Digest of the whole definition; approvals key on it."""
    portable_digest: str = ""
    """The same digest with every path in it relative to the hook's place (its
    project, the user folder...): equal for the same hook held at other paths, as
    on replicas of a fleet; breakers key on it (empty: ``digest`` stands in)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Where it was declared, what it shadows, etc. (for `hooks list`)."""
    order: int = 0
    """Registration order, set by the registry."""
    mode: Mode = Mode.SYNC
    qualified_name: str = field(init=False, default="")
    """``source:name``, computed once: name and source are fixed after
    construction (use dataclasses.replace for a changed copy)."""

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name in ("name", "source") and hasattr(self, "source") and hasattr(self, "name"):
            object.__setattr__(self, "qualified_name", f"{self.source.label}:{self.name}")

    def __post_init__(self) -> None:
        self.qualified_name = f"{self.source.label}:{self.name}"
        if (self.fn is None) == (self.executor is None):
            raise RegistrationError(f"hook {self.name!r}: give exactly one of fn or executor")
        for ev in self.events:
            if ev not in BY_NAME:
                from interlock.engine.catalog import spec

                spec(ev)  # raises a did-you-mean UnknownEventError
        if self.executor is not None:
            self.mode = Mode.EXECUTOR
        elif iscoroutinefunction(self.fn) or iscoroutinefunction(
            getattr(self.fn, "__call__", None)  # noqa: B004 - async callable objects
        ):
            self.mode = Mode.ASYNC
        elif self.blocking:
            self.mode = Mode.BLOCKING
        else:
            self.mode = Mode.SYNC
        if self.modifies and not any(BY_NAME[e].mutable for e in self.events):
            raise RegistrationError(
                f"hook {self.name!r} is declared modifies=True but none of its events "
                f"({', '.join(self.events)}) has fields a hook may change"
            )

    def fails_closed(self, event: str) -> bool:
        if self.on_error is not None:
            return self.on_error is OnError.CLOSED
        return BY_NAME[event].kind is Kind.GATE

    def sort_key(self) -> tuple[int, int, int]:
        # docs/engine.md, Order: priority, then source rank, then registration order.
        return (self.priority, int(self.source), self.order)
