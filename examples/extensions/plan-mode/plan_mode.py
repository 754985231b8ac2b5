"""Plan mode: the model may only read until the user confirms its plan.

A session starts with only the read-only tools active (``ctx.tools``), and
says so in the status line and to the model. ``/approve`` (or ctrl+o) asks
the user to confirm the plan (``ctx.ui.confirm``: the prompt permission asks
use) and then makes every tool active again; ``/plan`` goes back to planning.
A write the model attempts meanwhile is refused by the engine (docs/extensions.md,
Active tools), and the refusal is audited like any hook's block.
"""

from __future__ import annotations

from typing import Any

from interlock import context

NOTE = ("You are in plan mode: only read-only tools are available. Read what you "
        "need, then write the plan and ask the user to run /approve.")


def register(ctx: Any) -> None:
    def read_only() -> list[str]:
        return [t.name for t in ctx.tools.available() if t.read_only]

    def planning() -> bool:
        """The session's active set is the truth (it is saved with the session)."""
        allowed = set(read_only())
        return all(name in allowed for name in ctx.tools.active())

    def start_planning() -> list[str]:
        names = ctx.tools.set_active(read_only())
        ctx.ui.status("PLAN MODE: read-only (/approve)")
        return names

    @ctx.on("session_start", name="start")
    def start(event: Any) -> None:
        start_planning()

    @ctx.on("before_llm_call", name="note")
    def note(event: Any) -> Any:
        return context(NOTE) if planning() else None

    async def approve(arguments: str = "", command_ctx: Any = None) -> str:
        if not planning():
            return "not in plan mode"
        if not await ctx.ui.confirm("Approve the plan and enable every tool?"):
            return "still planning: the tools stay read-only"
        ctx.tools.set_active(None)
        ctx.ui.status("plan approved: all tools")
        return "plan approved: every tool is active"

    def plan(arguments: str = "", command_ctx: Any = None) -> str:
        return "plan mode: active tools are " + ", ".join(start_planning())

    ctx.register_command("approve", approve, description="Confirm the plan; enable all tools.")
    ctx.register_command("plan", plan, description="Back to plan mode (read-only tools).")
    ctx.ui.shortcut("ctrl+o", approve, help="approve the plan")
    ctx.ui.status("PLAN MODE: read-only (/approve)")  # every session starts planning
