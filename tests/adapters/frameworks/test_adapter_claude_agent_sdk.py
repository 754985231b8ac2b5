"""The Claude Agent SDK's own session: the Claude Code CLI it bundles, talking to the
fake Anthropic server of the real-client tests, under the project's policy."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

sys.path.insert(0, str(Path(__file__).parents[2] / "realclients"))

from adapter_project import audit
from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolPermissionContext,
    query,
)
from fake_models import FakeModels, Turn
from realclient_agents import tool_results

from interlock.adapters.claude_agent_sdk import interlock_hooks

pytestmark = pytest.mark.e2e

POLICY = '''
from interlock import ask, block, context, modify


def handle(event):
    command = event.args.get("command", "")
    if command.startswith("rm "):
        return block("deleting files is not allowed", hint="move it to archive/ instead")
    if command == "echo hello":
        return modify(args={**event.args, "command": "echo HELLO"})
    if command == "date":
        return context("the clock is UTC")
    if command.startswith("deploy"):
        return ask("deploys need a person")
    if command == "explode":
        raise RuntimeError("the policy hook has a bug")
    return None
'''

CONFIG = '''
[[hooks]]
name = "policy"
events = ["before_tool_call"]
matcher = "terminal"
handler = "policy.py"
modifies = true
'''


@pytest.fixture
def claude_project(project: Path) -> Path:
    (project / ".interlock" / "config.toml").write_text(CONFIG)
    (project / ".interlock" / "policy.py").write_text(POLICY)
    return project


class Session:
    def __init__(self, fake: FakeModels, messages: list[Any]) -> None:
        self.fake = fake
        self.messages = messages

    @property
    def session_id(self) -> str:
        (result,) = [m for m in self.messages if isinstance(m, ResultMessage)]
        return str(result.session_id)

    def returned(self) -> str:
        """What the model was sent back as the tool's result."""
        for req in self.fake.main_requests():
            if results := tool_results(req):
                return "\n".join(results)
        raise AssertionError("no tool result reached the model")

    def sent(self) -> str:
        return "\n".join(r.text() for r in self.fake.main_requests())


async def run(project: Path, command: str, *, can_use_tool: Any = None,
              hooks: Any = None) -> Session:
    home = project.parent / "claude-home"
    home.mkdir(exist_ok=True)
    with FakeModels() as fake:
        fake.turn = Turn(command)
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "sk-ant-fake",
               "HOME": str(home), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
               "DISABLE_ERROR_REPORTING": "1", "HTTPS_PROXY": fake.base_url,
               "HTTP_PROXY": fake.base_url, "NO_PROXY": "127.0.0.1,localhost"}
        options = ClaudeAgentOptions(cwd=str(project), env=env,
                                     hooks=interlock_hooks() if hooks is None else hooks,
                                     can_use_tool=can_use_tool, max_turns=4)

        async def prompt() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "user", "message": {"role": "user",
                                                "content": "Run the command, please."}}

        messages = [m async for m in query(prompt=prompt(), options=options)]
        assert not [r for r in fake.requests if r.wire == "escape"]
        return Session(fake, messages)


async def test_a_blocked_command_returns_the_reason_and_is_audited(claude_project):
    target = claude_project / "a.txt"
    target.write_text("keep me")
    s = await run(claude_project, f"rm {target}")
    assert target.exists()
    assert "deleting files is not allowed" in s.returned()
    assert "move it to archive/ instead" in s.returned()
    assert ("before_tool_call", "block", "terminal", "project:policy") in audit(s.session_id)


async def test_a_modifier_rewrites_the_command_once_approved(claude_project):
    # A rewrite is not an approval: Claude asks, and can_use_tool answers.
    seen: list[dict[str, Any]] = []

    async def approve(tool: str, args: dict[str, Any],
                      ctx: ToolPermissionContext) -> PermissionResultAllow:
        seen.append(args)
        return PermissionResultAllow()

    s = await run(claude_project, "echo hello", can_use_tool=approve)
    assert seen == [{"command": "echo HELLO"}]
    assert "HELLO" in s.returned()


async def test_context_reaches_the_model(claude_project):
    s = await run(claude_project, "date")
    assert "the clock is UTC" in s.sent()


async def test_ask_goes_to_can_use_tool_and_a_refusal_stands(claude_project):
    asked: list[str] = []

    async def refuse(tool: str, args: dict[str, Any],
                     ctx: ToolPermissionContext) -> PermissionResultDeny:
        asked.append(args["command"])
        return PermissionResultDeny(message="not on a Friday")

    marker = claude_project / "deployed"
    s = await run(claude_project, f"deploy; touch {marker}", can_use_tool=refuse)
    assert asked == [f"deploy; touch {marker}"]
    assert not marker.exists()
    assert "not on a Friday" in s.returned()


async def test_a_crashing_fail_closed_hook_blocks_the_command(claude_project):
    s = await run(claude_project, "explode")
    assert "fail-closed hook 'project:policy' did not answer (crash)" in s.returned()
    assert audit(s.session_id) == [("before_tool_call", "block", "terminal", "project:policy")]


async def test_a_policy_that_cannot_load_blocks_the_command(claude_project):
    # The adapter itself raises (no good config revision): on_failure="block"
    # refuses the prompt (UserPromptSubmit) before any tool could run.
    (claude_project / ".interlock" / "config.toml").write_text("[[hooks]]\nname = 3\n")
    marker = claude_project / "ran"
    s = await run(claude_project, f"touch {marker}")
    assert not marker.exists()
    assert not [r for r in s.fake.main_requests() if tool_results(r)]


async def test_a_gate_hook_on_an_event_the_sdk_never_sends_blocks_the_command(claude_project):
    # A hook on before_llm_call would never be asked here: the first callback
    # refuses the policy, and on_failure="block" keeps any tool from running.
    (claude_project / ".interlock" / "config.toml").write_text(CONFIG + '''
[[hooks]]
name = "budget"
events = ["before_llm_call"]
handler = "policy.py"
''')
    marker = claude_project / "ran"
    s = await run(claude_project, f"touch {marker}")
    assert not marker.exists()
    assert not [r for r in s.fake.main_requests() if tool_results(r)]


async def test_the_cli_calls_no_sdk_callback_on_session_start_or_end(claude_project):
    # Why the adapter fires no session_start/session_end (docs/adapters.md): the
    # SDK's hooks= has no SessionStart or SessionEnd, and the Claude Code it
    # bundles does not call back on them even when registered. Should that
    # change, this fails, and the adapter can map them as the bridge does.
    called: list[str] = []

    async def record(payload: Any, tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        called.append(payload["hook_event_name"])
        return {}

    hooks = {name: [HookMatcher(matcher=None, hooks=[record])]
             for name in ("SessionStart", "SessionEnd", "UserPromptSubmit")}
    await run(claude_project, "date", hooks=hooks)
    assert called == ["UserPromptSubmit"]


# -- the project's [[permissions]] rules (docs/adapters.md) -----------------------------

RULES = '''
[[permissions]]
tool = "terminal"
pattern = "touch *"
action = "deny"

[[permissions]]
tool = "terminal"
pattern = "cat *"
action = "ask"
'''


async def test_a_deny_rule_blocks_a_command_the_hooks_let_through(claude_project):
    (claude_project / ".interlock" / "config.toml").write_text(CONFIG + RULES)
    asked: list[str] = []

    async def yes(tool: str, args: dict[str, Any],
                  ctx: ToolPermissionContext) -> PermissionResultAllow:
        asked.append(args["command"])
        return PermissionResultAllow()

    marker = claude_project / "ran"
    s = await run(claude_project, f"touch {marker}", can_use_tool=yes)
    assert not marker.exists()
    assert asked == []  # denied before anyone is asked
    assert "a permission rule denies it" in s.returned()


async def test_an_ask_rule_goes_to_can_use_tool(claude_project):
    (claude_project / ".interlock" / "config.toml").write_text(CONFIG + RULES)
    asked: list[str] = []

    async def refuse(tool: str, args: dict[str, Any],
                     ctx: ToolPermissionContext) -> PermissionResultDeny:
        asked.append(args["command"])
        return PermissionResultDeny(message="not that file")

    s = await run(claude_project, "cat notes.txt", can_use_tool=refuse)
    assert asked == ["cat notes.txt"]
    assert "not that file" in s.returned()


def pre_tool_use(command: str) -> dict[str, Any]:
    return {"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "t1"}


async def test_a_hook_s_approve_does_not_override_a_deny_rule(project):
    from interlock.adapters._core import Policy
    from interlock.adapters.claude_agent_sdk import FRAMEWORK, answer

    (project / ".interlock" / "approve.py").write_text(
        "from interlock import approve\n\ndef handle(e):\n    return approve('fine')\n")
    (project / ".interlock" / "config.toml").write_text(RULES + '''
[[permissions]]
tool = "terminal"
pattern = "*"
action = "allow"

[[hooks]]
name = "approve"
events = ["before_tool_call"]
handler = "approve.py"
''')
    policy = Policy(FRAMEWORK, project=project)
    denied = (await answer(policy, pre_tool_use("touch x")))["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny"
    assert "a permission rule denies it" in denied["permissionDecisionReason"]
    approved = (await answer(policy, pre_tool_use("cat x")))["hookSpecificOutput"]
    assert approved["permissionDecision"] == "allow"  # the approval an ask rule wants


async def test_an_allow_rule_approves_nothing_on_its_own(project):
    from interlock.adapters._core import Policy
    from interlock.adapters.claude_agent_sdk import FRAMEWORK, answer

    (project / ".interlock" / "config.toml").write_text(CONFIG + '''
[[permissions]]
tool = "terminal"
pattern = "*"
action = "allow"
''')
    (project / ".interlock" / "policy.py").write_text(POLICY)
    policy = Policy(FRAMEWORK, project=project)
    assert await answer(policy, pre_tool_use("ls")) == {}
