"""Modify phase, check phase, re-validation, immutability (rules 1, 2, 5)."""

from __future__ import annotations

import asyncio

import pytest

from interlock import Verdict, approve, block, modify
from interlock.engine.decisions import Decision
from interlock.events import AfterLlmCall, BeforeToolCall, ModelSelect


def tool(engine, args=None):
    return engine.emit_sync(BeforeToolCall(tool_name="terminal",
                                           args=args or {"command": "ls"}, session_id="s"))


def test_modifiers_chain_in_order_and_checks_see_final_payload(engine):
    seen = []
    engine.on("before_tool_call",
              lambda ev: modify(args={"command": ev.args["command"] + " -a"}),
              modifies=True, priority=2, name="second")
    engine.on("before_tool_call",
              lambda ev: modify(args={"command": ev.args["command"] + " -l"}),
              modifies=True, priority=1, name="first")
    # a check registered with a lower priority still runs after every modifier
    engine.on("before_tool_call", lambda ev: seen.append(ev.args["command"]), priority=-100)
    out = tool(engine)
    assert out.final().args == {"command": "ls -l -a"}
    assert out.changes == {"args": {"command": "ls -l -a"}}
    assert seen == ["ls -l -a"]


def test_modify_replaces_the_whole_field(engine):
    engine.on("before_tool_call", lambda ev: modify(args={"path": "x"}), modifies=True)
    out = tool(engine, {"command": "ls", "timeout": 5})
    assert out.final().args == {"path": "x"}  # replaced, not merged key by key


def test_tool_name_never_changes(engine, sink):
    engine.on("before_tool_call", lambda ev: modify(tool_name="read_file"), modifies=True,
              on_error="open", name="sneaky")
    out = tool(engine)
    assert out.final().tool_name == "terminal"
    assert sink.failures[0].mode.value == "contract"
    assert "tool_name" in sink.failures[0].error


def test_unknown_field_is_contract_error(engine, sink):
    engine.on("before_tool_call", lambda ev: modify(result="x"), modifies=True,
              on_error="open")
    tool(engine)
    assert "does not let hooks change" in sink.failures[0].error


def test_revalidation_failure_is_the_hooks_failure(engine, sink):
    def schema(ev):
        if not isinstance(ev.args.get("command"), str):
            raise ValueError("args.command must be a string")

    engine.add_validator("before_tool_call", schema)
    engine.on("before_tool_call", lambda ev: modify(args={"command": 42}), modifies=True,
              name="bad-mod")
    out = tool(engine)
    # fail-closed by default on a gate: the invalid change blocks, it is never applied
    assert out.verdict is Verdict.BLOCK
    assert "bad-mod" in out.reason
    assert out.payload is None
    assert "args.command must be a string" in sink.failures[0].error


def test_type_revalidation_from_the_catalog(engine, sink):
    engine.on("model_select", lambda ev: modify(model=123), modifies=True, on_error="open")
    out = engine.emit_sync(ModelSelect(model="gpt"))
    assert out.final().model == "gpt"
    assert "invalid" in sink.failures[0].error


def test_check_that_modifies_is_a_contract_error(engine, sink):
    engine.on("before_tool_call", lambda ev: modify(args={"command": "rm"}), name="check")
    out = tool(engine)
    assert out.verdict is Verdict.BLOCK  # closed by default on a gate
    assert out.final().args == {"command": "ls"}
    assert "modifies = true" in sink.failures[0].error


def test_in_place_mutation_is_detected_and_undone(engine, sink):
    def mutate(ev):
        ev.args["command"] = "rm -rf /"
        return approve("looks fine")

    engine.on("before_tool_call", mutate, name="mutator", on_error="open")
    later = []
    engine.on("before_tool_call", lambda ev: later.append(dict(ev.args)), name="after")
    out = tool(engine)
    assert sink.failures[0].mode.value == "contract"
    assert "in place" in sink.failures[0].error
    assert out.final().args == {"command": "ls"}
    # The check phase ran again on the restored payload, so the last word of
    # every later check is about the real payload.
    assert later[-1] == {"command": "ls"}
    assert out.verdict is Verdict.NONE  # the mutator's approve is void


def test_in_place_mutation_by_modifier_fails_closed(engine):
    def mutate(ev):
        ev.args["command"] = "rm -rf /"

    engine.on("before_tool_call", mutate, modifies=True, name="m")
    out = tool(engine)
    assert out.blocked
    assert out.final().args == {"command": "ls"}


def test_decision_the_event_does_not_accept_is_reported(engine, sink):
    engine.on("after_llm_call", lambda ev: approve("?"), name="wrong", on_error="open")
    out = engine.emit_sync(AfterLlmCall(text="hi"))
    assert out.verdict is Verdict.NONE
    assert sink.failures[0].mode.value == "contract"
    assert "does not accept" in sink.failures[0].error


def test_garbage_answer_is_a_contract_error_and_blocks_closed(engine, sink):
    engine.on("before_tool_call", lambda ev: {"decision": "allow"}, name="garbage")
    out = tool(engine)
    assert out.blocked
    assert "unknown decision 'allow'" in sink.failures[0].error


@pytest.mark.parametrize("timed", [False, True])
def test_a_dict_answer_with_a_key_that_is_not_text_is_a_contract_error(timed):
    # Keys of mixed types cannot be sorted for the message; that must still
    # be the hook's contract error, never an exception out of emit_sync.
    from interlock import Engine

    engine = Engine(timed=timed)
    engine.on("before_tool_call", lambda ev: {"decision": "block", 1: "x", "extra": 2},
              name="mixed")
    out = tool(engine)
    engine.close()
    assert out.blocked
    assert out.raw[0].failure is not None
    assert out.raw[0].failure.mode.value == "contract"
    assert "unknown answer field(s)" in str(out.raw[0].failure)


@pytest.mark.parametrize("timed", [False, True])
def test_an_answer_that_breaks_when_read_is_the_hooks_failure_not_the_hosts(timed):
    from interlock import Engine

    class Strange(dict):
        def get(self, *args):
            raise RuntimeError("read me and weep")

    engine = Engine(timed=timed)
    engine.on("before_tool_call", lambda ev: Strange(decision="block"), name="strange")
    out = tool(engine)
    engine.close()
    assert out.blocked  # fails closed, as any crash does
    assert "read me and weep" in str(out.raw[0].failure)


def test_a_non_answer_value_is_a_contract_error(engine, sink):
    engine.on("before_tool_call", lambda ev: "block", name="text")
    assert tool(engine).blocked
    assert "returned str" in sink.failures[0].error


def test_a_dict_answer_means_what_it_means_from_a_worker(engine, sink):
    # One rule for Python handlers, workers and shell JSON: a dict is a wire answer.
    engine.on("before_tool_call", lambda ev: {"decision": "block", "reason": "no rm"},
              name="d")
    out = tool(engine)
    assert out.blocked
    assert out.reason == "no rm"
    assert sink.failures == []


def test_a_dict_modify_answer_rewrites_like_a_worker_one(engine):
    engine.on("before_tool_call",
              lambda ev: {"decision": "modify", "changes": {"args": {"command": "ls -l"}}},
              modifies=True, name="m")
    assert tool(engine).final().args == {"command": "ls -l"}


def test_an_empty_dict_answer_is_no_opinion(engine, sink):
    engine.on("before_tool_call", lambda ev: {}, name="empty")
    out = tool(engine)
    assert not out.blocked
    assert sink.failures == []


def test_a_dict_answer_still_follows_the_event_contract(engine, sink):
    engine.on("before_tool_call",
              lambda ev: {"decision": "modify", "changes": {"args": {}}}, name="check")
    assert tool(engine).blocked
    assert "declare `modifies = true`" in sink.failures[0].error


@pytest.mark.parametrize(("answer", "problem"), [
    (lambda: Decision(verdict="block", reason="no"), "verdict is str 'block'"),
    (lambda: block(123), "reason must be a string, not int"),
    (lambda: Decision(verdict=Verdict.BLOCK, reason="no", hint=["x"]), "hint must be a string"),
    (lambda: approve("fine", context={"a": 1}), "context must be a string, not dict"),
])
def test_a_decision_with_wrong_field_types_is_a_contract_error(engine, sink, answer, problem):
    # Built without validation, such a decision would break the host where it
    # formats the block (tool_block_error, to_dict): it fails here instead.
    engine.on("before_tool_call", lambda ev: answer(), name="sloppy")
    out = tool(engine)
    assert out.blocked  # a failed fail-closed check blocks
    assert "did not answer (contract)" in out.reason
    assert problem in sink.failures[0].error
    assert out.tool_block_error()["tool_name"] == "terminal"
    assert out.to_dict()["decision"] == "block"


def test_modifier_block_ends_before_checks(engine):
    ran = []
    engine.on("before_tool_call", lambda ev: block("m"), modifies=True, name="m")
    engine.on("before_tool_call", lambda ev: ran.append(1))
    assert tool(engine).blocked
    assert ran == []


def test_modifies_requires_an_event_with_mutable_fields(engine):
    from interlock import RegistrationError

    with pytest.raises(RegistrationError, match="none of its events"):
        engine.on("task_created", lambda ev: None, modifies=True)


def test_a_mutation_in_a_sync_check_phase_reruns_it_and_the_guard_still_blocks(engine, sink):
    def mutate(ev):
        ev.args["command"] = "ls"  # hides the dangerous command from the guard

    def guard(ev):
        return block("no rm") if "rm" in ev.args["command"] else None

    engine.on("before_tool_call", mutate, name="mutator", on_error="open", priority=-1)
    engine.on("before_tool_call", guard, name="guard")
    out = engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"}))
    assert out.blocked
    assert out.hook.name == "guard"
    assert out.final().args == {"command": "rm -rf /"}
    assert [f.hook for f in sink.failures] == ["code:mutator"]


@pytest.mark.parametrize("lean", [True, False])
def test_a_rerun_check_phase_records_each_failure_once(engine, sink, lean):
    # A failing check before an in-place mutator runs twice (the check phase
    # runs again on the restored payload), but it failed in one dispatch: one
    # dead letter, matching the one audited result.
    def broken(ev):
        raise RuntimeError("broken check")

    def mutate(ev):
        ev.args["command"] = "ls"

    engine.on("before_tool_call", broken, name="broken", on_error="open", priority=-2)
    engine.on("before_tool_call", mutate, name="mutator", on_error="open", priority=-1)
    if not lean:  # a shadow hook sends the plan through the general sync driver
        engine.on("before_tool_call", lambda ev: None, name="watcher", shadow=True)
    plan = engine._entries[BeforeToolCall]
    assert plan.lean is lean
    out = engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"}))
    assert sorted(f.hook for f in sink.failures) == ["code:broken", "code:mutator"]
    assert [r.hook for r in out.hooks if r.error] == ["code:broken", "code:mutator"]


def test_a_failure_without_a_mutation_is_still_recorded_once(engine, sink):
    engine.on("before_tool_call", lambda ev: 1 / 0, name="broken", on_error="open")
    out = tool(engine)
    assert [f.hook for f in sink.failures] == ["code:broken"]
    assert not out.blocked


def _guard(ev):
    return block("no rm") if "rm" in ev.args["command"] else None


async def _async_guard(ev):
    await asyncio.sleep(0.02)  # still running while the mutator is
    return _guard(ev)


async def _mutate_then_wait(ev):
    ev.args["command"] = "ls"  # before its first await
    await asyncio.sleep(0)


async def _wait_then_mutate(ev):
    await asyncio.sleep(0)
    ev.args["command"] = "ls"  # while the async guard is still looking


@pytest.mark.parametrize(("mutator", "guard"), [
    (_mutate_then_wait, _guard),
    (_wait_then_mutate, _async_guard),
    (_mutate_then_wait, _async_guard),
])
async def test_an_async_check_that_mutates_cannot_hide_the_payload_from_a_guard(
        engine, sink, mutator, guard):
    # The guard fails open, so only its own judgment of the real payload can
    # block: it must see "rm -rf /", and the mutator alone is blamed, once.
    engine.on("before_tool_call", mutator, name="mutator", on_error="open", priority=-1)
    engine.on("before_tool_call", guard, name="guard", on_error="open")
    out = await engine.emit(BeforeToolCall(tool_name="terminal",
                                           args={"command": "rm -rf /"}))
    assert out.blocked
    assert out.hook.name == "guard"
    assert out.final().args == {"command": "rm -rf /"}
    assert [f.hook for f in sink.failures] == ["code:mutator"]
    assert "in place" in sink.failures[0].error


def test_context_on_an_event_that_takes_none_is_a_contract_error(engine, sink):
    from interlock import context

    engine.on("after_llm_call", lambda ev: context("remember this"), name="chatty",
              on_error="open")
    out = engine.emit_sync(AfterLlmCall(text="hi"))
    assert out.verdict is Verdict.NONE
    assert out.contexts == ()
    assert sink.failures[0].mode.value == "contract"
    assert "returned context, which after_llm_call does not take" in sink.failures[0].error


@pytest.mark.slow
async def test_a_tainted_check_phase_does_not_wait_for_a_hung_check_before_rerunning(
        engine, sink):
    seen = []
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def hung(ev):
        try:
            await asyncio.sleep(30)
        finally:  # cancelled, or closed if cancelled before it was resumed
            seen.append(loop.time() - started)

    engine.on("before_tool_call", _mutate_then_wait, name="mutator", on_error="open",
              priority=-1)
    engine.on("before_tool_call", hung, name="hung", on_error="open", timeout=2.0)
    out = await engine.emit(BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"}))
    # The first pass was void once the mutation showed: its hung check was
    # cancelled at once, not after its 2 s timeout; only the ordered rerun
    # waited for that timeout.
    assert len(seen) == 2
    assert seen[0] < 1.0 <= seen[1]
    assert sorted(f.hook for f in sink.failures) == ["code:hung", "code:mutator"]
    assert {f.hook: f.mode.value for f in sink.failures}["code:hung"] == "timeout"
    assert out.final().args == {"command": "rm -rf /"}


@pytest.mark.parametrize("lean", [True, False])
@pytest.mark.parametrize(("verdict", "modifies"), [(Verdict.APPROVE, False),
                                                   (Verdict.NONE, False),
                                                   (Verdict.NONE, True),
                                                   (Verdict.ASK, True)])
def test_a_rewrite_that_nothing_applies_is_a_contract_error(verdict, modifies, lean):
    # Only a modifier's modify or approve applies changes (docs/engine.md, Phases of
    # a gate event): an approval of a rewritten call must not approve the original.
    from interlock import Engine

    engine = Engine(timed=not lean)  # untimed: the fast path; timed: the loop
    engine.on("before_tool_call", lambda ev: Decision(
        verdict=verdict, changes={"args": {"command": "ls -l"}}), name="h", modifies=modifies,
        on_error="open")
    out = tool(engine, {"command": "rm -rf /"})
    assert out.verdict is Verdict.NONE
    [record] = out.hooks
    assert record.failure == "contract"
    assert "changes" in (record.error or "")
    assert out.final().args == {"command": "rm -rf /"}


def test_a_block_that_carries_changes_still_blocks(engine):
    engine.on("before_tool_call", lambda ev: Decision(
        verdict=Verdict.BLOCK, reason="no", changes={"args": {"command": "ls -l"}}), name="h")
    assert tool(engine).verdict is Verdict.BLOCK
