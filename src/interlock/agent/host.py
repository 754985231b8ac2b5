"""Setting up an engine for a command-line host (run, chat, replay).

Hooks come from the registry (``interlock.registry.open_engine``: config
files, HOOK.md folders, entry points) when it is installed; its permission
rules become the agent's policy. Without the registry, only entry-point
extensions are loaded, and ``--config`` is an error rather than silently
running with no policy.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from interlock._dispatch import Engine
from interlock._errors import ConfigError
from interlock.agent.permissions import PermissionPolicy, PermissionRule


def open_host_engine(project_root: Path, *, config: Path | None = None,
                     accept_hooks: bool = False, sinks: Sequence[Any] = ()
                     ) -> tuple[Engine, list[PermissionRule]]:
    try:
        registry_mod = importlib.import_module("interlock.registry")
        open_engine = registry_mod.open_engine
    except (ImportError, AttributeError):
        if config is not None:
            raise ConfigError(
                "--config needs the hook registry (interlock.registry), which this build "
                "does not include", file=str(config),
                fix="install a build with the registry, or drop --config") from None
        from interlock.extensions import load_entry_points

        engine = Engine(sinks=sinks)
        load_entry_points(engine)
        return engine, []
    engine, registry = open_engine(project_root, config=config, accept_hooks=accept_hooks,
                                   sinks=tuple(sinks))
    rules = PermissionPolicy(getattr(registry, "permissions", ()) or ()).rules
    return engine, rules


def parse_rules(allow: Iterable[str], ask: Iterable[str], deny: Iterable[str]
                ) -> list[PermissionRule]:
    """``TOOL`` or ``TOOL:PATTERN`` flags as rules (``terminal:git *``)."""
    rules = []
    for action, items in (("allow", allow), ("ask", ask), ("deny", deny)):
        for item in items:
            tool, _, pattern = item.partition(":")
            if not tool:
                raise ConfigError(f"empty tool name in {item!r}", field=f"--{action}",
                                  fix="write TOOL or TOOL:PATTERN, e.g. 'terminal:git *'")
            rules.append(PermissionRule(tool, pattern or "*", action))
    return rules


class RunSpec:
    """What `interlock run` and `interlock chat` were asked for on the command line."""

    def __init__(self, *, model: str | None = None, config: Path | None = None,
                 base_url: str | None = None, api_key: str | None = None,
                 session: str | None = None, db: Path | None = None, cwd: Path | None = None,
                 allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = (),
                 accept_hooks: bool = False, max_turns: int = 25, verbose: bool = False
                 ) -> None:
        self.model = model
        self.config = config
        self.base_url = base_url
        self.api_key = api_key
        self.session = session
        self.db = db
        self.cwd = (cwd or Path.cwd()).resolve()
        self.rules = parse_rules(allow, ask, deny)
        self.accept_hooks = accept_hooks
        self.max_turns = max_turns
        self.verbose = verbose


def build_agent(spec: RunSpec, *, interactive: bool = False, on_text: Any = None,
                on_step: Any = None, ask_person: Any = None) -> Any:
    """An Agent from a RunSpec: engine, model, store, session (resumed when asked)."""
    from interlock.agent.loop import Agent
    from interlock.agent.options import AgentOptions
    from interlock.agent.protect import state_dir
    from interlock.agent.sessions import SessionStore
    from interlock.models import resolve_model

    model, name = resolve_model(spec.model, base_url=spec.base_url, api_key=spec.api_key)
    engine, rules = open_host_engine(spec.cwd, config=spec.config,
                                     accept_hooks=spec.accept_hooks)
    store = SessionStore(spec.db or state_dir() / "sessions.db")
    session = store.load(spec.session) if spec.session else None
    options = AgentOptions(model=name, cwd=Path(session.cwd) if session else spec.cwd,
                           project_root=spec.cwd, permissions=[*rules, *spec.rules],
                           max_turns=spec.max_turns, on_text=on_text, on_step=on_step,
                           ask_person=ask_person if interactive else None)
    return Agent(engine, model, options=options, store=store, session=session)


def _print_step(kind: str, data: dict[str, Any]) -> None:
    import sys

    if kind == "model" and data.get("text"):
        sys.stdout.write("\n")  # ends the turn's streamed text
        sys.stdout.flush()
    elif kind == "tool_call":
        sys.stderr.write(f"  > {data['tool']} {data['args']}\n")
    elif kind == "tool_result":
        sys.stderr.write(f"  < {data['status']}: {data['result'][:200]}\n")
    elif kind == "blocked":
        sys.stderr.write(f"  ! blocked ({data.get('event')}): {data.get('reason')}\n")


def run_once(spec: RunSpec, prompt: str, export: Path | None) -> int:
    """`interlock run`: stream the reply to stdout, report the end on stderr."""
    import asyncio
    import sys

    def on_text(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def on_step(kind: str, data: dict[str, Any]) -> None:
        if spec.verbose or (kind == "model" and data.get("text")):
            _print_step(kind, data)

    agent = build_agent(spec, on_text=on_text, on_step=on_step)

    async def go() -> Any:
        try:
            result = await agent.run(prompt)
            await agent.close()
            return result
        finally:
            agent.engine.close()

    result = asyncio.run(go())
    if export is not None:
        with export.open("w", encoding="utf-8") as out:
            agent.store.export_jsonl(agent.session.id, out)
    sys.stderr.write(f"session {agent.session.id}: {result.status.value}"
                     + ("" if result.ok else f": {result.text}") + "\n")
    return 0 if result.ok else 1
