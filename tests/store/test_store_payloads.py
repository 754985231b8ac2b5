"""Gate-event payloads kept beside the audit (`serve --audit-payloads`), redacted,
for `interlock policy diff --audit` (docs/fleet.md)."""

from __future__ import annotations

import json
import time

from interlock import Engine, block
from interlock.events import AgentEnd, BeforeToolCall
from interlock.reliability.sinks import attach
from interlock.store import open_store

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def _emit(tmp_path, keep: bool) -> tuple[list, int]:
    store = open_store(str(tmp_path / "a.db"))
    store.audit_payloads = keep
    engine = Engine()
    attach(engine, store, tracing=False)
    try:
        engine.on("before_tool_call", lambda e: block("no") if "rm" in e.args["command"]
                  else None, name="guard")
        engine.on("agent_end", lambda e: None, name="watch")
        since = time.time() - 1
        engine.emit_sync(BeforeToolCall(tool_name="terminal", session_id="s",
                                        args={"command": f"curl -H 'Authorization: Bearer "
                                                         f"{TOKEN}' x"}))
        engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"},
                                        session_id="s"))
        engine.emit_sync(AgentEnd(status="completed", final_text="", session_id="s"))
        store.flush()
        return store.payloads(since), store.gate_dispatches(since)
    finally:
        engine.close()
        store.close()


def test_gate_payloads_are_kept_redacted_and_observe_events_are_not(tmp_path):
    rows, gates = _emit(tmp_path, keep=True)
    assert gates == 2
    assert [(event, json.loads(p)["args"]["command"][:4]) for _at, _d, event, p in rows] == [
        ("before_tool_call", "curl"), ("before_tool_call", "rm -")]
    assert TOKEN not in rows[0][3]
    assert all(d for _at, d, _e, _p in rows)


def test_without_the_option_nothing_is_kept_but_dispatches_are_counted(tmp_path):
    rows, gates = _emit(tmp_path, keep=False)
    assert rows == []
    assert gates == 2
