"""A policy's rewrite reaches each agent in the form that agent applies, or is refused.

A redacted tool result that an agent silently ignores would hand the secret to
the model; each bridge must express the rewrite in a shape its host reads, deny
where the host honours a deny, and `bridge install` refuses a policy whose
rewrites the host cannot apply at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interlock import ConfigError
from interlock.hosts.bridge import host
from interlock.hosts.bridge._common import Result
from interlock.hosts.bridge.install import install

pytestmark = pytest.mark.e2e

SECRET = "token=sk-live-123"
REDACTED = "token=[REDACTED]"


def rewrite(value: object, **kw: object) -> Result:
    return Result("after_tool_call", "modify", changes={"result": value}, **kw)  # type: ignore[arg-type]


def test_codex_result_rewrite_is_a_block_whose_reason_replaces_the_output() -> None:
    reply = host("codex").answer("PostToolUse", {"tool_response": SECRET}, rewrite(REDACTED))
    body = json.loads(reply.stdout)
    # Codex's PostToolUse schema has no updatedToolOutput it applies; a block's
    # reason is what the model sees in place of the output.
    assert body == {"decision": "block", "reason": REDACTED}
    assert reply.code == 0
    assert SECRET not in reply.stdout + reply.stderr


def test_codex_structured_result_rewrite_is_sent_as_json_text() -> None:
    reply = host("codex").answer("PostToolUse", {}, rewrite({"stdout": REDACTED, "code": 0}))
    body = json.loads(reply.stdout)
    assert json.loads(body["reason"]) == {"stdout": REDACTED, "code": 0}


def test_codex_result_rewrite_to_nothing_still_hides_the_output() -> None:
    # An empty reason is a failure in Codex, which then fails open.
    body = json.loads(host("codex").answer("PostToolUse", {}, rewrite("")).stdout)
    assert body["decision"] == "block"
    assert body["reason"]


def test_codex_result_rewrite_keeps_context() -> None:
    r = rewrite(REDACTED, context=(("redact", "1 secret removed"),))
    body = json.loads(host("codex").answer("PostToolUse", {}, r).stdout)
    assert body["reason"] == REDACTED
    assert "1 secret removed" in body["hookSpecificOutput"]["additionalContext"]


def test_claude_result_rewrite_is_updated_tool_output() -> None:
    body = json.loads(host("claude").answer("PostToolUse", {}, rewrite(REDACTED)).stdout)
    assert body["hookSpecificOutput"]["updatedToolOutput"] == REDACTED


def test_gemini_result_rewrite_is_a_deny_whose_reason_is_the_result() -> None:
    reply = host("gemini").answer("AfterTool", {"tool_response": {"llmContent": SECRET}},
                                  rewrite(REDACTED))
    body = json.loads(reply.stdout)
    # Gemini never reads hookSpecificOutput.tool_output; an AfterTool deny
    # replaces the result with its reason.
    assert body == {"decision": "deny", "reason": REDACTED}
    assert "tool_output" not in reply.stdout
    assert reply.code == 0


def test_moltis_tool_result_persist_data_is_the_result_itself() -> None:
    reply = host("moltis").answer("ToolResultPersist", {},
                                  Result("tool_result_persist", "modify",
                                         changes={"result": REDACTED}))
    assert json.loads(reply.stdout) == {"action": "modify", "data": REDACTED}


def test_moltis_after_tool_call_rewrite_is_never_a_silent_pass() -> None:
    reply = host("moltis").answer("AfterToolCall", {}, rewrite(REDACTED))
    assert reply.code == 1  # logged by Moltis, not applied
    assert "cannot" in reply.stderr
    assert "AfterToolCall" in host("moltis").DENY_IGNORED


def test_hermes_post_tool_call_rewrite_says_it_was_not_applied() -> None:
    reply = host("hermes").answer("post_tool_call", {}, rewrite(REDACTED))
    assert "the original went on" in json.loads(reply.stdout)["context"]
    assert "the original went on" in reply.stderr
    assert "post_tool_call" in host("hermes").DENY_IGNORED


def _project(tmp_path: Path, events: str) -> Path:
    root = tmp_path / "proj"
    (root / ".interlock").mkdir(parents=True)
    (root / "redact.sh").write_text("#!/bin/sh\nexit 0\n")
    (root / ".interlock" / "config.toml").write_text(
        f'[[hooks]]\nname = "redact-output"\nevents = {events}\ncommand = "sh redact.sh"\n'
        "modifies = true\n")
    return root


@pytest.mark.parametrize("agent", ["hermes"])
def test_install_refuses_a_result_rewrite_the_agent_would_drop(
        agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hermes"))
    root = _project(tmp_path, '["after_tool_call"]')
    with pytest.raises(ConfigError) as err:
        install(agent, root)
    text = str(err.value)
    for needle in ("redact-output", "after_tool_call", "post_tool_call"):
        assert needle in text
    assert not (tmp_path / "hermes" / "config.yaml").exists()  # nothing half-written


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_install_accepts_a_result_rewrite_the_agent_applies(
        agent: str, tmp_path: Path) -> None:
    root = _project(tmp_path, '["after_tool_call"]')
    plan = install(agent, root)
    assert plan.path.exists()


def test_install_accepts_hermes_when_rewrites_are_where_it_applies_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hermes"))
    root = _project(tmp_path, '["before_tool_call"]')  # denied, not dropped, if unapplied
    assert install("hermes", root).path.exists()
