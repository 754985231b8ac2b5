"""``interlock mcp wrap <agent>``: route an agent's MCP servers through the proxy.

Each server entry of the agent's config becomes a stdio server that runs
``python -m interlock mcp proxy --name <name> -- <the old command>`` (or
``--url <the old URL>`` for a streamable HTTP server), its other settings kept
(env, timeouts; a ``cwd`` becomes the proxy's ``--cwd``). Where the entries live
(docs/mcp.md, Wrapping an agent):

- Claude Code: ``.mcp.json`` (project) or ``~/.claude.json`` (user;
  ``$CLAUDE_CONFIG_DIR/.claude.json`` when set), ``mcpServers``; and the
  project's local scope (``claude mcp add``'s default), in that user file under
  ``projects[<project path>].mcpServers``;
- Codex: ``.codex/config.toml`` (project) or ``$CODEX_HOME/config.toml``
  (user, default ``~/.codex``), ``[mcp_servers.<name>]``;
- Gemini CLI: ``.gemini/settings.json`` (project) or
  ``$GEMINI_CLI_HOME/.gemini/settings.json`` (user, default ``~``), ``mcpServers``.

What was there is kept beside the file (``<file>.interlock-mcp.json``):
``--undo`` puts the whole file back byte for byte when nothing else changed it
since, and otherwise each wrapped entry that is still as we wrote it. Wrapping
twice changes nothing. An entry the proxy cannot carry (an SSE server, or one
that sends headers or a token) is left as it is and reported: that server is
not gated, and the command says so with a non-zero exit.

Standard library and ``tomli_w`` only: the SDK is needed to run the proxy, not
to write configs.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interlock.engine.errors import ConfigError

__all__ = ["AGENTS", "Report", "claude_local_tables", "config_file", "proxy_argv", "undo",
           "wrap"]

AGENTS = ("claude", "codex", "gemini")
SUFFIX = ".interlock-mcp.json"
_MARK = ["-m", "interlock", "mcp", "proxy"]


@dataclass
class Report:
    """What one wrap or undo did."""

    path: Path
    changed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Server name -> why it was left unwrapped (so not gated) or not restored."""


def config_file(agent: str, project: Path, *, user: bool = False,
                env: dict[str, str] | None = None) -> Path:
    """The file holding ``agent``'s MCP servers, for the project or the user."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if agent == "claude":
        if not user:
            return project / ".mcp.json"
        claude = env.get("CLAUDE_CONFIG_DIR")
        return Path(claude) / ".claude.json" if claude else home / ".claude.json"
    if agent == "codex":
        if not user:
            return project / ".codex" / "config.toml"
        codex = env.get("CODEX_HOME")
        return (Path(codex) if codex else home / ".codex") / "config.toml"
    if agent == "gemini":
        gemini = env.get("GEMINI_CLI_HOME")
        folder = project if not user else (Path(gemini) if gemini else home)
        return folder / ".gemini" / "settings.json"
    raise ConfigError(f"unknown agent {agent!r}", field="agent",
                      fix=f"use one of {', '.join(AGENTS)}")


def proxy_argv(name: str) -> list[str]:
    """The proxy's command line up to the server part: ``[python, flags..., -m, ...]``."""
    from interlock.hosts.bridge.install import python_flags

    return [sys.executable, *python_flags(), *_MARK, "--name", name]


def _is_ours(entry: dict[str, Any]) -> bool:
    args = entry.get("args")
    if not isinstance(args, list):
        return False
    n = len(_MARK)
    return any(args[i:i + n] == _MARK for i in range(len(args) - n + 1))


# -- one entry ---------------------------------------------------------------------------
def _wrap_entry(agent: str, name: str, entry: dict[str, Any]) -> dict[str, Any] | str:
    """The wrapped entry, or why it cannot be wrapped."""
    argv = proxy_argv(name)
    command = entry.get("command")
    if isinstance(command, str) and command and not _remote(agent, entry):
        args = entry.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            return "its args are not a list of strings"
        out = dict(entry)
        # The server's own folder goes to the proxy: the proxy runs where the agent
        # does, so it finds the agent's project, not one in the server's folder.
        cwd = out.get("cwd")
        at = ["--cwd", out.pop("cwd")] if isinstance(cwd, str) and cwd else []
        out["command"], out["args"] = argv[0], [*argv[1:], *at, "--", command, *args]
        return out
    url, url_keys = _url(agent, entry)
    if url is None:
        return url_keys or "it has neither a command nor a URL"
    if any(k in entry for k in ("headers", "http_headers", "env_http_headers",
                                "bearer_token_env_var", "oauth", "authProviderType")):
        return "it sends headers or a token, which the proxy does not carry yet"
    out = {k: v for k, v in entry.items() if k not in (*url_keys.split(","), "type")}
    if agent == "claude":
        out["type"] = "stdio"
    out["command"], out["args"] = argv[0], [*argv[1:], "--url", url]
    return out


def _remote(agent: str, entry: dict[str, Any]) -> bool:
    """True when the agent connects to the entry's URL even if it has a ``command``
    too: Claude Code goes by ``type`` (stdio when absent), Gemini CLI takes
    ``httpUrl``, then ``url``, before ``command``. Wrapping the command alone would
    leave the URL the agent uses ungated."""
    if agent == "claude":
        return bool(entry.get("type", "stdio") != "stdio")
    if agent == "gemini":
        return "httpUrl" in entry or "url" in entry
    return False


def _url(agent: str, entry: dict[str, Any]) -> tuple[str | None, str]:
    """(the streamable HTTP URL, the keys that held it), or (None, why not)."""
    if agent == "claude":
        kind = entry.get("type")
        if kind == "sse":
            return None, "it is an SSE server, which the proxy does not speak"
        if kind == "http" and isinstance(entry.get("url"), str):
            return entry["url"], "url"
        if kind not in (None, "stdio", "http"):
            return None, f"its type {kind!r} is not one the proxy speaks"
        return None, ""
    if agent == "gemini":
        if isinstance(entry.get("httpUrl"), str):
            return entry["httpUrl"], "httpUrl"
        if isinstance(entry.get("url"), str):
            if entry.get("type") == "http":
                return entry["url"], "url"
            return None, "it is an SSE server (url), which the proxy does not speak"
        return None, ""
    if isinstance(entry.get("url"), str):  # codex: url is streamable HTTP
        return entry["url"], "url"
    return None, ""


# -- the file ----------------------------------------------------------------------------
def _servers_key(agent: str) -> str:
    return "mcp_servers" if agent == "codex" else "mcpServers"


def _load(agent: str, path: Path, table: tuple[str, ...] | None = None
          ) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(the text, the parsed document, its servers table at the keys ``table``; an
    empty table, not in the document, when a key is missing)."""
    table = table or (_servers_key(agent),)
    if not path.exists():
        return "", {}, {}
    text = path.read_text(encoding="utf-8")
    try:
        doc = tomllib.loads(text) if agent == "codex" else (json.loads(text) if text.strip()
                                                              else {})
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read: {exc}", field=str(path),
                          fix="fix the file's syntax, then run the command again") from None
    node: Any = doc
    for i, key in enumerate(table):
        if not isinstance(node, dict):
            raise ConfigError(f"{path}: {'.'.join(table[:i])} is not a table",
                              field=f"{path}: {'.'.join(table[:i])}",
                              fix="make it a table, or remove it")
        node = node.get(key, {})
    if not isinstance(doc, dict) or not isinstance(node, dict):
        where = ".".join(table)
        raise ConfigError(f"{path}: {where} is not a table of servers", field=f"{path}: {where}",
                          fix=f"make {where} a table of name -> server")
    return text, doc, node


def claude_local_tables(path: Path, root: Path) -> list[tuple[str, ...]]:
    """Where ``claude mcp add`` (its default, local scope) keeps the servers of
    ``root`` and of its subfolders (Claude Code keys them by the folder it ran in)
    in the user file ``path``: ``projects[<folder>].mcpServers`` each."""
    _text, doc, _servers = _load("claude", path)
    projects = doc.get("projects")
    if not isinstance(projects, dict):
        return []
    roots = {Path(r) for r in (os.path.abspath(root), os.path.realpath(root))}
    return [("projects", key, "mcpServers") for key, project in projects.items()
            if isinstance(project, dict) and "mcpServers" in project
            and any(Path(key) == r or r in Path(key).parents for r in roots)]


def _saved_key(agent: str, table: tuple[str, ...], name: str) -> str:
    """An entry's key in the sidecar: its name in the file's own servers table (as
    the sidecar has always had it), else the whole path of keys as JSON."""
    return name if table == (_servers_key(agent),) else json.dumps([*table, name])


def _saved_table(agent: str, both: dict[str, Any]) -> tuple[str, ...]:
    return tuple(both.get("table") or (_servers_key(agent),))


def _dump(agent: str, doc: dict[str, Any]) -> str:
    if agent == "codex":
        import tomli_w

        return tomli_w.dumps(doc)
    return json.dumps(doc, indent=2) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


def wrap(agent: str, path: Path, *, only: Callable[[str], bool] = lambda _n: True,
         table: tuple[str, ...] | None = None) -> Report:
    """Route every MCP server in ``path`` (``agent``'s config) through the proxy.

    ``table``: the keys of the servers table, when not the file's own (Claude's
    local scope, :func:`claude_local_tables`)."""
    report = Report(path)
    table = table or (_servers_key(agent),)
    text, doc, servers = _load(agent, path, table)
    side = _sidecar(path)
    saved: dict[str, Any] = json.loads(side.read_text()) if side.exists() else {
        "agent": agent, "original": text, "existed": path.exists(), "entries": {}}
    for name, entry in servers.items():
        if not only(name):
            continue
        if not isinstance(entry, dict):
            report.skipped[name] = "it is not a table"
            continue
        if _is_ours(entry):
            report.already.append(name)
            continue
        new = _wrap_entry(agent, name, entry)
        if isinstance(new, str):
            report.skipped[name] = new
            continue
        servers[name] = new
        saved["entries"][_saved_key(agent, table, name)] = {
            "original": entry, "wrapped": new, "table": list(table), "name": name}
        report.changed.append(name)
    if report.changed:
        out = _dump(agent, doc)
        _write(path, out)
        # The whole file goes back at undo only if the saved original is this file's
        # before any wrap: not once it changed between two wraps (a server added).
        saved["wrapped"] = out if not side.exists() or saved.get("wrapped") == text else None
        _write(side, json.dumps(saved, indent=2) + "\n")
    return report


def undo(agent: str, path: Path, *, table: tuple[str, ...] | None = None) -> Report:
    """Put back what :func:`wrap` changed in ``path``'s servers table ``table``."""
    report = Report(path)
    table = table or (_servers_key(agent),)
    side = _sidecar(path)
    if not side.exists():
        return report
    saved = json.loads(side.read_text())
    entries: dict[str, Any] = saved["entries"]
    mine = {k: v for k, v in entries.items() if _saved_table(agent, v) == table}
    current = path.read_text(encoding="utf-8") if path.exists() else None
    wrapped = saved.get("wrapped")
    if len(mine) == len(entries) and wrapped is not None and current == wrapped:
        # Untouched since, and every wrapped entry is this table's: the file as it was.
        if saved.get("existed", True):
            _write(path, saved["original"])
        else:
            path.unlink()
        report.changed = [v.get("name", k) for k, v in mine.items()]
        side.unlink()
        return report
    if not mine:
        return report
    _text, doc, servers = _load(agent, path, table)
    for key, both in mine.items():
        name = both.get("name", key)
        if servers.get(name) == both["wrapped"]:
            servers[name] = both["original"]
            report.changed.append(name)
        else:
            report.skipped[name] = "it changed since it was wrapped; left as it is"
    if report.changed:
        _write(path, _dump(agent, doc))
    rest = {k: v for k, v in entries.items() if k not in mine}
    if rest:
        # Another table's wrapped entries stay on record; the whole file, no longer.
        _write(side, json.dumps({**saved, "entries": rest, "wrapped": None}, indent=2) + "\n")
    else:
        side.unlink()
    return report
