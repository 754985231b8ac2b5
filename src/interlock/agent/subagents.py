"""Subagents: the delegate tool runs a child agent on a task.

The child has its own session (``parent_session_id`` and ``depth`` set on
every event it fires), shares the parent's engine, store and model, and is
gated by subagent_start (block, change the task, add context) and
subagent_stop (block = the child keeps working, with the reason as its next
instruction; capped by the engine like before_stop).
"""

from __future__ import annotations

from typing import Any

from interlock.agent.sessions import Session
from interlock.agent.tools import ToolContext, ToolError
from interlock.models.tooling import ToolSpec

DELEGATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "minLength": 1, "description": "What the subagent must do."},
        "tools": {"type": "array", "items": {"type": "string"},
                  "description": "Tools the subagent may use (default: all but delegate at "
                                 "the deepest level)."},
    },
    "required": ["task"],
    "additionalProperties": False,
}


async def delegate(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    parent = ctx.agent
    depth = parent.session.depth + 1
    if depth > parent.options.max_depth:
        raise ToolError(f"subagents may nest at most {parent.options.max_depth} deep")
    # A child gets the parent's active tools at most: a narrowed session
    # (agent/active.py) must not widen itself through a subagent.
    active = [n for n in parent.active.names() if parent.active.permitted(n)]
    names = args.get("tools") or active
    if depth >= parent.options.max_depth:
        names = [n for n in names if n != "delegate"]
    unknown = [n for n in names if parent.tools.get(n) is None]
    if unknown:
        raise ToolError(f"unknown tool(s) for the subagent: {unknown}")
    inactive = [n for n in names if n not in active]
    if inactive:
        raise ToolError(f"tool(s) not active in this session: {inactive}")
    session = Session(parent_id=parent.session.id, depth=depth, model=parent.session.model,
                      cwd=str(parent.cwd), system_prompt=parent.session.system_prompt)
    start = await parent.gate("subagent_start", task=args["task"], child_session_id=session.id)
    if start.blocked:
        raise ToolError(f"subagent not started: {parent.reason_for_model(start)}")
    child = parent.child(session, parent.tools.subset(names))
    ctx_text = start.context(parent.options.context_cap)
    if ctx_text:
        child.pending_context.append(ctx_text)
    parent.step("subagent", session=session.id, task=start.payload.task)
    result = await child.run(start.payload.task)
    while True:
        stop = await parent.gate("subagent_stop", child_session_id=session.id,
                                 result=result.text)
        if not stop.blocked:
            break
        hook = stop.outcome.hook.qualified_name if stop.outcome.hook else "subagent_stop"
        result = await child.resume_with(stop.outcome.reason or "Keep working.", hook)
    await child.close("subagent_done")
    return {"session_id": session.id, "status": result.status.value, "result": result.text}


def delegate_tool() -> ToolSpec:
    return ToolSpec("delegate", "Hand a self-contained task to a subagent and get its answer.",
                    DELEGATE_SCHEMA, delegate)
