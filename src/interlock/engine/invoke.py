"""Calling one hook, whatever it is, and checking its answer against its event.

Sync hooks are called inline with no timer. Async hooks are stepped inline
and get a timer only if they suspend. Blocking hooks go to a worker thread and
executors are awaited, both under their timeout.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from interlock.engine.catalog import EventSpec, Kind
from interlock.engine.decisions import ENDING, Decision, Verdict, decode_wire
from interlock.engine.errors import (
    HOOK_ERRORS,
    HOOK_EXITS,
    ContractError,
    HookCrash,
    HookFailure,
    HookTimeout,
    sync_cancelled,
)
from interlock.engine.events import Event
from interlock.engine.hooks import Hook, Invocation, Mode
from interlock.engine.loop_thread import Resume

if TYPE_CHECKING:
    import asyncio

Answer = tuple[Decision | None, HookFailure | None]

_REPLAY: contextvars.ContextVar[bool] = contextvars.ContextVar("interlock_replay", default=False)
"""True while `interlock replay` re-evaluates a recorded session."""


REPLAY_ENV = "INTERLOCK_REPLAY"
"""An extra signal: set to 1, hooks with side effects skip them as in a replay
(for a host replaying events through its own loop)."""


def is_replay() -> bool:
    """True during `interlock replay` (this context's flag) or with $INTERLOCK_REPLAY
    set: hooks with side effects (checkpoints, loggers, memory) skip them then, as
    a replay re-judges a recorded session and does not redo it."""
    return _REPLAY.get() or os.environ.get(REPLAY_ENV, "") not in ("", "0", "false")


@contextlib.contextmanager
def replay_mode() -> Iterator[None]:
    """Mark every dispatch inside the block as a replay (Invocation.replay)."""
    token = _REPLAY.set(True)
    try:
        yield
    finally:
        _REPLAY.reset(token)


_ids = itertools.count(1)
_prefix = os.urandom(4).hex()


def new_id() -> str:
    """A unique invocation id (cheap: a process prefix and a counter)."""
    return f"{_prefix}-{next(_ids)}"


def start(hook: Hook, event: Event, spec: EventSpec) -> Answer | asyncio.Future[Answer]:
    """Step a non-sync hook inline; return its answer, or a future for the rest."""
    import asyncio  # not on the sync path (docs/engine.md, Timers)

    if hook.mode is Mode.ASYNC:
        assert hook.fn is not None
        try:
            coro = hook.fn(event)
            first = coro.send(None)  # type: ignore[union-attr]
        except StopIteration as done:
            return settle(hook, spec, done.value)
        except HookFailure as exc:
            return None, exc
        except HOOK_ERRORS as exc:
            return None, crash(hook, exc)
        except asyncio.CancelledError as exc:
            # Stepped synchronously: a cancellation of the caller is delivered at
            # its next await, never here, so this CancelledError is the hook's own.
            return None, crash(hook, exc)
        # It suspended: only now does it get a timer (~20 us each, bench/dispatch.py;
        # docs/engine.md, Timers).
        deadline = None
        if hook.timeout is not None:
            deadline = asyncio.get_running_loop().time() + hook.timeout
        resumed = Resume(coro, first)  # type: ignore[arg-type]
        task = asyncio.ensure_future(_guarded(hook, spec, resumed, deadline))
        task.add_done_callback(resumed.close_if_cancelled)
        return task
    return asyncio.ensure_future(call(hook, event, spec))


def call_sync(hook: Hook, event: Event, spec: EventSpec) -> Answer:
    """Call a plain sync hook (no timer: it runs on the caller's thread)."""
    try:
        answer = hook.fn(event)  # type: ignore[misc]
    except HookFailure as exc:
        return None, exc
    except HOOK_ERRORS as exc:
        return None, crash(hook, exc)
    except BaseException as exc:
        if not sync_cancelled(exc):
            raise
        return None, crash(hook, exc)
    return settle(hook, spec, answer)


async def call(hook: Hook, event: Event, spec: EventSpec) -> Answer:
    """Run one hook to completion, whatever its mode."""
    mode = hook.mode
    if mode is Mode.SYNC:
        return call_sync(hook, event, spec)
    import asyncio

    if mode is Mode.ASYNC:
        stepped = start(hook, event, spec)
        if isinstance(stepped, asyncio.Future):
            return await stepped
        return stepped
    deadline = None
    if hook.timeout is not None:
        deadline = asyncio.get_running_loop().time() + hook.timeout
    if mode is Mode.BLOCKING:
        assert hook.fn is not None
        return await _guarded(hook, spec, asyncio.to_thread(_in_thread, hook, event), deadline)
    assert hook.executor is not None
    invocation = Invocation(event=event, hook=hook, invocation_id=new_id(),
                            replay=_REPLAY.get())
    return await _guarded(hook, spec, hook.executor(invocation), deadline)


def _in_thread(hook: Hook, event: Event) -> Any:
    """Run a blocking hook on its worker thread. An exit it raises becomes its crash
    here: a GeneratorExit carried back through the thread's future escapes the
    awaiting coroutines' except clauses (CPython 3.11)."""
    try:
        return hook.fn(event)  # type: ignore[misc]
    except HOOK_EXITS as exc:
        raise crash(hook, exc) from None


async def _guarded(hook: Hook, spec: EventSpec, answer_of: Awaitable[Any],
                   deadline: float | None) -> Answer:
    """Await a hook's answer under its deadline; failures become values."""
    import asyncio

    try:
        async with asyncio.timeout_at(deadline):
            answer = await answer_of
    except TimeoutError:
        return None, HookTimeout(f"hook {hook.qualified_name} timed out after "
                                 f"{hook.timeout:g}s")
    except HookFailure as exc:
        return None, exc
    except HOOK_ERRORS as exc:
        return None, crash(hook, exc)
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise  # a real cancellation (the host, an ending answer): never swallowed
        # Nobody cancelled us: the hook awaited something else that was cancelled.
        # Its crash, so it fails closed and is recorded (docs/engine.md, Failures).
        return None, crash(hook, exc)
    return settle(hook, spec, answer)


def settle(hook: Hook, spec: EventSpec, answer: Any) -> Answer:
    """A hook's raw answer checked against its event: a decision, or a contract error."""
    if answer is None:
        return None, None
    try:
        return check_answer(hook, answer, spec), None
    except ContractError as exc:
        return None, exc
    except HOOK_ERRORS as exc:  # reading a strange answer failed: the hook's fault
        return None, crash(hook, exc)


def crash(hook: Hook, exc: BaseException) -> HookCrash:
    fn: Any = hook.fn
    while hasattr(fn, "__wrapped__"):  # the handler under breaker and pin-check wrappers
        fn = fn.__wrapped__
    where = crash_site(exc, getattr(getattr(fn, "__code__", None), "co_filename", None))
    return HookCrash(f"hook {hook.qualified_name} raised {type(exc).__name__}: {exc}"
                     + (f" (at {where})" if where else ""))


def crash_site(exc: BaseException, hook_file: str | None = None) -> str | None:
    """``file:line`` of the hook's own frame in ``exc``'s traceback: the deepest frame
    in ``hook_file`` if given, else the deepest one outside Interlock's package."""
    import sysconfig
    import traceback

    package = __file__.rpartition("/")[0].rpartition("/")[0] + "/"  # src/interlock/
    skip = (package, sysconfig.get_paths()["stdlib"], "<")
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == hook_file if hook_file else \
                not frame.filename.startswith(skip):
            return f"{frame.filename}:{frame.lineno}"
    return None

# Enum members as module constants: a class attribute lookup on an enum costs
# ~65 ns on Python 3.11, and check_answer runs for every hook that answers.
_OBSERVE, _MODIFY, _VERDICT = Kind.OBSERVE, Verdict.MODIFY, Verdict
_ALWAYS_ACCEPTED = (Verdict.NONE, Verdict.STOP)
_REWRITES = frozenset({Verdict.MODIFY, Verdict.APPROVE})
"""The verdicts whose changes a modifier's answer applies (an approval may carry
the rewrite it approves)."""


def _malformed(answer: Decision) -> str | None:
    """What is wrong with a decision's field types, if anything (str subclasses
    are fine)."""
    if not isinstance(answer.verdict, Verdict):
        return (f"verdict is {type(answer.verdict).__name__} {answer.verdict!r}; build "
                "decisions with block(...), approve(...), modify(...) and the rest")
    for name in ("reason", "hint", "context"):
        value = getattr(answer, name)
        if value is not None and not isinstance(value, str):
            return f"{name} must be a string, not {type(value).__name__}"
    if answer.changes is not None and not (
            isinstance(answer.changes, dict) and all(isinstance(k, str) for k in answer.changes)):
        return "changes must be a dict of field name to new value"
    return None


def _from_dict(hook: Hook, answer: Any) -> Decision | None:
    """A handler's dict answer read as a wire answer, the one rule that workers,
    HTTP and command hooks follow too (docs/wire-contract.md); anything else that
    is not a decision is a contract error."""
    if not isinstance(answer, dict):
        raise ContractError(
            f"hook {hook.qualified_name} returned {type(answer).__name__}; return None, "
            "a decision (block(...), modify(...), ...) or a wire answer dict")
    try:
        return decode_wire(answer)
    except ValueError as exc:
        raise ContractError(f"hook {hook.qualified_name} returned a dict that is not a "
                            f"wire answer: {exc}") from None


def check_answer(hook: Hook, answer: Any, spec: EventSpec) -> Decision | None:
    """Validate a hook's answer against what its event accepts."""
    return answer_checker(spec)(hook, answer)


AnswerCheck = Callable[[Hook, Any], Decision | None]
"""``check(hook, answer)``: the answer as a decision, or ContractError."""

_CHECKERS: dict[str, tuple[EventSpec, AnswerCheck]] = {}


def answer_checker(spec: EventSpec) -> AnswerCheck:
    """check_answer for one event, with what the event accepts read once.

    The dispatch loop binds it once per plan: it runs for every hook that
    answers, and reading the spec's fields on each call cost ~30% of it.
    """
    known = _CHECKERS.get(spec.name)
    if known is None or known[0] is not spec:
        known = _CHECKERS[spec.name] = (spec, _checker(spec))
    return known[1]


def _checker(spec: EventSpec) -> AnswerCheck:
    observe = spec.kind is _OBSERVE
    accepted = spec.accepts | frozenset(_ALWAYS_ACCEPTED)
    takes_context = spec.context
    name = spec.name
    # The verdicts a well-formed decision may have here. Anything else, or a
    # field of the wrong type, takes the slow path below, which finds and
    # words the problem.
    fine = frozenset(Verdict if observe else accepted)

    def check(hook: Hook, answer: Any) -> Decision | None:
        if answer.__class__ is not Decision:
            if answer is None:
                return None
            if not isinstance(answer, Decision):
                answer = _from_dict(hook, answer)
                if answer is None:
                    return None
        decision: Decision = answer
        verdict = decision.verdict
        context = decision.context
        # Decision is not validated when built (block(123) is a Decision too);
        # hosts format these fields, so a wrong type is the hook's error, here.
        if (verdict.__class__ is _VERDICT and verdict in fine
                and (context is None or (context.__class__ is str and takes_context))
                and (decision.reason is None or decision.reason.__class__ is str)
                and (decision.hint is None or decision.hint.__class__ is str)
                and (decision.changes is None or decision.changes.__class__ is dict)
                and (verdict is not _MODIFY or hook.modifies or observe)
                and (not decision.changes or observe
                     or (hook.modifies and verdict in _REWRITES))):
            return decision
        return diagnose(hook, decision)

    def diagnose(hook: Hook, decision: Decision) -> Decision:
        verdict = decision.verdict
        context = decision.context
        problem = _malformed(decision)
        if problem is not None:
            raise ContractError(f"hook {hook.qualified_name} returned a malformed "
                                f"decision: {problem}")
        if observe:
            return decision  # a warning, recorded as ignored; never an effect
        if verdict is _MODIFY and not hook.modifies:
            raise ContractError(
                f"hook {hook.qualified_name} returned modify but is a check; declare "
                "`modifies = true` (modifies=True in code) so it runs in the modify phase"
            )
        if verdict not in accepted:
            raise ContractError(
                f"hook {hook.qualified_name} returned {verdict.value!r}, which "
                f"{name} does not accept (it accepts: "
                f"{', '.join(sorted(v.value for v in spec.accepts | {Verdict.STOP}))})"
            )
        if decision.changes and verdict not in ENDING and not (
                hook.modifies and verdict in _REWRITES):
            # Nothing would apply them: an approval would pass the call unchanged.
            raise ContractError(
                f"hook {hook.qualified_name} returned changes with {verdict.value!r}, which "
                + ("applies none; changes go with modify or approve" if hook.modifies else
                   "a check cannot make; declare `modifies = true` (modifies=True in code) "
                   "so it runs in the modify phase"))
        if context is not None and not takes_context:
            raise ContractError(
                f"hook {hook.qualified_name} returned context, which {name} does not take"
            )
        return decision

    return check


def timed(fn: Callable[[Hook, Event, EventSpec], Answer], hook: Hook, event: Event,
          spec: EventSpec) -> tuple[Decision | None, HookFailure | None, int]:
    """``fn(hook, event, spec)`` with its latency in ns appended."""
    t0 = time.perf_counter_ns()
    decision, failure = fn(hook, event, spec)
    return decision, failure, time.perf_counter_ns() - t0


async def timed_call(hook: Hook, event: Event, spec: EventSpec
                     ) -> tuple[Decision | None, HookFailure | None, int]:
    """``call`` with its latency in ns appended (observers run concurrently)."""
    t0 = time.perf_counter_ns()
    decision, failure = await call(hook, event, spec)
    return decision, failure, time.perf_counter_ns() - t0
