"""The host-ready reply, made where the hooks run (a server), so the bridge only forwards it.

A bridge that asks with ``X-Interlock-Reply: host`` gets back exactly what it
would have written: the bytes for the agent's stdout and stderr, and the exit
code. The bridge's own process then decodes no JSON and imports no host
module (docs/one-policy.md, Speed). Every failure here is the same deny the
bridge gives when it fails (``_core.failure``), never an allow.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from interlock.hosts.bridge import host
from interlock.hosts.bridge._common import BridgeError, Reply, Result
from interlock.hosts.bridge._core import failure

if TYPE_CHECKING:
    from interlock.models.permission import Dispatch

HEADER = "x-interlock-reply"
"""The request header asking for this reply (its value: ``host``)."""


async def host_reply(engine: Any, agent: str, payload: Any, *, dispatch: Dispatch,
                     settled: Callable[[], Awaitable[bool]] | None = None,
                     refused: Exception | None = None) -> Reply:
    """The agent's reply to its hook input ``payload`` (raw or decoded), evaluated by
    the hooks of ``engine`` and the ``[[permissions]]`` rules (``_decide``) of one
    revision, as ``dispatch`` (their registry's) takes them.

    ``settled``: strict audit's wait for the decision's records to commit; a
    decision that cannot be recorded is not answered (a deny). ``refused``: why
    no decision is made at all (the config on disk is broken: the in-process
    bridge denies then, and so does this reply).
    """
    from interlock.hosts.bridge._decide import decided
    from interlock.hosts.bridge._events import build_event

    mod = host(agent)
    host_event = ""
    try:
        if isinstance(payload, bytes):
            try:
                payload = json.loads(payload)
            except (ValueError, RecursionError) as exc:
                raise BridgeError(f"the hook input is not JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise BridgeError("the hook input is not a JSON object")
        host_event = mod.host_event(payload)
        if refused is not None:
            raise refused
        event = build_event(agent, payload)
        dispatched, rules = dispatch(event)
        outcome = await dispatched
        record = decided(outcome, event, rules, engine=engine)  # a rule's row, too
        if settled is not None and not await settled():
            raise BridgeError("the audit store is not committing, so this decision was not "
                              "recorded; see `interlock status`")
        reply: Reply = mod.answer(host_event, payload, Result.from_dict(record))
    except Exception as exc:  # every failure is the bridge's deny
        reason = str(exc) if isinstance(exc, BridgeError) else f"{type(exc).__name__}: {exc}"
        reply = failure(mod, host_event, reason)
    return reply


def encode(reply: Reply) -> tuple[bytes, dict[str, str]]:
    """The response body (stdout then stderr) and the headers that split it."""
    out = reply.stdout
    if out and not out.endswith("\n"):
        out += "\n"
    stdout = out.encode()
    body = stdout + reply.stderr.encode()
    return body, {"X-Interlock-Exit": str(reply.code),
                  "X-Interlock-Stdout-Length": str(len(stdout))}

