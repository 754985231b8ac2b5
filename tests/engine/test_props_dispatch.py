"""Stateful property test: random hook mixes never let a blocked or failed-closed
call through, and never lose an audit record or a dead letter.

Hooks allow, block, modify, raise, hang, answer garbage or die (the last three
are real processes), fail open or closed, may be shadows, may be unapproved
(an approval gate raises ``HookFailure(mode=UNAPPROVED)``), and sit behind
circuit breakers that the sequence drives closed, open and half-open with a
manual clock.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from helpers.procs import ManualClock, ShellExecutor, settle
from interlock import Engine, OnError, block, modify
from interlock.engine.errors import FailureMode, HookFailure
from interlock.engine.hooks import Hook, Invocation
from interlock.events import make
from interlock.reliability import BreakerBook, BreakerKey, BreakerState, Policy, wrap
from interlock.reliability.sinks import AuditSink, DeadLetterSink
from interlock.store import open_store
from interlock.testing import RecordingSink

pytestmark = pytest.mark.slow

BEHAVIOURS = ("allow", "block", "modify", "raise", "hang", "garbage", "die")
FAILING = frozenset({"raise", "hang", "garbage", "die"})
HOOK = st.tuples(st.sampled_from(BEHAVIOURS), st.booleans(), st.sampled_from([True, True, False]),
                 st.sampled_from([False, False, False, True]))
"""(behaviour, fails closed, approved, shadow)"""
POLICY = Policy(timeout=0.05, retries=0, breaker_threshold=3, breaker_cooldown=60)


class Approval:
    """Outermost gate: an unapproved hook does not run; it fails (docs/configuration.md, Trust)."""

    def __init__(self, inner, spec) -> None:
        self.inner = inner
        self.spec = spec

    async def __call__(self, inv: Invocation):
        if not self.spec["approved"]:
            raise HookFailure(f"hook {inv.hook.qualified_name} is not approved",
                              mode=FailureMode.UNAPPROVED)
        return await self.inner(inv)


def in_process(behaviour: str):
    async def run(inv: Invocation):
        if behaviour == "block":
            return block("policy says no")
        if behaviour == "modify":
            return modify(args={**inv.event.args, "n": inv.event.args.get("n", 0) + 1})
        if behaviour == "raise":
            raise RuntimeError("hook bug")
        return None

    return run


class Dispatching(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        self.clock = ManualClock()
        self.book = BreakerBook(self.clock)
        self.recorder = RecordingSink()
        self.store = open_store(str(Path(self.dir.name) / "i.db"), interval=0.005)
        self.engine = Engine(sinks=[self.recorder, AuditSink(self.store),
                                    DeadLetterSink(self.store)])
        self.specs: list[dict] = []
        self.expected_audit = 0
        self.expected_letters = 0
        self.serial = 0

    def teardown(self) -> None:
        settle(self.engine)
        self.engine.close()
        self.store.close()
        self.dir.cleanup()

    def _build(self, spec: dict) -> Hook:
        behaviour = spec["behaviour"]
        inner = (ShellExecutor(behaviour) if behaviour in ("hang", "garbage", "die")
                 else in_process(behaviour))
        executor = Approval(wrap(inner, POLICY, clock=self.clock, breakers=self.book), spec)
        return Hook(name=spec["name"], events=("before_tool_call",), executor=executor,
                    on_error=spec["on_error"], shadow=spec["shadow"],
                    modifies=behaviour == "modify", digest=spec["name"] + "-v1",
                    timeout=5.0, kind="command")

    def _install(self) -> None:
        # a reload: new Hook objects, same definitions, so breakers carry over
        self.engine.replace_hooks([self._build(s) for s in self.specs])

    @initialize(hooks=st.lists(HOOK, min_size=1, max_size=3))
    def start_with_hooks(self, hooks):
        for h in hooks:
            self.add_hook(*h)

    @precondition(lambda self: len(self.specs) < 4)
    @rule(hook=HOOK)
    def another_hook(self, hook):
        self.add_hook(*hook)

    def add_hook(self, behaviour, closed, approved, shadow):
        self.serial += 1
        self.specs.append({"name": f"h{self.serial}_{behaviour}", "behaviour": behaviour,
                           "on_error": OnError.CLOSED if closed else OnError.OPEN,
                           "approved": approved, "shadow": shadow})
        self._install()

    @precondition(lambda self: self.specs)
    @rule(data=st.data())
    def remove_hook(self, data):
        self.specs.pop(data.draw(st.integers(0, len(self.specs) - 1)))
        self._install()

    @precondition(lambda self: self.specs)
    @rule(data=st.data())
    def toggle_approval(self, data):
        spec = self.specs[data.draw(st.integers(0, len(self.specs) - 1))]
        spec["approved"] = not spec["approved"]
        self._install()

    @rule(seconds=st.sampled_from([1.0, 30.0, 61.0]))
    def time_passes(self, seconds):
        self.clock.advance(seconds)

    @rule(times=st.integers(1, 4))
    def dispatch(self, times):
        for _ in range(times):
            self._dispatch_once()

    def _dispatch_once(self) -> None:
        active = [s for s in self.specs if not s["shadow"]]
        must_end = any(s["approved"] and s["behaviour"] == "block" for s in active) or any(
            s["on_error"] is OnError.CLOSED
            and (not s["approved"] or s["behaviour"] in FAILING) for s in active)
        for s in self.specs:
            key = BreakerKey("code", s["name"], s["name"] + "-v1")
            event(f"breaker {self.book.state(key).value}")
        before = len(self.recorder.failures)
        outcome = self.engine.emit_sync(
            make("before_tool_call", tool_name="terminal", args={"command": "ls"}))
        tool_ran = not outcome.ends
        event(f"outcome {outcome.verdict.value}")
        for r in outcome.raw:
            if r.failure is not None:
                event(f"failure {r.failure.mode.value}")
        # Never runs a call that a hook blocked or that a fail-closed hook failed on,
        # and never blocks one that nothing stopped.
        assert tool_ran == (not must_end), (self.specs, outcome.summary())
        for hook, decision, failure, _lat, status in outcome.raw:
            if status.value in ("shadow", "cancelled", "queued"):
                continue
            if decision is not None and decision.verdict == "block":
                assert not tool_ran
            if failure is not None and hook.on_error is OnError.CLOSED:
                assert not tool_ran
        self.expected_audit += len(outcome.raw)
        new_failures = self.recorder.failures[before:]
        assert len(new_failures) == sum(1 for r in outcome.raw if r.failure is not None)
        self.expected_letters += len(new_failures)

    @invariant()
    def nothing_is_lost(self):
        assert self.store.flush(10)
        counts = self.store.counts()
        assert counts["audit"] == self.expected_audit
        assert counts["dead_letters"] == self.expected_letters

    @invariant()
    def breakers_guard_only_failing_hooks(self):
        for spec in self.specs:
            state = self.book.state(BreakerKey("code", spec["name"], spec["name"] + "-v1"))
            if spec["behaviour"] not in FAILING:
                assert state is BreakerState.CLOSED, spec


Dispatching.TestCase.settings = settings(
    max_examples=100, stateful_step_count=15, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestDispatching = Dispatching.TestCase
