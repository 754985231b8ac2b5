"""Running the reference agent from the command line: `interlock run` and `chat`.

The host itself (which project, the engine, the registry, the extensions and
their live reload) is :mod:`interlock.hosts.assembly`, shared with every other host;
this module turns command-line flags into an Agent over it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from interlock.agent.permissions import PermissionRule, rule
from interlock.engine.errors import ConfigError
from interlock.hosts.assembly import Host, Project


def builtin_names() -> tuple[frozenset[str], frozenset[str]]:
    """Tool and command names extensions may not take, from the agent's own lists
    (:data:`interlock.hosts.assembly.RESERVED_TOOLS` must say the same; a test checks it)."""
    from interlock.agent.builtin_tools import builtin_tools
    from interlock.agent.commands import BUILTIN
    from interlock.agent.subagents import delegate_tool

    tools = frozenset(t.name for t in (*builtin_tools(), delegate_tool()))
    return tools, frozenset(c.name for c in BUILTIN) | {"exit", "quit"}


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


def mcp_check(registry: Any) -> Any:
    """The check, just before the servers start, that the project's servers are
    still what was approved (config/mcp_servers.py)."""
    from interlock.config.mcp_servers import still_approved

    consent = registry.mcp_consent
    if consent is None:
        return None
    if consent.pending:  # said, not silently left out
        names = ", ".join(s.name for s in consent.declared)
        sys.stderr.write(f"interlock: the project's MCP servers ({names}) wait for approval "
                         "and are not started: review .interlock/ and run `interlock hooks "
                         "approve project:mcp_servers`\n")
    return still_approved(registry.mcp_servers, consent)


def build_agent(spec: RunSpec, *, interactive: bool = False, on_text: Any = None,
                on_step: Any = None, ask_person: Any = None) -> tuple[Any, Host]:
    """An Agent from a RunSpec (engine, extensions, model, store, session resumed when
    asked), and the Host to close once it is done."""
    from interlock.agent.commands import CommandRegistry
    from interlock.agent.loop import Agent
    from interlock.agent.options import AgentOptions
    from interlock.agent.sessions import SessionStore
    from interlock.models import resolve_model
    from interlock.store.paths import state_dir

    project = Project.discover(cwd=spec.cwd)
    host = Host.open(project, config=spec.config, accept_hooks=spec.accept_hooks)
    try:
        if spec.verbose:
            sys.stderr.write(f"interlock: {project.describe()}\n")
        host.warn_if_unguarded()
        model, name = resolve_model(spec.model, providers=host.providers,
                                    base_url=spec.base_url, api_key=spec.api_key)
        store = SessionStore(spec.db or state_dir() / "sessions.db")
        session = store.load(spec.session) if spec.session else None
        registry = host.registry
        mode, network = registry.sandbox
        options = AgentOptions(model=name, cwd=Path(session.cwd) if session else spec.cwd,
                               project_root=project.root, permissions=list(spec.rules),
                               live_permissions=lambda: host.rules,
                               dispatch=registry.dispatch,
                               pinned=lambda: registry.pinned_files, sandbox=mode,
                               sandbox_network=network,
                               max_turns=spec.max_turns, on_text=on_text, on_step=on_step,
                               ask_person=ask_person if interactive else None,
                               mcp_servers=registry.mcp_servers, mcp_check=mcp_check(registry))
        agent = Agent(host.engine, model, options=options, store=store, session=session,
                      extra_tools=list(host.tools.values()),
                      commands=CommandRegistry(host.commands.values()))
        # Edits, approvals and toggles from other terminals apply to this run too.
        host.start_live()
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
        sys.stderr.write(f"  < {data['status']}: {_clip(str(data['result']))}\n")
    elif kind == "blocked":
        sys.stderr.write(f"  ! blocked ({data.get('event')}): {data.get('reason')}\n")


def _clip(text: str, limit: int = 200) -> str:
    """``text`` up to ``limit`` characters, cut at a word and marked when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + f" … ({len(text)} characters)"


def run_once(spec: RunSpec, prompt: str, export: Path | None, *, as_json: bool = False
             ) -> int:
    """`interlock run`: stream the reply to stdout, report the end on stderr; with
    ``as_json``, one JSON object on stdout instead of the reply."""
    import asyncio

    def on_text(text: str) -> None:
        if not as_json:
            sys.stdout.write(text)
            sys.stdout.flush()

    seen = {"ran": 0, "stand_in": 0}
    decisions: list[dict[str, Any]] = []

    def on_step(kind: str, data: dict[str, Any]) -> None:
        # What the hooks did is said even without -v: a run that printed only
        # "completed" while hooks blocked its calls would hide the policy at work.
        if kind in ("blocked", "asked", "rewritten"):
            line = summary_line(kind, data)
            sys.stderr.write(line + "\n")
            decisions.append({"kind": kind, "tool": data.get("tool"),
                              "hook": data.get("hook") or None,
                              "line": line.removeprefix("interlock: ")})
            seen["stand_in"] += bool(data.get("stand_in"))
        elif spec.verbose or (kind == "model" and data.get("text") and not as_json):
            _print_step(kind, data)
        seen["ran"] += kind == "tool_call"

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
    code = 0 if result.ok else 1
    if result.ok and seen["stand_in"] and not seen["ran"]:
        # Nothing the model asked for ran: an extension that guards these calls
        # did not load, and its fail-closed stand-in refused them all.
        sys.stderr.write("interlock: every tool call was blocked by the fail-closed stand-in "
                         "of an extension that did not load (see `interlock ext list`)\n")
        code = 1
    if as_json:
        from interlock.hosts.cli._common import print_json

        print_json({"session_id": agent.session.id, "status": result.status.value,
                    "text": result.text, "exit_code": code, "tool_calls_run": seen["ran"],
                    "decisions": decisions})
    return code


def summary_line(kind: str, data: dict[str, Any]) -> str:
    """One stderr line for a blocked, asked or rewritten call, reason in full."""
    from interlock.engine.redact import redact

    call = f"{data.get('tool') or data.get('event')} {_shown(data.get('args'))}".rstrip()
    hook = f" ({data['hook']})" if data.get("hook") else ""
    if kind == "rewritten":
        text = f"rewrote {call} -> {_shown(data.get('new_args'))}{hook}"
    elif kind == "asked":
        text = f"asked {call}: {data.get('reason') or 'a hook asks'}{hook}"
    else:
        text = f"blocked {call}: {data.get('reason') or 'no reason given'}{hook}"
    return "interlock: " + redact(text)


def _shown(args: Any) -> str:
    """A call's arguments as the user would recognise them: the command or path."""
    import json

    if not isinstance(args, dict):
        return ""
    for key in ("command", "path"):
        if isinstance(args.get(key), str):
            value = " ".join(args[key].split())
            break
    else:
        value = json.dumps(args, sort_keys=True, default=str)
    return f"`{value[:200]}{'…' if len(value) > 200 else ''}`"
