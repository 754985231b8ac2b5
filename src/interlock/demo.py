"""A small offline example: events of a short run go through three hooks.

It shows a block of a dangerous command, a modifier that redacts a secret,
and context injected for the model. (The reference agent's scripted demo
replaces this once it lands.)
"""

from __future__ import annotations

import re

from interlock import Engine, block, context, modify
from interlock.events import AfterToolCall, BeforeToolCall, UserInput

_SECRET = re.compile(r"sk-[A-Za-z0-9]{16,}")


def build_engine() -> Engine:
    engine = Engine()

    @engine.on("before_tool_call", matcher="terminal", name="no-rm-rf")
    def no_rm_rf(event: BeforeToolCall) -> object:
        if re.search(r"\brm\s+-[a-zA-Z]*[rR][a-zA-Z]*f?\s+/(\s|$)", event.args.get("command", "")):
            return block("rm -rf / would delete the machine", hint="remove specific paths")
        return None

    @engine.on("after_tool_call", modifies=True, name="redact-secrets")
    def redact(event: AfterToolCall) -> object:
        text = str(event.result)
        if _SECRET.search(text):
            return modify(result=_SECRET.sub("[REDACTED]", text))
        return None

    @engine.on("user_input", name="project-notes")
    def notes(event: UserInput) -> object:
        return context("This project deploys with `make release`; never push to main.")

    return engine


def run_demo() -> int:
    from rich.console import Console

    console = Console()
    engine = build_engine()
    console.rule("[bold]Interlock demo[/bold]: three hooks, four events, no network")
    steps = [
        UserInput(session_id="demo", text="clean up the server"),
        BeforeToolCall(session_id="demo", tool_name="terminal", args={"command": "ls /tmp"}),
        BeforeToolCall(session_id="demo", tool_name="terminal", args={"command": "rm -rf /"}),
        AfterToolCall(session_id="demo", tool_name="terminal", args={"command": "cat .env"},
                      result="OPENAI_KEY=sk-abcdefghijklmnopqrstuvwx"),
    ]
    for event in steps:
        outcome = engine.emit_sync(event)
        console.print(f"[cyan]{event.name}[/cyan] {event.to_dict().get('args') or ''}"
                      f"{getattr(event, 'text', '')}")
        if outcome.blocked:
            console.print(f"  [red]blocked[/red] by {outcome.hook.qualified_name}: "  # type: ignore[union-attr]
                          f"{outcome.reason}")
            console.print(f"  model sees: {outcome.tool_block_error()}")
        elif outcome.changes:
            console.print(f"  [yellow]modified[/yellow]: {outcome.changes}")
        elif outcome.contexts:
            console.print(f"  [green]context added[/green]:\n{outcome.context_text()}")
        else:
            console.print("  [green]allowed[/green]")
    engine.close()
    return 0
