"""``[[mcp_servers]]``: MCP servers whose tools the reference agent offers.

A server entry starts a process (or reaches a URL) with the agent's rights, so
a project's entries are one consent item, ``project:mcp_servers``, approved
like a hook (`interlock hooks approve`, ``--accept-hooks``) and pinned to a
digest of the entries and of the files their commands run (as a command hook's
approval pins its script). Until then the project's servers are not started,
and the run says so. User and managed entries need no consent. Before a
server starts, its digest is taken again: a script swapped after approval is
refused (docs/mcp.md, MCP servers in the agent).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from interlock.config.model import McpServerDef
from interlock.config.parse import Locator, PathKey, convert_error
from interlock.config.trust import TrustStore, hook_key
from interlock.engine.errors import ConfigError
from interlock.engine.hooks import Source
from interlock.engine.logs import logger
from interlock.engine.sha import sha256
from interlock.store.paths import project_dir

log = logger("interlock.registry")

NAME = "project:mcp_servers"
"""The consent item of a project's MCP servers."""
ALIASES = (NAME, "mcp_servers")

_SERVER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")
"""Letters, digits, ``-`` and single ``_``: a ``__`` would make ``mcp__a__b__c``
ambiguous between servers."""


class McpServer(msgspec.Struct, frozen=True):
    """One declared server, where it was declared, and how to start it."""

    definition: McpServerDef
    source: Source
    file: Path
    line: int | None
    root: Path
    """The project root: where a relative ``cwd`` and the command's files are read."""

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def argv(self) -> list[str]:
        d = self.definition
        if d.command is None:
            return []
        base = shlex.split(d.command) if isinstance(d.command, str) else list(d.command)
        return [*base, *d.args]

    @property
    def cwd(self) -> Path:
        d = self.definition
        return (self.root / d.cwd).resolve() if d.cwd else self.root

    def digest(self) -> str:
        """sha256 over the entry and every file its command runs (config/pins.py)."""
        from interlock.config.pins import command_pins
        from interlock.config.refs import digest

        if not self.argv:
            return digest(self.definition.normalised(), [], self.root)
        env = self.definition.env
        pinner = command_pins(self.argv, cwd=self.cwd, root=self.root,
                              path_env=env.get("PATH"), pythonpath=env.get("PYTHONPATH"))
        return digest(self.definition.normalised(), [*pinner.files, *pinner.folders],
                      self.root)


def to_mcp_server(data: Any, file: Path, base: PathKey, locate: Locator, source: Source,
                  root: Path) -> McpServer:
    """One ``[[mcp_servers]]`` table, checked; a ConfigError names the field and the fix."""
    line = locate(base)
    if not isinstance(data, dict):
        raise ConfigError("an MCP server must be a table", file=str(file), line=line,
                          fix='write [[mcp_servers]] with name = "..." and command = [...]')
    try:
        d = msgspec.convert(data, McpServerDef)
    except msgspec.ValidationError as exc:
        raise convert_error(exc, McpServerDef, file, base, locate) from None
    if not _SERVER_NAME.match(d.name) or len(d.name) > 40:
        raise ConfigError(f"MCP server name {d.name!r} is not usable in tool names",
                          file=str(file), line=locate((*base, "name")), field="name",
                          fix="use letters, digits, '-' and single '_' (at most 40): its "
                              "tools are offered as mcp__<name>__<tool>")
    if (d.command is None) == (d.url is None):
        raise ConfigError(f"MCP server {d.name!r} needs exactly one of command and url",
                          file=str(file), line=line, field="command",
                          fix='start it with command = ["python3", "server.py"], or reach '
                              'it with url = "http://127.0.0.1:8000/mcp"')
    if d.command is not None and not (shlex.split(d.command) if isinstance(d.command, str)
                                      else d.command):
        raise ConfigError(f"MCP server {d.name!r} has an empty command", file=str(file),
                          line=locate((*base, "command")), field="command",
                          fix='write the command as a list: ["python3", "server.py"]')
    if d.url is not None and not d.url.startswith(("http://", "https://")):
        raise ConfigError(f"MCP server {d.name!r}: url must be http:// or https://",
                          file=str(file), line=locate((*base, "url")), field="url",
                          fix='write the streamable HTTP endpoint, e.g. '
                              '"http://127.0.0.1:8000/mcp"')
    if not 0 < d.timeout <= 3600:
        raise ConfigError(f"MCP server {d.name!r}: timeout must be between 0 and 3600 seconds",
                          file=str(file), line=locate((*base, "timeout")), field="timeout",
                          fix="give the seconds one tool call may take, e.g. timeout = 60")
    return McpServer(d, source, file, line, root)


def merge(servers: list[McpServer]) -> list[McpServer]:
    """One entry per name: a name declared in two places is an error naming both."""
    seen: dict[str, McpServer] = {}
    for s in servers:
        first = seen.get(s.name)
        if first is not None:
            raise ConfigError(
                f"MCP server {s.name!r} is declared twice (first in {first.file}"
                + (f":{first.line}" if first.line else "") + ")",
                file=str(s.file), line=s.line, field="name",
                fix="give each server its own name, or remove one of the entries")
        seen[s.name] = s
    return list(seen.values())


class ServersConsent(msgspec.Struct):
    """The project's MCP servers and whether they may start (`hooks list` shows it)."""

    key: str
    digest: str
    approved: bool
    declared: list[McpServer] = msgspec.field(default_factory=list)

    @property
    def name(self) -> str:
        return NAME

    @property
    def pending(self) -> bool:
        return bool(self.declared) and not self.approved

    @property
    def state(self) -> str:
        names = ", ".join(s.name for s in self.declared)
        return (f"{names}: " + ("active" if self.approved else "waiting for approval (not "
                                "started)")) if self.declared else "none"

    def to_dict(self) -> dict[str, Any]:
        return {"name": NAME, "approved": self.approved, "state": self.state,
                "digest": self.digest, "servers": [s.name for s in self.declared]}


def digest_of(servers: list[McpServer]) -> str:
    """One digest over every server of the project (by name)."""
    parts = sorted((s.name, s.digest()) for s in servers)
    return sha256(json.dumps(parts).encode()).hexdigest()


def consent(servers: list[McpServer], project_root: Path, trust: TrustStore, *,
            accept: bool) -> ServersConsent:
    """The consent of the project's servers in ``servers`` (approved with ``accept``)."""
    mine = [s for s in servers if s.source is Source.PROJECT]
    key = hook_key(NAME, project_dir(project_root))
    dig = digest_of(mine) if mine else ""
    c = ServersConsent(key, dig, bool(mine) and trust.approved(key, dig), mine)
    if accept and c.pending and not trust.revoked(key, dig):
        log.warning("approving the project's MCP servers because of --accept-hooks / "
                    "INTERLOCK_ACCEPT_HOOKS: %s", ", ".join(s.name for s in mine))
        trust.approve([(key, dig, NAME)], by="accept-hooks")
        c.approved = True
    return c


def in_force(servers: list[McpServer], c: ServersConsent | None) -> list[McpServer]:
    """The enabled servers that may start: everyone else's, and the project's once
    approved."""
    return [s for s in servers if s.definition.enabled
            and (s.source is not Source.PROJECT or (c is not None and c.approved))]


def still_approved(servers: list[McpServer], c: ServersConsent) -> Callable[[], bool]:
    """A check, for the moment before start, that the project's servers and their files
    are what was approved."""
    mine = [s for s in servers if s.source is Source.PROJECT]
    return lambda: not mine or digest_of(mine) == c.digest


def approve(trust: TrustStore, c: ServersConsent | None, names: list[str] | None,
            by: str) -> tuple[list[str] | None, list[str]]:
    """`hooks approve` for the servers: approves ``project:mcp_servers`` when it is
    pending and named (or ``names`` is None, all); returns the other names, and
    what it approved."""
    named = names is None or any(n in ALIASES for n in names)
    rest = None if names is None else [n for n in names if n not in ALIASES]
    if not named or c is None or not c.pending:
        return rest, []
    trust.approve([(c.key, c.digest, NAME)], by=by)
    return rest, [NAME]
