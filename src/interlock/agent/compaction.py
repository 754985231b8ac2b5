"""Compaction: when the transcript passes the token budget, old messages are
replaced by a summary (before_compaction may block it, change the
instructions, or supply the summary itself).

The built-in summary is extractive and needs no model call, so compaction
works offline and costs nothing; a hook that wants a model-written summary
supplies it through ``modify(summary=...)``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from interlock.engine.redact import redact

if TYPE_CHECKING:
    from interlock.agent.loop import Agent


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """About four characters a token: good enough to decide when to compact."""
    return sum(len(json.dumps(m, default=str)) for m in messages) // 4


def summarize(messages: list[dict[str, Any]], instructions: str | None) -> str:
    lines = [f"Instructions: {instructions}"] if instructions else []
    for msg in messages:
        content = msg.get("content") or ""
        if msg.get("tool_calls"):
            names = ", ".join(c["function"]["name"] for c in msg["tool_calls"])
            content = f"{content} [called {names}]".strip()
        lines.append(f"- {msg.get('role')}: {' '.join(str(content).split())[:160]}")
    return redact("\n".join(lines))[:4000]


def _cut(messages: list[dict[str, Any]], keep: int) -> int:
    """Where the kept tail starts: never between a tool call and its results."""
    cut = max(0, len(messages) - keep)
    while 0 < cut < len(messages) and messages[cut].get("role") == "tool":
        cut -= 1
    return cut


async def compact(agent: Agent, trigger: str = "auto") -> str:
    """Compact the transcript; returns what happened, for /compact."""
    session = agent.session
    msgs = session.messages
    cut = _cut(msgs, agent.options.keep_recent)
    if cut < 2:  # replacing one message by a summary saves nothing
        return "nothing to compact"
    gate = await agent.gate("before_compaction", trigger=trigger, message_count=len(msgs),
                            tokens=estimate_tokens(msgs))
    if gate.blocked:
        return f"compaction blocked: {agent.reason_for_model(gate)}"
    summary = gate.payload.summary or summarize(msgs[:cut], gate.payload.instructions)
    before = len(msgs)
    session.messages = [{"role": "user", "content": f"[Summary of {cut} earlier messages]\n"
                         f"{summary}", "compaction": True}, *msgs[cut:]]
    session.compactions += 1
    await agent.observe("after_compaction", summary=summary, messages_before=before,
                        messages_after=len(session.messages))
    agent.step("compacted", before=before, after=len(session.messages))
    session.saved_messages = len(session.messages) + 1  # the stored transcript is rewritten
    agent.save()
    return f"compacted {before} messages into {len(session.messages)}"
