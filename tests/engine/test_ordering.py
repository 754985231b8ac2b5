"""Ordering (priority, source rank, registration order) and matchers."""

from __future__ import annotations

import pytest

from interlock import Engine, Hook, Source, approve
from interlock.engine.hooks import Matcher
from interlock.events import BeforeToolCall, Command, MessageReceived


def order_of(engine, event):
    seen = []
    for hook in engine.hooks:
        hook.fn = (lambda name: lambda ev: seen.append(name))(hook.name)
    engine.emit_sync(event)
    return seen


def test_priority_then_source_then_registration(engine):
    def noop(ev):
        return None

    for name, prio, source in [
        ("user-0", 0, Source.USER),
        ("proj-0", 0, Source.PROJECT),
        ("code-0a", 0, Source.CODE),
        ("managed-0", 0, Source.MANAGED),
        ("code-0b", 0, Source.CODE),
        ("bundled-minus", -1, Source.BUNDLED),
        ("managed-5", 5, Source.MANAGED),
    ]:
        engine.register(Hook(name=name, events=("before_tool_call",), fn=noop, priority=prio,
                             source=source))
    seen = order_of(engine, BeforeToolCall(tool_name="x"))
    assert seen == ["bundled-minus", "managed-0", "code-0a", "code-0b", "proj-0", "user-0",
                    "managed-5"]


def test_matchers_are_anchored_full_matches(engine):
    hits = []
    engine.on("before_tool_call", lambda ev: hits.append(ev.tool_name), matcher="read")
    for name in ["read", "read_and_exec", "unread", "READ"]:
        engine.emit_sync(BeforeToolCall(tool_name=name))
    assert hits == ["read"]


def test_matcher_alternatives_and_wildcards(engine):
    hits = []
    engine.on("before_tool_call", lambda ev: hits.append(ev.tool_name),
              matcher="write_file|edit_file")
    engine.on("before_tool_call", lambda ev: hits.append("mcp:" + ev.tool_name),
              matcher="mcp__github__*")
    for name in ["write_file", "edit_file", "mcp__github__create_issue", "mcp__gitlab__x",
                 "write_files"]:
        engine.emit_sync(BeforeToolCall(tool_name=name))
    assert hits == ["write_file", "edit_file", "mcp:mcp__github__create_issue"]


def test_command_matchers(engine):
    hits = []
    engine.on("command", lambda ev: hits.append("all:" + ev.command), matcher="command:*")
    engine.on("command", lambda ev: hits.append("reset"), matcher="command:reset")
    engine.emit_sync(Command(command="reset"))
    engine.emit_sync(Command(command="model", arguments="gpt"))
    assert hits == ["all:reset", "reset", "all:model"]


def test_payload_field_matchers(engine):
    hits = []
    engine.on("message_received", lambda ev: hits.append(ev.platform),
              matcher={"platform": "telegram|discord"})
    for platform in ["telegram", "slack", "discord"]:
        engine.emit_sync(MessageReceived(text="hi", platform=platform))
    assert hits == ["telegram", "discord"]


def test_matcher_parse_everything():
    assert Matcher.parse("*") is None
    assert Matcher.parse(None) is None
    m = Matcher.parse("Bash.*")
    assert m is not None
    assert m.subject.fullmatch("BashOutput")


def test_unregister_with_handle(engine):
    handle = engine.on("before_tool_call", lambda ev: approve("x"))
    assert engine.emit_sync(BeforeToolCall(tool_name="t")).verdict.value == "approve"
    handle.unregister()
    assert engine.emit_sync(BeforeToolCall(tool_name="t")).verdict.value == "none"


def test_decorator_registration_returns_function(engine):
    @engine.on("before_tool_call", priority=3)
    def guard(ev):
        return approve("fine")

    assert guard(None).verdict.value == "approve"
    assert engine.hooks[0].name.endswith("guard")
    assert engine.hooks[0].priority == 3


def test_revision_increments_on_every_change(engine):
    start = engine.revision
    handle = engine.on("before_tool_call", lambda ev: None)
    handle.unregister()
    assert engine.revision == start + 2


def test_unknown_event_gets_did_you_mean(engine):
    import pytest

    from interlock import UnknownEventError

    with pytest.raises(UnknownEventError, match="before_tool_call"):
        engine.on("before_tool_cal", lambda ev: None)


def test_a_matcher_that_could_never_match_is_refused_at_registration(engine):
    from interlock import RegistrationError

    with pytest.raises(RegistrationError, match=r"session_start has none"):
        engine.on(["before_tool_call", "session_start"], lambda ev: None, matcher="terminal")
    with pytest.raises(RegistrationError, match=r"'plattform' is not a field of message_received"):
        engine.on("message_received", lambda ev: None, matcher={"plattform": "telegram"})
    assert engine.hooks == ()
    # What can match is still accepted: a subject on tool events, a common field anywhere.
    engine.on(["before_tool_call", "after_tool_call"], lambda ev: None, matcher="terminal")
    engine.on("session_start", lambda ev: None, matcher={"platform": "cli"})
    assert len(engine.hooks) == 2


def test_a_refusal_stand_in_keeps_an_old_guards_matcher_without_being_refused():
    # A baseline recorded before matchers were checked may hold a matcher on an
    # event with no tool name; the stand-in that replaces a withheld guard must
    # still be built (else every gate locks down), covering what the guard did.
    from interlock.config.build import refusal_hook
    from interlock.engine.errors import FailureMode
    from interlock.testing import fire

    stand_in = refusal_hook("guard", Source.PROJECT, ("before_tool_call", "before_llm_call"),
                            "terminal", FailureMode.UNAPPROVED, "approve it")
    engine = Engine()
    engine.replace_hooks([stand_in])
    assert fire(engine, "before_tool_call", tool_name="terminal", args={}).blocked
    assert not fire(engine, "before_tool_call", tool_name="read_file", args={}).blocked
    assert not fire(engine, "before_llm_call", model="m", messages=[]).blocked
    engine.close()


def test_qualified_name_follows_the_name_and_source():
    import dataclasses

    hook = Hook(name="a", events=("before_tool_call",), fn=lambda event: None)
    assert hook.qualified_name == "code:a"
    hook.name = "b"
    hook.source = Source.PROJECT
    assert hook.qualified_name == "project:b"
    assert dataclasses.replace(hook, name="c").qualified_name == "project:c"
