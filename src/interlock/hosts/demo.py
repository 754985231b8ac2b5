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
    """Prints the run as it happens: model turns, tool calls, and every hook decision.

    Each entry is a label and a text that wraps under itself, so a long line
    never restarts at column 0. The results of one reply's calls are printed in
    the order of the calls, each with its tool's name, whatever order they
    finish in."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.calls: list[str] = []
        """Tools of the current reply's calls whose result is not printed yet."""
        self.results: list[tuple[str, str, str]] = []
        """(tool, status, result) that arrived before an earlier call's result."""

    def line(self, label: str, style: str, text: Any) -> None:
        from rich.table import Table
        from rich.text import Text

        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=9, no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row(Text(label, style=style),
                     text if not isinstance(text, str) else Text(text))
        self.console.print(grid)

    # progress from the agent -------------------------------------------------
    def step(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "model":
            self._flush(everything=True)
            if data["text"]:
                self.line("model", "bold magenta", data["text"])
        elif kind == "tool_call":
            self.calls.append(data["tool"])
            self.line("  run", "cyan", f"{data['tool']} {data['args']}")
        elif kind == "blocked":
            self.calls.append(data["tool"])
            if data.get("event") == "protected":
                self.line("  engine", "bold red", f"refused {data['tool']}: {data['reason']}")
            elif data.get("event") != "before_tool_call":  # a hook's block names the call
                self.line("  blocked", "red", f"{data['tool']} {data['args']}")
        elif kind == "tool_result":
            self.results.append((data["tool"], data["status"], data["result"]))
            self._flush()

    def _flush(self, *, everything: bool = False) -> None:
        """Print the waiting results that are next in call order (all with
        ``everything``: a result of a call never announced is not held back)."""
        while self.results:
            index = next((i for i, r in enumerate(self.results)
                          if self.calls and r[0] == self.calls[0]), None)
            if index is None:
                if not everything and self.calls:
                    return
                index = 0
            tool, status, result = self.results.pop(index)
            if self.calls and self.calls[0] == tool:
                self.calls.pop(0)
            self._result(tool, status, result)
        if everything:
            self.calls.clear()

    def _result(self, tool: str, status: str, result: str) -> None:
        import json
        import textwrap

        from rich.text import Text

        style = {"ok": "green", "blocked": "red", "error": "yellow"}.get(status, "white")
        text = Text(f"{tool} ", style="bold")
        text.append(status, style=style)
        try:
            data = json.loads(result)
        except ValueError:
            data = None
        if isinstance(data, dict) and "reason" in data and status != "ok":
            # A refusal: its reason and hint in full, not the JSON around them.
            text.append(f": {data['reason']}")
            if data.get("hint"):
                text.append(f" (hint: {data['hint']})")
        else:
            text.append(": " + textwrap.shorten(result, 240, placeholder=" ..."))
        self.line("  result", style, text)
        if "refused by the sandbox" in result:
            self.line("  sandbox", "bold red",
                      "refused the write: the policy folder is read-only for the agent's "
                      "commands")

    # decisions from the engine (a Sink) -----------------------------------------
    def dispatched(self, outcome: Outcome) -> None:
        for hook, decision, _f, _l, _s in outcome.raw:
            if decision is None:
                continue
            verdict = decision.verdict.value
            if verdict == "block":
                event = outcome.event
                call = (f" of {event.tool_name} {event.args}"
                        if isinstance(event, BeforeToolCall) else "")
                self.line("  hook", "bold red", f"{hook.qualified_name} blocked "
                                                f"{outcome.name}{call}: {decision.reason}")
            elif verdict == "modify":
                self.line("  hook", "bold yellow",
                          f"{hook.qualified_name} modified {', '.join(decision.changes or {})} "
                          f"on {outcome.name} (secret redacted)")
            if decision.context:
                self.line("  hook", "bold green", f"{hook.qualified_name} added context to "
                                                  f"the user message: {decision.context!r}")

    def failed(self, record: FailureRecord) -> None:
        self.line("  hook", "red", f"failure {record.hook}: {record.error}")


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
    console.print("hooks: [red]no-rm-rf[/] (before_tool_call, terminal)\n"
                  "       [yellow]redact-secrets[/] (after_tool_call, modifier)\n"
                  "       [green]project-notes[/] (user_input, context)")
    console.print("the engine also protects .interlock/, the user, managed and state dirs\n")
    with tempfile.TemporaryDirectory(prefix="interlock-demo-") as tmp:
        root = Path(tmp)
        _workspace(root)
        show = _Show(console)
        show.line("user", "bold", PROMPT)
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
