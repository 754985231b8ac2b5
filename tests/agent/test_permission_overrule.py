"""What a rule makes of the hooks' decision on a tool call, for the hosts that
judge rules after their hooks: the framework adapters and the bridges
(docs/agent.md, Permissions; docs/one-policy.md, Permission rules)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from interlock.agent.permissions import RuleJudge, overrule, rule


@pytest.mark.parametrize(("decision", "action", "ruled"), [
    ("none", "deny", "block"), ("modify", "deny", "block"), ("approve", "deny", "block"),
    ("ask", "deny", "block"),
    ("block", "deny", None), ("respond", "deny", None), ("stop", "deny", None),
    ("skip", "deny", None),
    ("none", "ask", "ask"), ("modify", "ask", "ask"),
    ("approve", "ask", None),  # the hook's approve is the approval the rule asks for
    ("ask", "ask", None),  # the hook's ask keeps its own reason
    ("block", "ask", None),
    ("none", "allow", None), ("modify", "allow", None), ("none", None, None),
])
def test_deny_beats_any_approval_ask_waits_for_one_and_allow_never_decides(
        decision: str, action: str | None, ruled: str | None) -> None:
    assert overrule(decision, action) == ruled


def test_the_judge_reads_the_rules_it_is_given_at_each_call() -> None:
    judge = RuleJudge()
    rules = [rule("terminal", "rm *", "deny")]
    assert judge.action(rules, "terminal", {"command": "ls; rm -rf x"}) == "deny"
    assert judge.action(rules, "terminal", {"command": "ls"}) is None
    # A new revision of the rules, not the policy built for the last one.
    assert judge.action([rule("terminal", "ls*", "ask")], "terminal", {"command": "ls"}) == "ask"
    assert judge.action([], "terminal", {"command": "rm -rf x"}) is None


def test_judging_by_rules_does_not_load_the_agent() -> None:
    """The bridge judges its first call in its own process: the rules' module
    must not bring in the agent's loop (docs/one-policy.md, Speed)."""
    code = ("import sys, interlock.agent.permissions; "
            "print(sorted(m for m in sys.modules if m.startswith('interlock.agent.')))")
    loaded = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True,
                            text=True, check=True).stdout.strip()
    assert loaded == "['interlock.agent.permissions']"
