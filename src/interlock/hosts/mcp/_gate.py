"""The policy of one MCP server's calls: before_tool_call, permissions, after_tool_call.

Used by the proxy (:mod:`interlock.hosts.mcp.proxy`); written apart from it so
another host of MCP tools meets the same hooks and rules in the same order
(docs/mcp.md, What the policy sees).

It imports nothing of the ``mcp`` SDK: results are plain JSON-like dicts
(``CallToolResult`` dumped by alias), and the caller turns them back.

Fail closed everywhere: an ``ask`` nobody can answer, a permission rule that
asks, a rewrite the result cannot hold, or an error of our own is a refusal
with the reason, never a call that goes through unchecked.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from interlock.engine.decisions import Verdict
from interlock.engine.redact import redact

if TYPE_CHECKING:
    from interlock.config.model import PermissionRule
    from interlock.engine.dispatch import Engine
    from interlock.models.permission import Dispatch

__all__ = ["PROMPT_GET", "RESOURCE_READ", "Gate", "Gated", "Refusal", "as_tool_result",
           "error_result", "tool_name"]

RESOURCE_READ = "resources/read"
"""The tool part of a resource read's name: ``mcp__<server>__resources/read``.
MCP tool names cannot hold ``/``, so it never clashes with a real tool."""
PROMPT_GET = "prompts/get"
"""Likewise for a prompt: ``mcp__<server>__prompts/get``."""
UNGUARDED = ("no hooks are configured (nor a deny or ask rule), so nothing governs this "
             "server; add hooks to .interlock/config.toml, or enable a bundled hook with "
             "`interlock hooks enable NAME`")
"""The reason of every call refused for want of a policy."""


def tool_name(server: str, tool: str) -> str:
    """Interlock's name for an MCP tool (docs/dialects.md: ``mcp__<server>__<tool>``)."""
    return f"mcp__{server}__{tool}"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call the policy refused; ``text`` is what the client is told."""

    reason: str
    by: str | None = None
    """The hook or rule that refused, where one did."""

    @property
    def text(self) -> str:
        who = f" by {self.by}" if self.by else ""
        return f"Interlock blocked this call{who}: {redact(self.reason)}"


def error_result(text: str) -> dict[str, Any]:
    """An MCP tool error (``isError``) carrying ``text``, as a plain dict."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def as_tool_result(value: Any) -> dict[str, Any]:
    """A hook's value (respond, or a rewritten result) as a tool result.

    A dict with ``content`` is taken as a result already; a string becomes one
    text item; anything else its JSON. The caller validates it against the SDK.
    """
    if isinstance(value, Mapping) and "content" in value:
        return dict(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return {"content": [{"type": "text", "text": text}], "isError": False}


@dataclass
class Gate:
    """The policy as one MCP server meets it: its engine, its rules, one session."""

    engine: Engine
    server: str
    """The name in ``mcp__<server>__<tool>``."""
    dispatch: Dispatch
    """A call's dispatch and the rules of the revision whose hooks it runs, taken as
    one (Registry.dispatch)."""
    rules: Callable[[], Iterable[PermissionRule]] = list
    """The registry's current ``[[permissions]]`` rules (what ``tools/list`` hides)."""
    session_id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex[:12]}")
    platform: str = "mcp"
    cwd: str = field(default_factory=os.getcwd)

    def _common(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "platform": self.platform, "cwd": self.cwd}

    def _rule(self, name: str, args: Mapping[str, Any],
              rules: Iterable[PermissionRule]) -> Refusal | None:
        from interlock.agent.permissions import (
            RULE_DENIES,
            RULES_HOOK,
            Action,
            PermissionPolicy,
        )

        action = PermissionPolicy(rules).decide(name, args)
        if action is Action.DENY:
            return Refusal(RULE_DENIES, by=RULES_HOOK)
        if action is Action.ASK:
            return Refusal("a permission rule asks, and no one can answer through MCP",
                           by=RULES_HOOK)
        return None

    def hidden(self, tool: str) -> bool:
        """True when a permission rule denies ``tool`` whatever its arguments: it is
        left out of ``tools/list`` (as the reference agent leaves it inactive)."""
        name = tool_name(self.server, tool)
        return any(r.action == "deny" and r.any_argument and r.matches_tool(name)
                   for r in self.rules())

    async def call(self, tool: str, args: dict[str, Any],
                   run: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
                   *, call_id: str | None = None) -> Gated:
        """Gate one call: before_tool_call, the rules, ``run(args)``, after_tool_call.

        ``tool`` is the tool's name as the agents write it (the proxy's
        ``agent_name``), or :data:`RESOURCE_READ`, :data:`PROMPT_GET`; ``run``
        does the call with the final arguments and returns its result as a dict.
        A refused call has ``refusal`` set and ``result`` None: the caller
        answers with an error, never the result.
        An exception of ``run`` is raised once after_tool_call has seen it (as
        an ``error``), unless that hook blocked or rewrote the result.
        """
        from interlock.events import AfterToolCall, BeforeToolCall
        from interlock.hosts.bridge._decide import unguarded

        if unguarded(self.engine.hooks, list(self.rules())):
            # No hook and no deny or ask rule: "allow everything" is no policy, so
            # the call is refused, as the bridge and serve refuse (docs/mcp.md).
            return Gated(None, Refusal(UNGUARDED), [], status="blocked")
        name = tool_name(self.server, tool)
        call_id = call_id or f"mcp-{uuid.uuid4().hex[:12]}"
        event = BeforeToolCall(**self._common(), tool_call_id=call_id, tool_name=name,
                               args=args)
        # The hooks and the rules of one revision, whenever a reload lands
        # (docs/configuration.md, Live reload).
        dispatched, rules = self.dispatch(event)
        gate = await dispatched
        refusal: Refusal | None = None
        failure: Exception | None = None
        result: dict[str, Any] | None = None
        status = "ok"
        if gate.ends:
            refusal = Refusal(gate.reason or "blocked by policy", _by(gate))
        elif gate.verdict is Verdict.ASK:
            refusal = Refusal(f"a hook asks for approval ({gate.reason or 'no reason given'}), "
                              "and no one can answer through MCP", _by(gate))
        else:
            args = dict(gate.final(event).args)  # type: ignore[attr-defined]
            if gate.verdict is Verdict.RESPOND:
                result, status = {"value": gate.value}, "responded"
            elif (refusal := self._rule(name, args, rules)) is None:
                try:
                    result = await run(args)
                    status = "error" if result.get("isError") else "ok"
                except Exception as exc:  # after_tool_call still sees it; raised after
                    failure = exc
                    result, status = error_result(f"the call failed: {exc}"), "error"
            else:  # the rule's own audit row (docs/agent.md, Permissions)
                from interlock.agent.permissions import rule_outcome

                self.engine.record(rule_outcome(gate.final(event), "block", refusal.reason,
                                                gate.revision))
        after = AfterToolCall(**self._common(), tool_call_id=call_id, tool_name=name,
                              args=args, status="blocked" if refusal else status,
                              result=error_result(refusal.text) if refusal else result)
        out = await self.engine.emit(after)
        context = [t for t in (gate.context_text(), out.context_text()) if t]
        if refusal is not None:  # a blocked call stays blocked, whatever after_tool_call says
            return Gated(None, refusal, context, status="blocked")
        if out.ends:
            return Gated(None, Refusal(out.reason or "result blocked by policy", _by(out)),
                         context, status="blocked")
        if "result" in out.changes:
            return Gated(out.changes["result"], None, context, status=status, changed=True)
        if failure is not None:  # the caller answers it as before (the server's own error)
            raise failure
        return Gated(result, None, context, status=status)


@dataclass(frozen=True, slots=True)
class Gated:
    """What became of one gated call."""

    result: Any
    """The result to send (a dict from ``run``, a hook's rewrite, or ``{"value": v}``
    for respond); None when refused."""
    refusal: Refusal | None
    context: list[str]
    """Context texts of the hooks, each wrapped naming its hook."""
    status: str = "ok"
    """ok | error | responded | blocked"""
    changed: bool = False
    """True when after_tool_call rewrote the result."""


def _by(outcome: Any) -> str | None:
    return outcome.hook.qualified_name if outcome.hook is not None else None
