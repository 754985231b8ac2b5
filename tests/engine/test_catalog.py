"""The one table: every event, its payload, schemas, docs and aliases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from interlock import ConfigError, UnknownEventError, Verdict
from interlock.engine import catalog_docs
from interlock.engine.catalog import BY_NAME, SPECS, SYSTEMS, Kind, from_alias, spec
from interlock.events import EVENT_TYPES, BeforeToolCall, make, schema

ROOT = Path(__file__).resolve().parents[2]

EXPECTED_EVENTS = """session_start session_end session_reset session_finalize
before_agent_start agent_end user_input turn_start turn_end before_stop before_llm_call
after_llm_call llm_error before_tool_call after_tool_call tool_error tool_result_persist
permission_request permission_denied before_compaction after_compaction subagent_start
subagent_stop message_received before_message_send message_sent command task_created
task_completed model_select config_change file_changed cwd_changed notification
gateway_start gateway_stop""".split()  # noqa: SIM905 - reads like the catalog table

OBSERVE = {"session_end", "session_reset", "session_finalize", "agent_end", "turn_start",
           "turn_end", "permission_denied", "after_compaction", "message_sent", "file_changed",
           "cwd_changed", "notification", "gateway_start", "gateway_stop"}


def test_every_design_event_is_in_the_table_once():
    names = [s.name for s in SPECS]
    assert sorted(names) == sorted(EXPECTED_EVENTS)
    assert len(names) == len(set(names)) == 36


def test_gate_and_observe_split_matches_design():
    assert {s.name for s in SPECS if s.kind is Kind.OBSERVE} == OBSERVE


def test_modify_accepted_exactly_where_fields_are_changeable():
    for s in SPECS:
        assert (Verdict.MODIFY in s.accepts) == bool(s.mutable), s.name
        assert set(s.mutable) <= {f.name for f in s.fields}, s.name
        if s.kind is Kind.OBSERVE:
            assert not s.accepts
            assert not s.mutable
            assert not s.context
        if s.respond:
            assert Verdict.RESPOND in s.accepts


def test_tool_name_is_never_changeable():
    assert all("tool_name" not in s.mutable for s in SPECS)


def test_payloads_are_immutable_and_typed():
    ev = BeforeToolCall(tool_name="terminal", args={"command": "ls"})
    with pytest.raises(AttributeError):
        ev.tool_name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        BeforeToolCall(tool_name="t", bogus=1)  # type: ignore[call-arg]


def test_every_event_has_a_json_schema_and_a_class():
    for name in EXPECTED_EVENTS:
        sch = schema(name)
        assert "$defs" in sch or "properties" in sch
        assert EVENT_TYPES[name].name == name


def test_make_reports_field_and_fix():
    with pytest.raises(ConfigError) as info:
        make("before_tool_call", {"tool_name": 3}, source="payload.json")
    err = info.value
    assert err.file == "payload.json"
    assert err.field == "tool_name"
    assert "interlock events before_tool_call" in str(err)


def test_unknown_event_did_you_mean():
    with pytest.raises(UnknownEventError) as info:
        spec("before_tool_cal")
    assert info.value.suggestion == "before_tool_call"


def test_aliases_map_design_names():
    assert [s.name for s in from_alias("claude", "PreToolUse")] == ["before_tool_call"]
    assert [s.name for s in from_alias("hermes", "pre_tool_call")] == ["before_tool_call"]
    assert [s.name for s in from_alias("moltis", "MessageSending")] == ["before_message_send"]
    assert [s.name for s in from_alias("gemini", "BeforeTool")] == ["before_tool_call"]
    assert [s.name for s in from_alias("cursor", "beforeShellExecution")] == ["before_tool_call"]
    assert [s.name for s in from_alias("pi", "session_before_compact")] == ["before_compaction"]
    for s in SPECS:
        assert set(s.aliases) <= set(SYSTEMS)


def test_alias_lookup_finds_every_event_a_system_calls_so_in_catalog_order():
    from interlock.engine.catalog import names_in

    for system in SYSTEMS:
        names = {n for s in SPECS for n in names_in(system, s)} | {"NoSuchEvent"}
        for name in names:
            assert from_alias(system, name) == [s for s in SPECS if name in names_in(system, s)]
    found = from_alias("claude", "PreToolUse")
    found.clear()  # a caller's list is its own
    assert [s.name for s in from_alias("claude", "PreToolUse")] == ["before_tool_call"]


def test_docs_page_is_generated_from_the_table():
    assert (ROOT / "docs" / "events.md").read_text() == catalog_docs.markdown() + "\n"


def test_events_json_cli_has_schemas_and_outcome_shape():
    out = subprocess.run([sys.executable, "-m", "interlock", "events", "--json"],
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert [e["name"] for e in data["events"]] == [s.name for s in SPECS]
    tool = next(e for e in data["events"] if e["name"] == "before_tool_call")
    assert tool["decisions"] == ["block", "modify", "approve", "ask", "respond", "stop",
                                 "context"]
    assert tool["mutable"] == ["args"]
    assert tool["aliases"]["claude"] == "PreToolUse"
    assert "args" in json.dumps(tool["schema"])
    assert "OutcomeRecord" in json.dumps(data["outcome_schema"])


def test_events_cli_unknown_event_is_a_clear_error():
    out = subprocess.run([sys.executable, "-m", "interlock", "events", "before_tool_cal"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "did you mean 'before_tool_call'" in out.stderr
    assert "Traceback" not in out.stderr


def test_outcome_record_roundtrips_through_json():
    from interlock import Engine, block
    from interlock.engine.outcome import OutcomeRecord

    engine = Engine()
    engine.on("before_tool_call", lambda e: block("no"))
    out = engine.emit_sync(BeforeToolCall(tool_name="t"))
    rec = msgspec.json.decode(msgspec.json.encode(out.to_record()), type=OutcomeRecord)
    assert rec.decision == "block"
    assert BY_NAME["before_tool_call"].subject == "tool_name"


def test_no_payload_field_shadows_event_attributes():
    reserved = {"name", "spec", "replace", "to_dict"}
    for s in SPECS:
        assert not reserved & {f.name for f in s.all_fields()}, s.name
