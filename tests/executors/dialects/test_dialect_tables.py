"""Each dialect's decode table, entry by entry (docs/dialects.md), plus the
stdin payloads. Real scripts run in test_dialect_scripts.py; here the
process result is given directly so every row of a table is covered."""

from __future__ import annotations

import json

import pytest

from fixtures.helpers import invocation
from interlock import Verdict
from interlock.engine.catalog import SPECS, names_in
from interlock.engine.errors import ConfigError, ContractError, HookCrash
from interlock.executors._process import Completed
from interlock.executors.dialects import DIALECTS, check_events


def decode(dialect: str, event: str = "before_tool_call", *, code: int = 0, out: object = "",
           err: str = "", modifies: bool = False, **fields):
    text = out if isinstance(out, str) else json.dumps(out)
    inv = invocation(event, modifies=modifies, **fields)
    return DIALECTS[dialect].decode(inv, Completed(code, text.encode(), err.encode()))


def encode(dialect: str, event: str = "before_tool_call", **fields) -> dict:
    raw = DIALECTS[dialect].encode(invocation(event, **fields), project_dir="/proj")
    assert raw.endswith(b"\n")
    assert raw.count(b"\n") == 1
    return json.loads(raw)


def hso(event: str = "PreToolUse", **fields) -> dict:
    return {"hookSpecificOutput": {"hookEventName": event, **fields}}


# -- event names ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_event_names_come_from_the_catalog(name):
    d = DIALECTS[name]
    for spec in SPECS:
        names = names_in(name, spec)
        assert d.event_name(spec.name) == (names[0] if names else None)


def test_tool_names_map_both_ways():
    for d in DIALECTS.values():
        for ours, theirs in d.tools.items():
            assert d.tool_name(ours) == theirs
            assert d.tool_from_host(theirs) == ours
        assert d.tool_name("mcp__github__create_issue") == "mcp__github__create_issue"
    assert DIALECTS["claude"].tool_from_host("Bash") == "terminal"
    assert DIALECTS["moltis"].tool_from_host("exec") == "terminal"


def test_check_events_names_the_supported_events():
    check_events("moltis", ["before_tool_call", "message_received"])
    with pytest.raises(ConfigError, match="no event for 'user_input'") as err:
        check_events("moltis", ["user_input"])
    assert "BeforeToolCall" not in str(err.value)  # it lists our names
    assert "before_tool_call" in str(err.value)


def test_unsupported_event_at_call_time_is_a_contract_error():
    with pytest.raises(ContractError, match="no event for 'user_input'"):
        DIALECTS["moltis"].encode(invocation("user_input", text="hi"), project_dir="/p")


# -- claude ------------------------------------------------------------------------

def test_claude_stdin():
    body = encode("claude", args={"command": "npm test"}, tool_call_id="toolu_1")
    assert body["hook_event_name"] == "PreToolUse"
    assert body["tool_name"] == "Bash"  # Interlock's terminal, by Claude's name
    assert body["tool_input"] == {"command": "npm test"}
    assert body["tool_use_id"] == "toolu_1"
    assert body["session_id"] == "sess-1"
    assert body["permission_mode"] == "default"
    assert encode("claude", "user_input", text="hello")["prompt"] == "hello"
    stop = encode("claude", "before_stop", last_message="done", stop_hook_active=True)
    assert stop["last_assistant_message"] == "done"
    assert stop["stop_hook_active"] is True


def test_claude_exit_codes():
    with pytest.raises(HookCrash, match="exited with code 1"):
        decode("claude", code=1, err="oops")
    assert decode("claude", code=2, err="no").reason == "no"
    assert decode("claude", "before_stop", code=2, err="keep going").verdict is Verdict.BLOCK
    # Claude's exit 2 on PermissionRequest denies the permission.
    denied = decode("claude", "permission_request", code=2, err="x", tool_name="t")
    assert denied.verdict is Verdict.BLOCK
    assert denied.reason == "x"
    # Claude ignores exit 2 on observe events.
    assert decode("claude", "session_end", code=2, err="x") is None
    # On PostToolUseFailure stderr goes back to the model: context.
    fb = decode("claude", "tool_error", code=2, err="try -f", tool_name="t", error="e")
    assert fb.verdict is Verdict.NONE
    assert fb.context == "try -f"


def test_claude_plain_text_is_context_only_where_claude_says_so():
    assert decode("claude", "user_input", out="today is Monday", text="hi").context == \
        "today is Monday"
    assert decode("claude", out="some log line") is None


@pytest.mark.parametrize("dialect", ["claude", "codex"])
def test_output_that_opens_as_json_is_a_json_answer(dialect):
    # Claude and Codex read stdout that starts with "{" (Codex: or "[") as an
    # attempted JSON answer; trailing text makes it invalid, never plain text.
    deny = json.dumps(hso(permissionDecision="deny", permissionDecisionReason="no"))
    with pytest.raises(ContractError, match="not JSON"):
        decode(dialect, out=deny + "\ndone")
    if dialect == "codex":
        with pytest.raises(ContractError, match="JSON object"):
            decode(dialect, out='["deny"]')
    # A byte order mark (PowerShell's UTF-8) is whitespace to Claude's trim(): the deny stands.
    assert decode(dialect, out="\ufeff" + deny).verdict is Verdict.BLOCK
    assert decode(dialect, out="\n\ufeff" + deny + "\n").verdict is Verdict.BLOCK


@pytest.mark.parametrize("dialect", ["claude", "codex", "gemini"])
@pytest.mark.parametrize("value", ["false", 0, None, [False]])
def test_a_continue_that_is_not_a_boolean_is_a_failure(dialect, value):
    # The script meant something by it; read as "not false" it would pass a gate.
    with pytest.raises(ContractError, match="continue"):
        decode(dialect, out={"continue": value, "stopReason": "halt"}
               if dialect != "codex" else {"continue": value})


def test_claude_permission_decisions():
    assert decode("claude", out=hso(permissionDecision="allow")).verdict is Verdict.APPROVE
    assert decode("claude", out=hso(permissionDecision="ask",
                                    permissionDecisionReason="sure?")).verdict is Verdict.ASK
    assert decode("claude", out=hso(permissionDecision="defer")) is None
    deny = decode("claude", out=hso(permissionDecision="deny", permissionDecisionReason="no",
                                    additionalContext="see policy"))
    assert (deny.verdict, deny.reason, deny.context) == (Verdict.BLOCK, "no", "see policy")
    with pytest.raises(ContractError, match="permissionDecision 'maybe'"):
        decode("claude", out=hso(permissionDecision="maybe"))
    # the legacy top-level shape
    assert decode("claude", out={"decision": "approve"}).verdict is Verdict.APPROVE
    assert decode("claude", out={"decision": "block", "reason": "r"}).reason == "r"


def test_claude_rewrites():
    mod = decode("claude", modifies=True, out=hso(permissionDecision="allow",
                                                  updatedInput={"command": "ls"}))
    assert mod.verdict is Verdict.APPROVE  # approves and rewrites, not a bare rewrite
    assert mod.changes == {"args": {"command": "ls"}}
    bare = decode("claude", modifies=True, out=hso(updatedInput={"command": "ls"}))
    assert bare.verdict is Verdict.MODIFY
    with pytest.raises(ContractError, match="cannot do both"):
        decode("claude", modifies=True, out=hso(permissionDecision="ask",
                                                updatedInput={"command": "ls"}))
    # a deny with a rewrite is a deny
    assert decode("claude", modifies=True, out=hso(
        permissionDecision="deny", updatedInput={"command": "ls"})).verdict is Verdict.BLOCK
    out = decode("claude", "after_tool_call", modifies=True,
                 out=hso("PostToolUse", updatedToolOutput="clean"))
    assert out.changes == {"result": "clean"}
    start = decode("claude", "session_start", modifies=True,
                   out=hso("SessionStart", initialUserMessage="hi", additionalContext="c"))
    assert start.changes == {"initial_message": "hi"}
    assert start.context == "c"


def test_claude_stop_and_wrong_event_name():
    out = decode("claude", out={"continue": False, "stopReason": "enough"})
    assert (out.verdict, out.reason) == (Verdict.STOP, "enough")
    with pytest.raises(ContractError, match="hookEventName 'PostToolUse'"):
        decode("claude", out=hso("PostToolUse", additionalContext="x"))
    with pytest.raises(ContractError, match="not JSON"):
        decode("claude", out="{nope}")


def test_claude_permission_request():
    pr = {"tool_name": "terminal", "args": {}}
    ok = decode("claude", "permission_request", **pr,
                out=hso("PermissionRequest", decision={"behavior": "allow"}))
    assert ok.verdict is Verdict.APPROVE
    no = decode("claude", "permission_request", **pr,
                out=hso("PermissionRequest", decision={"behavior": "deny", "message": "m"}))
    assert (no.verdict, no.reason) == (Verdict.BLOCK, "m")
    with pytest.raises(ContractError, match="declare `modifies = true`"):
        decode("claude", "permission_request", **pr, out=hso(
            "PermissionRequest", decision={"behavior": "allow", "updatedPermissions": []}))
    with pytest.raises(ContractError, match="updatedPermissions"):  # not in Codex's shape
        decode("codex", "permission_request", modifies=True, **pr, out=hso(
            "PermissionRequest", decision={"behavior": "allow", "updatedPermissions": []}))


# -- codex -------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    hso(permissionDecision="allow"),
    hso(permissionDecision="ask"),
    hso(permissionDecision="deny"),
    hso(updatedInput={"command": "ls"}),
    hso(permissionDecisionReason="why"),
    {"decision": "approve"},
    {"decision": "block"},
    {"continue": False},
    {"stopReason": "x"},
    {"suppressOutput": True},
    {"surprise": 1},
])
def test_codex_rejects_what_codex_rejects(answer):
    with pytest.raises(ContractError):
        decode("codex", out=answer, modifies=True)


def test_codex_accepts_its_shapes():
    assert decode("codex", out=hso(permissionDecision="deny",
                                   permissionDecisionReason="no")).verdict is Verdict.BLOCK
    mod = decode("codex", modifies=True, out=hso(permissionDecision="allow",
                                                 updatedInput={"command": "ls"}))
    assert mod.changes == {"args": {"command": "ls"}}
    assert decode("codex", out={"decision": "block", "reason": "r"}).reason == "r"


def test_codex_exit_2():
    assert decode("codex", code=2, err="no").reason == "no"
    with pytest.raises(ContractError, match="nothing on stderr"):
        decode("codex", code=2)
    # Codex blocks a prompt on exit 2 (stderr is the reason) ...
    assert decode("codex", "user_input", code=2, err="x", text="hi").verdict is Verdict.BLOCK
    # ... but not a compaction.
    with pytest.raises(HookCrash, match="honours exit 2 only"):
        decode("codex", "before_compaction", code=2, err="x")


@pytest.mark.parametrize("event", ["before_stop", "user_input", "after_tool_call",
                                   "before_compaction", "session_start"])
def test_codex_continue_false_stops_where_codex_accepts_it(event):
    out = decode("codex", event, out={"continue": False, "stopReason": "enough"},
                 **({"text": "hi"} if event == "user_input" else {}))
    assert out.verdict is Verdict.STOP
    assert out.reason == "enough"


@pytest.mark.parametrize("event", ["before_compaction", "session_start", "subagent_start"])
def test_codex_decision_block_is_not_in_these_schemas(event):
    with pytest.raises(ContractError, match="continue: false"):
        decode("codex", event, out={"decision": "block", "reason": "no"},
               **({"task": "t"} if event == "subagent_start" else {}))


def test_codex_sees_edits_as_apply_patch():
    body = encode("codex", tool_name="write_file", args={"path": "/r/a.txt", "content": "x\ny"})
    assert body["tool_name"] == "apply_patch"
    assert body["tool_input"]["command"] == (
        "*** Begin Patch\n*** Add File: /r/a.txt\n+x\n+y\n*** End Patch")
    body = encode("codex", tool_name="edit_file",
                  args={"file_path": "/r/a.txt", "old_string": "a", "new_string": "b"})
    assert "*** Update File: /r/a.txt\n@@\n-a\n+b\n" in body["tool_input"]["command"]
    assert encode("codex")["tool_name"] == "Bash"
    with pytest.raises(ContractError, match="apply_patch"):
        decode("codex", modifies=True, tool_name="write_file",
               args={"path": "/a", "content": "x"},
               out=hso(permissionDecision="allow", updatedInput={"command": "p"}))


# -- gemini ------------------------------------------------------------------------

def test_gemini_stdin():
    body = encode("gemini")
    assert body["hook_event_name"] == "BeforeTool"
    assert body["tool_name"] == "run_shell_command"
    assert body["timestamp"].endswith("Z")
    llm = encode("gemini", "before_llm_call", model="m",
                 messages=[{"role": "user", "content": "hi"},
                           {"role": "assistant", "content": "hello"}])
    # Gemini's roles are user / model / system.
    assert llm["llm_request"]["messages"] == [{"role": "user", "content": "hi"},
                                              {"role": "model", "content": "hello"}]
    reply = encode("gemini", "after_llm_call", model="m", text="done", finish_reason="stop")
    assert reply["llm_response"]["candidates"] == [
        {"content": {"role": "model", "parts": ["done"]}, "index": 0, "finishReason": "STOP"}]


def test_gemini_llm_answers_in_gemini_shape():
    changed = decode("gemini", "after_llm_call", modifies=True, model="m", text="a", out={
        "hookSpecificOutput": {"llm_response": {"candidates": [
            {"content": {"role": "model", "parts": ["redacted ", "reply"]}}]}}})
    assert changed.changes == {"text": "redacted reply"}
    req = decode("gemini", "before_llm_call", modifies=True, model="m", out={
        "hookSpecificOutput": {"llm_request": {"messages": [
            {"role": "model", "content": "x"}]}}})
    assert req.changes == {"messages": [{"role": "assistant", "content": "x"}]}


def test_gemini_table():
    with pytest.raises(HookCrash):
        decode("gemini", code=1, err="warn")
    with pytest.raises(ContractError, match="not JSON"):
        decode("gemini", out="hello")  # silence is mandatory
    assert decode("gemini", code=2, err="no").reason == "no"
    assert decode("gemini", "session_start", code=2, err="no") is None
    # allow is Gemini's pass-through, and approve is accepted: neither approves.
    assert decode("gemini", out={"decision": "allow"}) is None
    assert decode("gemini", out={"decision": "approve", "reason": "ok"}) is None
    assert decode("gemini", out={"decision": "ask"}).verdict is Verdict.ASK
    assert decode("gemini", out={"decision": "block", "reason": "b"}).reason == "b"
    assert decode("gemini", out={"continue": False}).verdict is Verdict.STOP
    with pytest.raises(ContractError, match="decision 'perhaps'"):
        decode("gemini", out={"decision": "perhaps"})
    merged = decode("gemini", modifies=True, args={"command": "ls"},
                    out={"hookSpecificOutput": {"tool_input": {"timeout": 5}}})
    assert merged.changes == {"args": {"command": "ls", "timeout": 5}}
    res = decode("gemini", "after_tool_call", modifies=True,
                 out={"hookSpecificOutput": {"tool_output": "x"}})
    assert res.changes == {"result": "x"}
    synthetic = decode("gemini", "before_llm_call", model="m",
                       out={"hookSpecificOutput": {"llm_response": {"text": "cached"}}})
    assert synthetic.verdict is Verdict.RESPOND
    assert synthetic.value["text"] == "cached"


# -- hermes ------------------------------------------------------------------------

def test_hermes_stdin():
    body = encode("hermes", args={"command": "ls"}, tool_call_id="c1", turn_id="t1")
    assert body["hook_event_name"] == "pre_tool_call"
    assert (body["tool_name"], body["tool_input"]) == ("terminal", {"command": "ls"})
    assert body["extra"] == {"tool_call_id": "c1", "turn_id": "t1"}
    assert body["profile"] == "default"
    command = encode("hermes", "command", command="model", arguments="gpt-5")
    assert command["hook_event_name"] == "pre_command"  # command:NAME is a gateway hook
    assert command["extra"] == {"command": "model", "args_raw": "gpt-5"}
    prompt = encode("hermes", "user_input", text="hi", platform="telegram")
    assert prompt["extra"] == {"user_message": "hi", "platform": "telegram"}
    child = encode("hermes", "subagent_start", task="review", child_session_id="c")
    assert child["extra"] == {"child_goal": "review", "child_session_id": "c"}
    llm = encode("hermes", "user_input", text="hi")
    assert (llm["tool_name"], llm["tool_input"]) == (None, None)
    assert llm["extra"]["user_message"] == "hi"


def test_hermes_approve_means_ask():
    out = decode("hermes", out={"action": "approve", "message": "a human, please"})
    assert out.verdict is Verdict.ASK
    assert out.reason == "a human, please"


def test_hermes_table():
    assert decode("hermes", out={"decision": "block", "reason": "r"}).reason == "r"
    assert decode("hermes", out={"action": "block", "message": "m"}).reason == "m"
    with pytest.raises(ContractError, match="empty message"):
        decode("hermes", out={"action": "block", "message": ""})
    assert decode("hermes", out={}) is None
    assert decode("hermes", "user_input", text="x", out={"context": "c"}).context == "c"
    mod = decode("hermes", modifies=True, args={"command": "ls", "cwd": "/"},
                 out={"decision": "modify", "tool_input": {"command": "ls -a"}})
    assert mod.changes == {"args": {"command": "ls -a", "cwd": "/"}}  # merged, as Hermes does
    keep = decode("hermes", "before_stop", out={"action": "continue", "message": "test it"})
    assert (keep.verdict, keep.reason) == (Verdict.BLOCK, "test it")
    with pytest.raises(ContractError, match="action 'allow'"):
        decode("hermes", out={"action": "allow"})
    with pytest.raises(ContractError, match="not JSON"):
        decode("hermes", out="ok")


def test_hermes_exit_codes():
    assert decode("hermes", code=2, err="e" * 500).reason == "e" * 400 + "..."
    assert decode("hermes", code=2).reason == "Blocked by shell hook."
    assert decode("hermes", code=2, err="x",
                  out={"action": "block", "message": "from stdout"}).reason == "from stdout"
    # Hermes still reads stdout after a non-zero exit
    assert decode("hermes", code=1, out={"decision": "block", "reason": "r"}).reason == "r"
    with pytest.raises(HookCrash):
        decode("hermes", code=1, err="crashed")
    with pytest.raises(HookCrash):  # exit 2 blocks only pre_tool_call
        decode("hermes", "user_input", code=2, err="x", text="hi")


# -- moltis ------------------------------------------------------------------------

def test_moltis_stdin():
    body = encode("moltis", args={"command": "ls -la"}, tool_call_id="call_1",
                  session_id="telegram:bot:1", platform="telegram")
    # Moltis's HookPayload has no tool_call_id.
    assert body == {"event": "BeforeToolCall", "session_key": "telegram:bot:1",
                    "tool_name": "exec",
                    "arguments": {"command": "ls -la"}, "channel": {"surface": "telegram"}}
    msg = encode("moltis", "message_received", text="hi", channel="c", sender_id="u1")
    assert (msg["content"], msg["channel"]) == ("hi", "c")
    assert msg["channel_binding"] == {"surface": "cli", "sender_id": "u1"}
    assert "sender_id" not in msg
    llm = encode("moltis", "before_llm_call", model="m", messages=[], params={"t": 1})
    assert "params" not in llm
    assert llm["tool_count"] == 0
    assert set(encode("moltis", "before_agent_start", prompt="p")) == {
        "event", "session_key", "model"}


def test_moltis_exit_codes():
    assert decode("moltis", code=1, err="dangerous").reason == "dangerous"
    assert decode("moltis", code=1).reason == "hook 'h' blocked the action"
    assert decode("moltis", "after_tool_call", code=1, err="x") is None  # read-only there
    with pytest.raises(HookCrash, match="exited with code 2"):
        decode("moltis", code=2, err="claude habits")


def test_moltis_modify_data_forms():
    part = decode("moltis", modifies=True, out={"action": "modify", "data": {"command": "x"}})
    assert part.changes == {"args": {"command": "x"}}
    whole = {"event": "BeforeToolCall", "session_key": "sess-1",
             "tool_name": "exec", "arguments": {"command": "set -e; ls"},
             "channel": {"surface": "cli"}}
    out = decode("moltis", modifies=True, out={"action": "modify", "data": whole})
    assert out.changes == {"args": {"command": "set -e; ls"}}
    echo = dict(whole, arguments={"command": "ls"})
    assert decode("moltis", modifies=True, out={"action": "modify", "data": echo}) is None
    with pytest.raises(ContractError, match="changed 'tool_name'"):
        decode("moltis", modifies=True,
               out={"action": "modify", "data": dict(whole, tool_name="read")})
    msg = decode("moltis", "message_received", modifies=True, text="hi",
                 out={"action": "modify", "data": {"content": "HI"}})
    assert msg.changes == {"text": "HI"}
    with pytest.raises(ContractError, match="it may change: content"):
        decode("moltis", "message_received", modifies=True, text="hi",
               out={"action": "modify", "data": {"sender": "x"}})
    res = decode("moltis", "tool_result_persist", modifies=True, tool_name="t",
                 out={"action": "modify", "data": "[redacted]"})
    assert res.changes == {"result": "[redacted]"}


def test_moltis_failures():
    with pytest.raises(ContractError, match="without \"data\""):
        decode("moltis", modifies=True, out={"action": "modify"})
    with pytest.raises(ContractError, match="action 'block'"):
        decode("moltis", out={"action": "block"})
    with pytest.raises(ContractError, match="not JSON"):
        decode("moltis", out="done")
    with pytest.raises(ContractError, match="read-only"):
        decode("moltis", "after_tool_call", modifies=True,
               out={"action": "modify", "data": {}})
    assert decode("moltis", out={}) is None
