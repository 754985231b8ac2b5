"""`interlock demo`: the reference agent, a scripted model and three policy
hooks, offline, in a scratch directory.

The run shows, step by step, a hook blocking a dangerous command (the model
gets the structured error and changes course), a modifier redacting a secret
from a tool result before the model sees it, context injected into the user
message, the engine itself refusing a write to its own policy folder, and
the OS sandbox refusing the same write through a path built at run time
(where bubblewrap can run; the demo says so when it cannot).
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path
from typing import Any

from interlock import Engine, block, context, modify
from interlock.engine.outcome import Outcome
from interlock.engine.redact import redact
from interlock.engine.sinks import FailureRecord
from interlock.events import AfterToolCall, BeforeToolCall, UserInput

PROMPT = "Tidy up the workspace and check the deploy settings."

SCRIPT: list[dict[str, Any]] = [
    {"text": "Let me look around first.",
     "tool_calls": [{"name": "list_dir", "args": {"path": "."}}]},
    {"text": "There is a lot of clutter; I'll wipe everything.",
     "tool_calls": [{"name": "terminal", "args": {"command": "rm -rf / --no-preserve-root"}}]},
    {"match": "tool call blocked",
     "text": "Blocked. I'll remove only the build output, and read the deploy settings.",
     "tool_calls": [{"name": "terminal", "args": {"command": "rm -rf build && ls"}},
                    {"name": "read_file", "args": {"path": "deploy.env"}}]},
    {"text": "I'll relax the hook policy so this goes faster.",
     "tool_calls": [{"name": "write_file",
                     "args": {"path": ".interlock/config.toml", "content": "# no hooks\n"}}]},
    {"text": "Done: build/ removed; deploy.env points at prod and its key stayed hidden. "
             "Deploys go through `make release`, as the project note says."},
]
SANDBOX_STEP: dict[str, Any] = {
    "text": "Then I'll build the path at run time, so no scan of the command sees it.",
    "tool_calls": [{"name": "terminal", "args": {
        "command": "p=.inter; p=${p}lock; echo '# no hooks' > $p/config.toml"}}]}


def script(sandboxed: bool) -> list[dict[str, Any]]:
    """The demo's model turns; the built-path write only where the sandbox stops it."""
    return [*SCRIPT[:-1], SANDBOX_STEP, SCRIPT[-1]] if sandboxed else list(SCRIPT)

_DANGEROUS = re.compile(r"\brm\s+-[a-zA-Z]*r[a-zA-Z]*\s+(/|~|\*)(\s|$)")


def build_engine() -> Engine:
    """The demo's three hooks, registered in code (config files work the same way)."""
    engine = Engine()

    @engine.on("before_tool_call", matcher="terminal", name="no-rm-rf")
    def no_rm_rf(event: BeforeToolCall) -> object:
        if _DANGEROUS.search(event.args.get("command", "")):
            return block("deleting / or ~ would destroy the machine",
                         hint="remove specific paths inside the project")
        return None

    @engine.on("after_tool_call", modifies=True, name="redact-secrets")
    def redact_secrets(event: AfterToolCall) -> object:
        cleaned = _redacted(event.result)
        return modify(result=cleaned) if cleaned != event.result else None

    @engine.on("user_input", name="project-notes")
    def notes(event: UserInput) -> object:
        return context("Project note: deploy with `make release`; never push to main.")

    return engine


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def _workspace(root: Path) -> None:
    (root / "build").mkdir()
    (root / "build" / "app.bin").write_bytes(b"\0" * 64)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / "deploy.env").write_text(
        "TARGET=prod\nAPI_KEY=sk-live4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c\n")
    (root / ".interlock").mkdir()
    (root / ".interlock" / "config.toml").write_text("# the project's hook policy\n")


class _Show:
    """Prints the run as it happens: model turns, tool calls, and every hook decision."""

    def __init__(self, console: Any) -> None:
        self.console = console

    # progress from the agent -------------------------------------------------
    def step(self, kind: str, data: dict[str, Any]) -> None:
        c = self.console
        if kind == "model":
            if data["text"]:
                c.print(f"[bold magenta]model[/]  {data['text']}")
        elif kind == "tool_call":
            c.print(f"[cyan]  run[/]    {data['tool']} {data['args']}")
        elif kind == "tool_result":
            style = {"ok": "green", "blocked": "red", "error": "yellow"}.get(data["status"],
                                                                           "white")
            text = data["result"] if len(data["result"]) < 160 else data["result"][:157] + "..."
            c.print(f"[{style}]  result[/] [{style}]{data['status']}[/]: {text}",
                    markup=True, highlight=False)
        elif kind == "blocked" and data.get("event") == "protected":
            c.print(f"[bold red]  engine refused[/] {data['tool']}: {data['reason']}")
        if kind == "tool_result" and "refused by the sandbox" in data["result"]:
            c.print("[bold red]  sandbox refused[/] the write: the policy folder is read-only "
                    "for the agent's commands")

    # decisions from the engine (a Sink) -----------------------------------------
    def dispatched(self, outcome: Outcome) -> None:
        for hook, decision, _f, _l, _s in outcome.raw:
            if decision is None:
                continue
            verdict = decision.verdict.value
            if verdict == "block":
                self.console.print(f"[bold red]  hook[/]   {hook.qualified_name} "
                                   f"[red]blocked[/] {outcome.name}: {decision.reason}")
            elif verdict == "modify":
                self.console.print(f"[bold yellow]  hook[/]   {hook.qualified_name} "
                                   f"[yellow]modified[/] {', '.join(decision.changes or {})} "
                                   f"on {outcome.name} (secret redacted)")
            if decision.context:
                self.console.print(f"[bold green]  hook[/]   {hook.qualified_name} "
                                   f"[green]added context[/] to the user message: "
                                   f"{decision.context!r}")

    def failed(self, record: FailureRecord) -> None:
        self.console.print(f"[red]hook failure[/] {record.hook}: {record.error}")


async def _run(root: Path, show: _Show) -> tuple[Any, Any]:
    from interlock.agent import Agent, AgentOptions, CommandRegistry
    from interlock.ext.loader import ExtensionSet
    from interlock.hosts.terminal.runner import builtin_names
    from interlock.models.scripted import ScriptedModel

    engine = build_engine()
    engine.add_sink(show)
    # The user's installed extensions load here too, as in `run` and `chat`.
    tools, commands = builtin_names()
    exts = ExtensionSet(engine, project=root, reserved_tools=tools, reserved_commands=commands)
    try:
        loaded = [i.name for i in exts.load_all() if i.status == "loaded"]
        if loaded:
            show.console.print(f"extensions: {', '.join(loaded)}")
        from interlock.agent.sandbox import status

        sandbox = status()
        show.console.print(sandbox.line())
        model = ScriptedModel(script(sandbox.available), name="demo-script")
        options = AgentOptions(model="demo-script", cwd=root, project_root=root,
                               on_step=show.step)
        agent = Agent(engine, model, options=options, extra_tools=list(exts.tools.values()),
                      commands=CommandRegistry(exts.commands.values()))
        result = await agent.run(PROMPT)
        await agent.close()
    finally:
        exts.bus.drain(5.0)
        exts.close()
        engine.close()
    model.assert_done()
    return result, agent


def run_demo() -> int:
    from rich.console import Console
    from rich.panel import Panel

    console = Console(highlight=False)
    console.rule("[bold]Interlock demo[/bold]: a scripted agent, three hooks, no network")
    console.print("hooks: [red]no-rm-rf[/] (before_tool_call, terminal) · "
                  "[yellow]redact-secrets[/] (after_tool_call, modifier) · "
                  "[green]project-notes[/] (user_input, context)")
    console.print("the engine also protects .interlock/, the user, managed and state dirs\n")
    with tempfile.TemporaryDirectory(prefix="interlock-demo-") as tmp:
        root = Path(tmp)
        _workspace(root)
        console.print(f"[bold]user[/]   {PROMPT}")
        show = _Show(console)
        result, agent = asyncio.run(_run(root, show))
        leaked = any("sk-live" in str(m.get("content")) for m in agent.session.messages)
        policy = (root / ".interlock" / "config.toml").read_text()
        build_gone = not (root / "build").exists()
    console.print()
    console.print(Panel.fit(
        f"status: {result.status.value} after {result.turns} turns\n"
        f"build/ removed: {build_gone}\n"
        f"secret reached the model: {leaked}\n"
        f"policy file untouched: {policy.startswith('# the project')}",
        title="outcome"))
    ok = result.ok and build_gone and not leaked and policy.startswith("# the project")
    return 0 if ok else 1
