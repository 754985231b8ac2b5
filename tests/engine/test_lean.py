"""The fast path decides exactly as the dispatch loop does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from interlock import Decision, Engine, Verdict, approve, ask, block, context, modify, respond
from interlock.engine.loop import drive_sync
from interlock.events import BeforeToolCall
from interlock.testing import RecordingSink

BEHAVIOURS = {
    "none": lambda e: None,
    "approve": lambda e: approve("ok"),
    "ask": lambda e: ask("sure?"),
    "block": lambda e: block("no", hint="h"),
    "respond": lambda e: respond({"cached": True}),
    "context": lambda e: context("note"),
    "block_ctx": lambda e: block("no", context="why"),
    "garbage": lambda e: {"decision": "allow"},
    "raise": lambda e: 1 / 0,
}


def _mutate(e):
    e.args["command"] = "ls"


MODIFIER_BEHAVIOURS = {
    **BEHAVIOURS,
    "modify": lambda e: modify(args={**e.args, "command": "ls -l"}),
    "modify_bad": lambda e: modify(args="not a dict"),
    "approve_modify": lambda e: Decision(verdict=Verdict.APPROVE, reason="ok",
                                         changes={"args": {"command": "pwd"}}),
}


def build(kinds: list[tuple[str, str]], modifiers: list[tuple[str, str]] = ()
          ) -> tuple[Engine, RecordingSink]:
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    for i, (kind, on_error) in enumerate(modifiers):
        fn = _mutate if kind == "mutate" else MODIFIER_BEHAVIOURS[kind]
        engine.on("before_tool_call", fn, name=f"m{i}-{kind}", on_error=on_error,
                  modifies=True)
    for i, (kind, on_error) in enumerate(kinds):
        fn = _mutate if kind == "mutate" else BEHAVIOURS[kind]
        engine.on("before_tool_call", fn, name=f"h{i}-{kind}", on_error=on_error)
    return engine, sink


def shape(outcome, event):
    data = outcome.to_dict(event)
    for record in data["hooks"]:
        record.pop("latency_ms", None)
    return data, outcome.final(event).args


@settings(max_examples=250, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([*BEHAVIOURS, "mutate"]),
                          st.sampled_from(["open", "closed"])), min_size=1, max_size=6),
       st.lists(st.tuples(st.sampled_from([*MODIFIER_BEHAVIOURS, "mutate"]),
                          st.sampled_from(["open", "closed"])), max_size=3))
def test_lean_path_equals_general_path(kinds, modifiers):
    lean_engine, lean_sink = build(kinds, modifiers)
    general_engine, general_sink = build(kinds, modifiers)
    event_a = BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"}, session_id="s")
    event_b = BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"}, session_id="s")
    plan = general_engine._set.plan(event_b)
    assert plan is not None
    assert plan.lean
    # Both engines have a sink, so emit_sync would take the (timed) loop:
    # drive the fast path and the loop directly.
    lean_plan = lean_engine._set.plan(event_a)
    assert lean_plan is not None
    lean = lean_engine._fast(event_a, lean_plan)
    general = drive_sync(general_engine._steps(event_b, plan))
    assert shape(lean, event_a) == shape(general, event_b)
    assert [(f.hook, f.mode) for f in lean_sink.failures] == \
        [(f.hook, f.mode) for f in general_sink.failures]


def test_plans_with_anything_else_are_not_lean():
    for options in ({"shadow": True}, {"background": True}):
        engine = Engine()
        engine.on("before_tool_call", lambda e: None, **options)
        plan = engine._set.plan(BeforeToolCall(tool_name="t"))
        assert plan is not None
        assert not plan.lean, options

    async def suspends(e):
        return None

    engine = Engine()
    engine.on("before_tool_call", suspends)
    plan = engine._set.plan(BeforeToolCall(tool_name="t"))
    assert plan is not None
    assert not plan.lean


def test_plain_sync_modifiers_are_lean_and_each_runs_once():
    # A modifier that answers hands the dispatch to the loop, which carries on
    # from it: no hook runs twice (hooks may count or log their calls).
    calls: list[str] = []
    engine = Engine()
    engine.on("before_tool_call", lambda e: calls.append("m0"), name="m0", modifies=True)
    engine.on("before_tool_call",
              lambda e: calls.append("m1") or modify(args={"command": "ls"}),
              name="m1", modifies=True)
    engine.on("before_tool_call", lambda e: calls.append("c0"), name="c0")
    event = BeforeToolCall(tool_name="t", args={"command": "rm -rf /"})
    plan = engine._set.plan(event)
    assert plan is not None
    assert plan.lean
    outcome = engine.emit_sync(event)
    assert calls == ["m0", "m1", "c0"]
    assert outcome.final(event).args == {"command": "ls"}
    assert [r.hook.name for r in outcome.raw] == ["m0", "m1", "c0"]


def test_a_quiet_hooks_record_cannot_be_changed_by_a_reader():
    # The fast path shares the record of a hook with no opinion between
    # dispatches: it must be read-only, or one reader could rewrite others.
    engine = Engine()
    engine.on("before_tool_call", lambda e: None, name="quiet")
    first = engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "ls"}))
    second = engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "ls"}))
    assert [r.status.value for r in second.raw] == ["none"]
    import pytest

    with pytest.raises(AttributeError):
        first.raw[0].status = second.raw[0].status.APPLIED  # type: ignore[misc]
    assert second.to_dict()["hooks"][0]["status"] == "none"


def test_a_failed_hook_leaves_nothing_behind_once_its_outcome_is_gone():
    # A failure raised inside a dispatch has a traceback holding the
    # dispatch's frames, which hold its results, which hold the failure. The
    # run and the outcome are not tracked by the garbage collector, so that
    # cycle leaked every failed hook's frames, events and answers (on the
    # timed path, which every server takes). Stored failures drop their
    # tracebacks.
    import gc
    import logging
    import weakref

    from interlock import Decision, Verdict

    class Marker:
        pass

    refs: list[weakref.ref[Marker]] = []

    def malformed(event):
        marker = Marker()
        refs.append(weakref.ref(marker))
        return Decision(verdict=Verdict.BLOCK, reason=marker)  # type: ignore[arg-type]

    logging.disable(logging.WARNING)  # a captured log record would hold the failure
    try:
        for timed in (False, True):
            engine = Engine(timed=timed)
            engine.on("before_tool_call", malformed, name="malformed", on_error="open")
            outcome = engine.emit_sync(BeforeToolCall(tool_name="terminal",
                                                      args={"command": "ls"}))
            assert "malformed" in str(outcome.raw[0].failure)
            del outcome
            engine.close()
    finally:
        logging.disable(logging.NOTSET)
    gc.collect()
    assert len(refs) == 2
    assert all(r() is None for r in refs)


def test_a_hook_failing_while_the_host_handles_an_error_leaves_the_hosts_traceback():
    # A failure raised while the host is inside `except` is chained to the
    # host's exception; dropping the failure's traceback must not touch it.
    from interlock.engine.errors import HookTimeout

    engine = Engine()

    def fails(event):
        raise HookTimeout("the hook gave up waiting on its backend")

    engine.on("before_tool_call", fails, name="fails", on_error="open")

    def tool_step():
        raise OSError("disk full")

    try:
        tool_step()
    except OSError as exc:
        before = len(_frames(exc))
        outcome = engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "ls"}))
        after = len(_frames(exc))
    assert outcome.raw[0].failure is not None
    assert after == before == 2


def _frames(exc):
    import traceback

    return traceback.extract_tb(exc.__traceback__)


def test_hosts_that_keep_outcomes_or_results_on_themselves_leak_nothing():
    # A hook that is a bound method leads back to its host; a host that keeps
    # the last outcome, or the per-hook results, closes a cycle through them.
    # Every part of it must be visible to the garbage collector.
    import gc
    import weakref

    from interlock import approve

    class Host:
        def __init__(self, answer):
            self.answer = answer
            self.engine = Engine()
            self.engine.on(BeforeToolCall, self.check)

        def check(self, event):
            return self.answer

    def one(answer, keep):
        host = Host(answer)
        outcome = host.engine.emit_sync(BeforeToolCall(tool_name="t", args={"command": "ls"}))
        if keep == "outcome":
            host.last = outcome
        elif keep == "results":
            host.seen = list(outcome.raw)
        host.engine.close()
        return weakref.ref(host), weakref.ref(host.engine)

    refs = [ref for answer in (None, approve("ok")) for keep in ("nothing", "outcome", "results")
            for ref in one(answer, keep)]
    gc.collect()
    assert [r() is None for r in refs] == [True] * len(refs)


def test_the_fast_paths_records_equal_the_loops():
    from interlock.engine.outcome import HookResult, Status

    fast, timed = Engine(), Engine(timed=True)
    records = []
    for engine in (fast, timed):
        hook = engine.on("before_tool_call", lambda e: None, name="quiet").hook
        outcome = engine.emit_sync(BeforeToolCall(tool_name="t", args={"command": "ls"}))
        records.append([(r.hook.name, r.decision, r.failure, r.status) for r in outcome.raw])
        if engine is fast:
            assert list(outcome.raw) == [HookResult(hook, None, None, 0, Status.NONE)]
            assert outcome.raw[0] == HookResult(hook, None, None, 0, Status.NONE)
    assert records[0] == records[1]


def test_records_made_when_first_read_are_the_same_whichever_is_read_first():
    # The merge folds answers as they come; records and contexts are made
    # from them when first read (docs/engine.md, Merge).
    from interlock import ask

    engine = Engine()
    for i, fn in enumerate([lambda e: context("a"), lambda e: approve("ok"),
                            lambda e: None, lambda e: ask("sure?"), lambda e: context("b")]):
        engine.on("before_tool_call", fn, name=f"h{i}")
    event = BeforeToolCall(tool_name="terminal", args={"command": "ls"})
    first, second = engine.emit_sync(event), engine.emit_sync(event)
    contexts = list(first.contexts)
    statuses = [(r.hook.name, r.status.value) for r in first.raw]
    assert statuses == [(r.hook.name, r.status.value) for r in second.raw]
    assert contexts == list(second.contexts) == [("code:h0", "a"), ("code:h4", "b")]
    assert statuses == [("h0", "applied"), ("h1", "superseded"), ("h2", "none"),
                        ("h3", "applied"), ("h4", "applied")]
    assert first.verdict.value == "ask"
    assert first.hook is not None
    assert first.hook.name == "h3"
    assert first.raw is first.raw  # made once
