"""OpenAI Codex CLI: Claude's wire, with strict answers.

Codex rejects (and then fails open on) ``permissionDecision: "ask"``, a bare
``"allow"``, ``continue: false`` and a deny without a reason, and applies ``updatedInput``
only with ``"allow"``. So ``ask`` is a deny here (no person can answer through
the hook: docs/agent.md, What each decision does here), ``approve`` is no
opinion, a rewrite is applied
only when policy also approved (otherwise it is a deny: a rewrite is not an
approval), and every deny carries text. Sources:
docs/dialects.md and docs/one-policy.md (codex-rs/hooks output_parser.rs).
"""

from __future__ import annotations

from interlock.hosts.bridge import claude
from interlock.hosts.bridge._common import Reply, Result, dumps

# typing is not imported at run time: it costs the bridge ~3 ms at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SYSTEM = "codex"
HOST_TIMEOUT = 600.0
DEFAULT_DEADLINE = 20.0
PROJECT_ENV = ""

# Host events where a failing bridge must have no effect: observe events, and
# those where "block" means "keep working" (docs/engine.md, Failures: what "fail closed"
# means). A test holds this equal to what the catalog says.
UNMAPPED_OBSERVE = frozenset({'Interrupt'})
UNMAPPED_GATE: frozenset[str] = frozenset()
NO_EFFECT = frozenset({
    'PostCompact', 'SessionEnd', 'Stop', 'SubagentStop'}) | UNMAPPED_OBSERVE

host_event = claude.host_event


def to_event(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from interlock.hosts.bridge._events import catalog_name

    name = catalog_name(SYSTEM, host_event(payload))
    return name, claude.fields_for(SYSTEM, name, payload)


def deny(host: str, text: str) -> Reply:
    text = text or "denied by Interlock"
    if host in ("PreCompact", "SessionStart", "SubagentStart"):
        # No `decision` in these schemas (Codex fails open on one): stop instead.
        return Reply(dumps({"continue": False, "stopReason": text}), text + "\n", 0)
    return claude.deny(host, text)


def answer(host: str, payload: dict[str, Any], r: Result) -> Reply:
    return claude.answer(host, payload, r, strict=True)
