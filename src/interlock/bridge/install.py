"""``interlock bridge install <agent>``: write the agent's hook config to call the bridge.

Every entry uses absolute paths (the Python that runs Interlock, the project
root) and a timeout; the bridge's own deadline is set a few seconds below
it, so the bridge denies before the agent gives up on it (a hook the agent
times out is allowed to run by Claude Code). Existing settings are merged,
never dropped: other hooks stay, and our own entries are replaced, not
duplicated.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interlock._errors import ConfigError

AGENTS = ("claude", "codex", "gemini", "cursor", "hermes")
MARKS = ("interlock.bridge", "interlock bridge")

# Events each agent's config gets, by that agent's names: the gates a policy
# most needs, plus the prompt and stop checks.
EVENTS: dict[str, tuple[str, ...]] = {
    "claude": ("PreToolUse", "PermissionRequest", "PostToolUse", "UserPromptSubmit", "Stop",
               "SessionStart"),
    "codex": ("PreToolUse", "PermissionRequest", "PostToolUse", "UserPromptSubmit", "Stop",
              "SessionStart"),
    "gemini": ("BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent", "SessionStart"),
    "cursor": ("beforeShellExecution", "beforeMCPExecution", "beforeReadFile",
               "beforeSubmitPrompt", "stop"),
    "hermes": ("pre_tool_call", "post_tool_call", "pre_llm_call", "pre_verify"),
}


@dataclass(frozen=True)
class Plan:
    path: Path
    command: str
    timeout: int
    deadline: int


def command_for(agent: str, project: Path, deadline: int) -> str:
    """The absolute command line an agent runs for the bridge."""
    argv = [sys.executable, "-m", "interlock.bridge", agent, "--project", str(project),
            "--deadline", str(deadline)]
    return shlex.join(argv)


def config_path(agent: str, project: Path, *, user: bool = False) -> Path:
    home = Path.home()
    if agent == "claude":
        return (home / ".claude" if user else project / ".claude") / "settings.json"
    if agent == "codex":
        return (home / ".codex" if user else project / ".codex") / "hooks.json"
    if agent == "gemini":
        return (home / ".gemini" if user else project / ".gemini") / "settings.json"
    if agent == "cursor":
        return (home / ".cursor" if user else project / ".cursor") / "hooks.json"
    if agent == "hermes":
        base = Path(os.environ.get("HERMES_HOME") or home / ".hermes")
        return base / "config.yaml"
    raise ConfigError(f"unknown agent {agent!r}", field="agent",
                      fix=f"one of {', '.join(AGENTS)}")


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text() or "{}")
    except ValueError as exc:
        raise ConfigError(f"not valid JSON: {exc}", file=str(path),
                          fix="fix or move the file, then install again") from None
    if not isinstance(data, dict):
        raise ConfigError("must hold a JSON object", file=str(path))
    return data


def _ours(entry: Any) -> bool:
    return isinstance(entry, dict) and any(m in str(entry.get("command", "")) for m in MARKS)


def _merge_grouped(hooks: dict[str, Any], event: str, handler: dict[str, Any],
                   path: Path) -> None:
    """Claude/Codex/Gemini layout: {Event: [{matcher, hooks: [handler]}]}."""
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise ConfigError(f"hooks.{event} must be a list", file=str(path), field=f"hooks.{event}")
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            group = {**group, "hooks": [h for h in group["hooks"] if not _ours(h)]}
            if not group["hooks"]:
                continue
        kept.append(group)
    kept.append({"matcher": "*", "hooks": [handler]})
    hooks[event] = kept


def install(agent: str, project: Path, *, timeout: int = 30, user: bool = False,
            path: Path | None = None) -> Plan:
    """Write (merge) ``agent``'s hook config; returns what was written where."""
    if agent not in AGENTS:
        raise ConfigError(f"unknown agent {agent!r}", field="agent",
                          fix=f"one of {', '.join(AGENTS)}")
    if timeout < 5:
        raise ConfigError("timeout must be at least 5 seconds", field="--timeout")
    project = project.resolve()
    from interlock.bridge._fit import check

    check(agent, project, EVENTS[agent])  # a rewrite the agent would drop: refused
    deadline = max(2, timeout - 3)
    target = path or config_path(agent, project, user=user)
    command = command_for(agent, project, deadline)
    if agent == "hermes":
        _install_hermes(target, command, timeout)
    else:
        data = _read_json(target)
        hooks = data.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise ConfigError("'hooks' must be an object", file=str(target), field="hooks")
        for event in EVENTS[agent]:
            if agent == "cursor":
                entries = hooks.setdefault(event, [])
                if not isinstance(entries, list):
                    raise ConfigError(f"hooks.{event} must be a list", file=str(target))
                hooks[event] = [e for e in entries if not _ours(e)]
                hooks[event].append({"command": command, "timeout": timeout})
            else:
                handler: dict[str, Any] = {"type": "command", "command": command}
                # Gemini takes milliseconds; Claude and Codex take seconds.
                handler["timeout"] = timeout * 1000 if agent == "gemini" else timeout
                if agent == "gemini":
                    handler["name"] = "interlock"
                _merge_grouped(hooks, event, handler, target)
        if agent == "cursor":
            data.setdefault("version", 1)
        _write(target, json.dumps(data, indent=2) + "\n")
    return Plan(path=target, command=command, timeout=timeout, deadline=deadline)


def _install_hermes(target: Path, command: str, timeout: int) -> None:
    import yaml

    data: Any = {}
    if target.exists():
        try:
            data = yaml.safe_load(target.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"not valid YAML: {exc}", file=str(target)) from None
    if not isinstance(data, dict):
        raise ConfigError("must hold a mapping", file=str(target))
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("'hooks' must be a mapping", file=str(target), field="hooks")
    for event in EVENTS["hermes"]:
        entries = [e for e in (hooks.get(event) or []) if not _ours(e)]
        entries.append({"command": command, "timeout": timeout})
        hooks[event] = entries
    _write(target, yaml.safe_dump(data, sort_keys=False))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".interlock.tmp")
    tmp.write_text(text)
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)
