"""`interlock hooks import`: other agents' hook config turned into ours.

Each importer reads one system's layout (see docs/configuration.md):

- claude / codex / gemini: ``{"hooks": {Event: [{"matcher", "hooks": [...]}]}}``
  in settings.json, a plugin's hooks/hooks.json, or (codex) config.toml;
- hermes: ``hooks: {event: [{matcher, command, timeout, fail_closed}]}`` in
  config.yaml;
- moltis: a HOOK.md folder (or a folder of them), or moltis.toml's
  ``[[hooks.hooks]]``.

Every imported hook keeps its dialect, so its script runs unmodified, and gets
an explicit ``on_error`` and ``timeout``: what the system did when the hook
failed (open, except Hermes' ``fail_closed``) and how long it waited, written
out so the operator sees them.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from interlock.config.model import MAX_TIMEOUT
from interlock.config.parse import split_front_matter
from interlock.engine.catalog import BY_NAME, from_alias
from interlock.engine.errors import ConfigError
from interlock.executors.toolnames import HOST_TOOLS

SYSTEMS = ("claude", "codex", "gemini", "hermes", "moltis")
_EXACT_LIST = re.compile(r"^[A-Za-z0-9_\- ,|]+$")
# What each system waits for a hook when the config gives no timeout (capped at ours).
_DEFAULT_TIMEOUT = {"claude": 600.0, "codex": 600.0, "gemini": 60.0, "hermes": 60.0,
                    "moltis": 10.0}


@dataclass(slots=True)
class Imported:
    hooks: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What could not be imported, and why."""


def _their_tools(system: str) -> dict[str, str]:
    """Their tool name -> ours."""
    return dict(HOST_TOOLS.get(system, {}))


def _matcher(system: str, raw: Any) -> str | None:
    """Their matcher as our anchored one, with their tool names turned into ours."""
    if raw is None:
        return None
    text = str(raw).strip()
    if text in ("", "*", ".*"):
        return None
    tools = _their_tools(system)
    if system == "hermes" and not _EXACT_LIST.match(text):
        return text  # Hermes already full-matches; most of its names are ours
    if _EXACT_LIST.match(text):
        names = [n.strip() for n in re.split(r"[|,]", text) if n.strip()]
        return "|".join(dict.fromkeys(tools.get(n, n) for n in names))
    # Claude, Codex and Gemini matchers are unanchored regexes; ours are anchored.
    for theirs, ours in tools.items():
        text = re.sub(rf"\b{re.escape(theirs)}\b", ours, text)
    return f".*(?:{text}).*"


# Where their hosts match something other than a tool name, the payload field
# of ours that holds the same thing (Claude's SessionStart "startup|resume",
# PreCompact "manual|auto", Notification types).
_MATCHED_FIELD = {"session_start": "source", "before_compaction": "trigger",
                  "notification": "kind"}


def _matcher_for(event: str, matcher: str | None, their_event: str,
                 notes: list[str]) -> str | dict[str, str] | None:
    """Our matcher for ``event``: on the subject where it has one, else on the
    field that holds what they match, else none (with a note)."""
    if matcher is None or BY_NAME[event].subject is not None:
        return matcher
    field = _MATCHED_FIELD.get(event)
    if field is not None:
        return {field: matcher}
    notes.append(f"{their_event}: matcher {matcher!r} dropped: Interlock's {event} has "
                 "nothing it could match, so the hook runs on every one")
    return None


def _event(system: str, name: str, notes: list[str]) -> str | None:
    found = from_alias(system, name)
    if not found:
        notes.append(f"{name}: no matching Interlock event; skipped")
        return None
    return found[0].name


def _name_for(command: str | list[str], event: str, taken: set[str]) -> str:
    words = command if isinstance(command, list) else command.split()
    base = event
    for word in words:
        stem = Path(word.strip("\"'")).stem
        if "/" in word and stem:
            base = stem
            break
    base = re.sub(r"[^A-Za-z0-9_.\-]", "-", base).strip("-.") or "hook"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _timeout(value: Any, *, millis: bool = False) -> float | None:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        return None
    seconds = value / 1000 if millis else float(value)
    return min(seconds, MAX_TIMEOUT)


def _read_structured(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".toml":
            return tomllib.loads(text)
        if path.suffix in (".yaml", ".yml"):
            return yaml.safe_load(text)
        return json.loads(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot parse: {exc}", file=str(path),
                          fix="point at the system's own config file") from None


def _settings_file(system: str, path: Path) -> Path:
    if path.is_file():
        return path
    candidates = {
        "claude": [".claude/settings.json", ".claude/settings.local.json", "settings.json",
                   "hooks/hooks.json"],
        "codex": [".codex/hooks.json", "hooks.json", ".codex/config.toml", "config.toml",
                  "hooks/hooks.json"],
        "gemini": [".gemini/settings.json", "settings.json"],
        "hermes": ["config.yaml", ".hermes/config.yaml"],
    }[system]
    for rel in candidates:
        if (path / rel).is_file():
            return path / rel
    raise ConfigError(f"no {system} config found in {path}", file=str(path),
                      fix=f"give the file itself (one of: {', '.join(candidates)})")


def import_claude_like(system: str, path: Path) -> Imported:
    """Claude Code, Codex and Gemini CLI share one layout (Gemini: timeouts in ms)."""
    file = _settings_file(system, path)
    data = _read_structured(file)
    out = Imported()
    table = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise ConfigError("no hooks table", file=str(file),
                          fix='the file should hold {"hooks": {"PreToolUse": [...]}}')
    plugin_root = file.parent.parent if file.parent.name == "hooks" else None
    taken: set[str] = set()
    for their_event, groups in table.items():
        if their_event in ("disabled", "enabled"):
            continue
        event = _event(system, their_event, out.notes)
        if event is None or not isinstance(groups, list):
            continue
        for group in groups:
            if not isinstance(group, dict):
                continue
            matcher = _matcher_for(event, _matcher(system, group.get("matcher")),
                                   their_event, out.notes)
            for handler in group.get("hooks", []) or []:
                kind = handler.get("type", "command")
                if kind != "command":
                    out.notes.append(f"{their_event}: a {kind!r} hook cannot be imported; "
                                     "skipped")
                    continue
                command: str | list[str] = handler.get("command", "")
                if handler.get("args"):
                    command = [str(command), *map(str, handler["args"])]
                if plugin_root is not None:
                    command = _substitute(command, str(plugin_root))
                hook: dict[str, Any] = {
                    "name": handler.get("name") or _name_for(command, event, taken),
                    "events": [event],
                    "command": command,
                    "dialect": system,
                    # Their hosts let a call through when a hook fails (exit 1,
                    # timeout, bad output); say so explicitly, as the import promises.
                    "on_error": "open",
                }
                if handler.get("description"):
                    hook["description"] = str(handler["description"])
                if matcher is not None:
                    hook["matcher"] = matcher
                # Codex spells it timeoutSec; Gemini's is in milliseconds.
                raw = handler.get("timeout", handler.get("timeoutSec"))
                timeout = _timeout(raw, millis=system == "gemini")
                hook["timeout"] = timeout if timeout is not None else _DEFAULT_TIMEOUT[system]
                env = handler.get("env")
                if isinstance(env, dict) and env:  # Gemini's per-hook environment
                    hook["env"] = {str(k): str(v) for k, v in env.items()}
                if handler.get("async") or handler.get("asyncRewake"):
                    hook["background"] = True
                    if handler.get("asyncRewake"):
                        out.notes.append(f"{their_event}: {hook['name']}: asyncRewake imported "
                                         "as a background hook; its exit 2 does not wake the "
                                         "agent here")
                if handler.get("if"):
                    out.notes.append(f"{their_event}: {hook['name']}: condition if = "
                                     f"{handler['if']!r} has no equivalent; the hook runs on "
                                     "every call its matcher selects, and its script decides")
                out.hooks.append(hook)
    return out


def _substitute(command: str | list[str], root: str) -> str | list[str]:
    def sub(text: str) -> str:
        for var in ("${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT", "${PLUGIN_ROOT}"):
            text = text.replace(var, root)
        return text

    return [sub(c) for c in command] if isinstance(command, list) else sub(command)


def import_hermes(path: Path) -> Imported:
    file = _settings_file("hermes", path)
    data = _read_structured(file) or {}
    out = Imported()
    table = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise ConfigError("no hooks mapping", file=str(file),
                          fix="the file should hold `hooks:` with events under it")
    taken: set[str] = set()
    for their_event, entries in table.items():
        if their_event in ("output_spill", "outbound"):
            continue
        event = _event("hermes", their_event, out.notes)
        if event is None or not isinstance(entries, list):
            continue
        for entry in entries:
            if not isinstance(entry, dict) or not entry.get("command"):
                continue
            command = str(entry["command"])
            closed = bool(entry.get("fail_closed", entry.get("failClosed", False)))
            hook: dict[str, Any] = {
                "name": _name_for(command, event, taken), "events": [event],
                "command": command, "dialect": "hermes",
                "on_error": "closed" if closed else "open",
            }
            matcher = _matcher_for(event, _matcher("hermes", entry.get("matcher")),
                                   their_event, out.notes)
            if matcher is not None:
                hook["matcher"] = matcher
            timeout = _timeout(entry.get("timeout"))
            hook["timeout"] = min(timeout, 300.0) if timeout is not None \
                else _DEFAULT_TIMEOUT["hermes"]  # Hermes caps at 300
            out.hooks.append(hook)
    return out


def _moltis_hook(data: dict[str, Any], folder: Path | None, taken: set[str],
                 notes: list[str]) -> dict[str, Any] | None:
    events = []
    for name in data.get("events", []) or []:
        event = _event("moltis", str(name), notes)
        if event is not None:
            events.append(event)
    command = data.get("command")
    if not events or not command:
        return None
    command = str(command)
    if folder is not None and command.startswith(("./", "../")):
        command = str((folder / command).resolve())
    hook: dict[str, Any] = {
        "name": data.get("name") or _name_for(command, events[0], taken),
        "events": events, "command": command, "dialect": "moltis", "on_error": "open",
    }
    taken.add(hook["name"])
    for key in ("description", "env", "priority"):
        if data.get(key):
            hook[key] = data[key]
    if folder is not None:
        hook["cwd"] = str(folder)
    timeout = _timeout(data.get("timeout"))
    hook["timeout"] = timeout if timeout is not None else _DEFAULT_TIMEOUT["moltis"]
    requires = data.get("requires")
    if isinstance(requires, dict) and requires:
        hook["requires"] = {k: list(v) for k, v in requires.items()
                            if k in ("os", "bins", "env")}
    return hook


def import_moltis(path: Path) -> Imported:
    out = Imported()
    taken: set[str] = set()
    files: list[Path]
    if path.is_dir():
        files = sorted(path.glob("HOOK.md")) or sorted(path.glob("*/HOOK.md")) \
            or sorted(path.glob("hooks/*/HOOK.md"))
        if not files and (path / "moltis.toml").is_file():
            files = [path / "moltis.toml"]
    else:
        files = [path]
    if not files:
        raise ConfigError(f"no HOOK.md or moltis.toml in {path}", file=str(path),
                          fix="point at a HOOK.md, a folder of hook folders, or moltis.toml")
    for file in files:
        if file.name == "HOOK.md":
            data, _loc, _body = split_front_matter(file.read_text(encoding="utf-8"), file)
            data.setdefault("name", file.parent.name)
            hook = _moltis_hook(data, file.parent, taken, out.notes)
            if hook is not None:
                out.hooks.append(hook)
            continue
        doc = _read_structured(file)
        entries = (doc.get("hooks") or {}).get("hooks", []) if isinstance(doc, dict) else []
        for entry in entries:
            hook = _moltis_hook(entry, file.parent, taken, out.notes)
            if hook is not None:
                out.hooks.append(hook)
    return out


def import_config(system: str, path: Path) -> Imported:
    if system not in SYSTEMS:
        raise ConfigError(f"unknown system {system!r}", field="--from",
                          fix=f"use one of {', '.join(SYSTEMS)}")
    if not path.exists():
        raise ConfigError(f"{path} does not exist", file=str(path),
                          fix="give the path of the config file or folder to import")
    if system == "hermes":
        return import_hermes(path)
    if system == "moltis":
        return import_moltis(path)
    return import_claude_like(system, path)


def to_toml(imported: Imported, system: str, path: Path) -> str:
    import tomli_w

    lines = [f"# Imported from {system} config: {path}",
             "# Each hook keeps its dialect, so its script runs unmodified. on_error is what",
             '# the source system did when the hook failed; set it to "closed" for guards.',
             "# A script that rewrites tool input needs modifies = true."]
    lines += [f"# skipped: {note}" for note in imported.notes]
    body = tomli_w.dumps({"hooks": imported.hooks}) if imported.hooks else ""
    return "\n".join(lines) + "\n\n" + body
