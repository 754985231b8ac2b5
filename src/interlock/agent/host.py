"""Setting up an engine for a command-line host (run, chat, demo, serve).

One engine serves everything a host runs: the registry
(``interlock.registry.open_engine``: config files, HOOK.md folders, bundled
hooks) manages its configured hooks, and the extensions (entry points, user
and project extension folders: :class:`interlock.extensions.ExtensionSet`)
register theirs into the same engine. The registry swaps only the hooks it
owns on a reload, so extension hooks survive it. The registry's
``[[permissions]]`` rules are the agent's policy; extensions add tools,
slash commands and model providers (``--model PREFIX:NAME``). Built-in tool
and command names are reserved: an extension that claims one fails to load
with a message naming the clash, and the others still load.

Every host that runs the project's policy loads the same extensions the same
way (:func:`load_extensions`): the agent (:func:`open_host`), ``interlock
serve`` and the in-process bridge, so an extension's hooks, and the
fail-closed stand-ins for the events a failed one guards, hold everywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock._dispatch import Engine
from interlock._errors import ConfigError
from interlock.agent.permissions import PermissionRule, rule

if TYPE_CHECKING:
    from interlock.extensions import ExtensionInfo, ExtensionSet
    from interlock.registry import Registry



def builtin_names() -> tuple[frozenset[str], frozenset[str]]:
    """Tool and command names extensions may not take."""
    from interlock.agent.builtin_tools import builtin_tools
    from interlock.agent.commands import BUILTIN
    from interlock.agent.subagents import delegate_tool

    tools = frozenset(t.name for t in (*builtin_tools(), delegate_tool()))
    return tools, frozenset(c.name for c in BUILTIN) | {"exit", "quit"}


class Host:
    """The engine of one host, with the registry and the extensions that feed it."""

    def __init__(self, engine: Engine, registry: Registry, extensions: ExtensionSet) -> None:
        self.engine = engine
        self.registry = registry
        self.extensions = extensions

    @property
    def rules(self) -> list[PermissionRule]:
        """The registry's ``[[permissions]]`` rules (of its current revision)."""
        return self.registry.permissions

    @property
    def failed(self) -> list[ExtensionInfo]:
        return [i for i in self.extensions.infos.values() if i.status != "loaded"]

    def close(self) -> None:
        from interlock.registry import close_engine

        # Deliver what extensions already published before their listeners go.
        self.extensions.bus.drain(5.0)
        self.extensions.close()
        close_engine(self.engine, self.registry)


def open_host(project_root: Path, *, config: Path | None = None, accept_hooks: bool = False,
              sinks: Sequence[Any] = (), home: Path | None = None,
              use_entry_points: bool = True, record: bool = True,
              store: str | None = None) -> Host:
    """The registry's engine with every extension loaded into it.

    With ``record`` (the default) every dispatch is audited and every failure
    dead-lettered in the store (``store``, else ``$INTERLOCK_STORE``, else the
    state dir's ``interlock.db``), which ``interlock status``, ``deadletter``
    and ``audit`` read. :meth:`Host.close` flushes it.

    Raises ConfigError when the hooks config has no good revision: a host
    never runs tools with the configured hooks missing.
    """
    from interlock.registry import close_engine, open_engine

    engine, registry = open_engine(project_root, config=config, accept_hooks=accept_hooks,
                                   sinks=tuple(sinks), record=record, store=store)
    try:
        extensions = load_extensions(engine, project_root, home=home,
                                     use_entry_points=use_entry_points)
    except BaseException:
        close_engine(engine, registry)
        raise
    return Host(engine, registry, extensions)


def load_extensions(engine: Engine, project_root: Path, *, home: Path | None = None,
                    use_entry_points: bool = True) -> ExtensionSet:
    """Every extension (entry points, user folders, the project's approved folders)
    loaded into ``engine``, built-in tool and command names reserved.

    One that fails, is unapproved or changed is logged with why, and stands in
    with a fail-closed hook on the events it guards. Raises ConfigError (and
    loads nothing) when they cannot even be discovered, since what they would
    guard is then unknown.
    """
    from interlock.extensions import ExtensionSet

    tools, commands = builtin_names()
    extensions = ExtensionSet(engine, home=home, project=project_root, reserved_tools=tools,
                              reserved_commands=commands, use_entry_points=use_entry_points)
    loaded = False
    try:
        extensions.load_all()
        loaded = True
    except ConfigError:
        raise
    except Exception as exc:  # hosts show ConfigErrors as one line, never a traceback
        raise ConfigError(f"extensions could not be loaded: {type(exc).__name__}: {exc}",
                          fix="see `interlock ext list`") from exc
    finally:
        if not loaded:
            extensions.bus.drain(5.0)
            extensions.close()
    return extensions


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
            rules.append(rule(tool, pattern or "*", action, source=f"--{action}"))
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
                on_step: Any = None, ask_person: Any = None) -> tuple[Any, Host]:
    """An Agent from a RunSpec (engine, extensions, model, store, session resumed when
    asked), and the Host to close once it is done."""
    from interlock.agent.commands import CommandRegistry
    from interlock.agent.loop import Agent
    from interlock.agent.options import AgentOptions
    from interlock.agent.sessions import SessionStore
    from interlock.models import resolve_model
    from interlock.paths import state_dir

    host = open_host(spec.cwd, config=spec.config, accept_hooks=spec.accept_hooks)
    try:
        exts = host.extensions
        model, name = resolve_model(spec.model, providers=exts.providers,
                                    base_url=spec.base_url, api_key=spec.api_key)
        store = SessionStore(spec.db or state_dir() / "sessions.db")
        session = store.load(spec.session) if spec.session else None
        registry = host.registry
        mode, network = registry.sandbox
        options = AgentOptions(model=name, cwd=Path(session.cwd) if session else spec.cwd,
                               project_root=spec.cwd, permissions=list(spec.rules),
                               live_permissions=lambda: host.rules,
                               pinned=lambda: registry.pinned_files, sandbox=mode,
                               sandbox_network=network,
                               max_turns=spec.max_turns, on_text=on_text, on_step=on_step,
                               ask_person=ask_person if interactive else None)
        agent = Agent(host.engine, model, options=options, store=store, session=session,
                      extra_tools=list(exts.tools.values()),
                      commands=CommandRegistry(exts.commands.values()))
    except BaseException:
        host.close()
        raise
    return agent, host


def _print_step(kind: str, data: dict[str, Any]) -> None:

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

    def on_text(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def on_step(kind: str, data: dict[str, Any]) -> None:
        if spec.verbose or (kind == "model" and data.get("text")):
            _print_step(kind, data)

    agent, host = build_agent(spec, on_text=on_text, on_step=on_step)
    if spec.verbose or not agent.sandbox.active:
        sys.stderr.write(agent.sandbox.status.line() + "\n")

    async def go() -> Any:
        from interlock.agent.options import RunResult, RunStatus

        if prompt.startswith("/"):
            # A slash command, as in chat (/new, /compact, an extension's).
            name = prompt[1:].partition(" ")[0]
            reply = await agent.command(prompt)
            if reply:
                sys.stdout.write(f"{reply}\n")
            status = RunStatus.COMPLETED
            if agent.commands.get(name) is None:
                status = RunStatus.ERROR
            elif (reply or "").startswith(f"/{name} blocked:"):
                status = RunStatus.BLOCKED
            return RunResult(status, text=reply or "", session_id=agent.session.id)
        result = await agent.run(prompt)
        await agent.close()
        return result

    try:
        result = asyncio.run(go())
    finally:
        host.close()
    if export is not None:
        with export.open("w", encoding="utf-8") as out:
            agent.store.export_jsonl(agent.session.id, out)
    sys.stderr.write(f"session {agent.session.id}: {result.status.value}"
                     + ("" if result.ok else f": {result.text}") + "\n")
    return 0 if result.ok else 1
