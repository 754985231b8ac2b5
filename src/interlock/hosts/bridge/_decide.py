"""The decision a bridge answers with: the hooks' outcome, then the project's
``[[permissions]]`` rules on a tool call (docs/one-policy.md, Permission rules).

Every way an agent's hook input is decided goes through :func:`decided`: in
the bridge's own process (``_core``), by the bridge's server and by
``interlock serve`` (``_reply``, and the server's JSON answer), and by the
Claude Agent SDK adapter. The rules are judged as the framework adapters
judge them (:func:`interlock.agent.permissions.overrule`), on Interlock's tool
names (the dialect made ``Bash`` ``terminal``) and on the arguments as the
hooks left them.

Light to import: with no rules in force nothing more is imported (the
bridge's first call answers in process; docs/one-policy.md, Speed).
"""

from __future__ import annotations

from interlock.hosts.bridge._common import redact_reasons

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from interlock.agent.permissions import RuleJudge
    from interlock.engine.dispatch import Engine
    from interlock.engine.outcome import Outcome
    from interlock.events import Event
    from interlock.models.permission import PermissionRule

_judge: RuleJudge | None = None
"""One per process: a process serves one project, so one revision of rules at a time."""


def decided(outcome: Outcome, event: Event, rules: Sequence[PermissionRule], *,
            engine: Engine, redact: bool = True) -> dict[str, Any]:
    """``outcome`` (of ``event``, by ``engine``) as the dict a bridge answers from,
    with ``rules`` applied to a ``before_tool_call`` and (``redact``) the reasons
    headed for the model redacted. A rule's decision is recorded through
    ``engine`` (its audit row, docs/agent.md, Permissions) before this returns, so
    strict audit's wait that follows covers it. ``interlock serve``'s
    ``/v1/events`` answers with it unredacted: its client is an agent too, bound
    by the same rules."""
    record: dict[str, Any] = outcome.to_dict(event)
    if rules and record["event"] == "before_tool_call":
        _apply_rules(record, outcome, outcome.final(event), rules, engine)
    if redact:
        redact_reasons(record)
    return record


def _apply_rules(record: dict[str, Any], outcome: Outcome, call: Any,
                 rules: Sequence[PermissionRule], engine: Engine) -> None:
    global _judge
    from interlock.agent.permissions import (
        RULE_ASKS,
        RULE_DENIES,
        RULES_HOOK,
        RuleJudge,
        overrule,
        rule_outcome,
    )

    if _judge is None:
        _judge = RuleJudge()
    ruled = overrule(record["decision"], _judge.action(rules, call.tool_name, call.args))
    if ruled is None:
        return
    reason = RULE_DENIES if ruled == "block" else RULE_ASKS
    record.update(decision=ruled, reason=reason, hint=None, hook=RULES_HOOK)
    engine.record(rule_outcome(call, ruled, reason, outcome.revision))
    if ruled == "block":
        # The call does not run: a rewrite of it is moot, and must not turn the
        # deny into another (an agent that cannot apply the rewrite denies too).
        record["changes"] = {}


def unguarded(hooks: Sequence[Any], rules: Sequence[PermissionRule]) -> bool:
    """No hook and no rule that could refuse a call: a bridge (or ``interlock serve``)
    answering for this project would allow everything, so it denies instead, or is
    not ready (docs/one-policy.md)."""
    return not hooks and all(r.action == "allow" for r in rules)
