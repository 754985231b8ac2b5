"""``interlock bridge install <agent>``: write the agent's hook config to call the bridge.

Every entry uses absolute paths (the Python that runs Interlock, the project
root) and a timeout; the bridge's own deadline is set a few seconds below
it, so the bridge denies before the agent gives up on it (a hook the agent
times out is allowed to run by Claude Code). Existing settings are merged,
never dropped: other hooks stay, and our own entries are replaced, not
duplicated.

Two things about the written command keep the bridge from failing open
(docs/one-policy.md, When the bridge fails):

- Python runs isolated (``-I``): agents run hooks in the project folder,
  and a plain ``python -m`` would import a ``json.py`` or an ``interlock/``
  planted there before the real ones. ``-I`` also ignores ``PYTHON*``
  variables a project's agent settings could set.
- A ``/bin/sh -c`` line runs the bridge and checks how it ended: an exit
  code the bridge never answers with (the interpreter is gone: 127;
  interlock cannot be imported: 1; killed by a signal) is turned into the
  same reply the bridge gives when it fails, written into the line at
  install time for that one event: the agent's deny on gate events,
  nothing on observe events.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interlock.engine.errors import ConfigError

AGENTS = ("claude", "codex", "gemini", "cursor", "hermes", "moltis")
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
    # Not AfterToolCall: Moltis runs it read-only; a result is rewritten on
    # ToolResultPersist (docs/one-policy.md).
    "moltis": ("BeforeToolCall", "ToolResultPersist", "MessageReceived", "MessageSending"),
}


@dataclass(frozen=True)
class Plan:
    path: Path
    command: str
    timeout: int
    deadline: int


ANSWER_CODES = {"claude": (0, 2), "codex": (0, 2), "gemini": (0, 2), "cursor": (0,),
                "hermes": (0,), "moltis": (0, 1)}
"""The exit codes each agent's bridge answers with; any other means it never answered."""


@dataclass(frozen=True)
class RemoteArgs:
    """A remote policy server for the installed bridges (docs/fleet.md)."""

    server: str
    """A URL, or ``env``: at each call ``INTERLOCK_SERVER`` picks one of the servers
    the user's servers file lists."""
    token_file: Path | None
    """The 0600 file holding the machine's token: the line names it, never the token."""
    pin: str | None = None
    ca: Path | None = None
    fallback_local: tuple[str, ...] = ()
    """Host events that the local policy answers when the server is unreachable."""

    @property
    def servers(self) -> Path:
        """With ``env``: the user's servers file, named on the line (as the state dir
        is), since at a call the environment may be the project's (bridge/remote.py)."""
        from interlock.hosts.bridge.remote import SERVERS_FILE
        from interlock.store.paths import user_dir

        return (user_dir() / SERVERS_FILE).expanduser().absolute()

    def argv(self, event: str | None) -> list[str]:
        fallback = ["--fallback", "local"] if event in self.fallback_local else []
        if self.server == "env":  # the environment picks among the user's servers
            return ["--server", "env", "--servers", str(self.servers), *fallback]
        out = ["--server", self.server, "--token-file", str(self.token_file)]
        out += ["--pin", self.pin] if self.pin else []
        out += ["--ca", str(self.ca)] if self.ca else []
        return out + fallback

    def check(self, agent: str) -> None:
        """ConfigError unless a bridge could use this server as given."""
        from interlock.hosts.bridge._common import BridgeError
        from interlock.hosts.bridge.remote import Remote, read_token

        try:
            if self.server != "env":
                Remote(self.server, str(self.token_file) if self.token_file else None,
                       pin=self.pin, ca=str(self.ca) if self.ca else None)
                read_token(str(self.token_file))
        except BridgeError as exc:
            raise ConfigError(str(exc), field="--server") from None
        if self.server == "env" and not self.servers.is_file():
            raise ConfigError(f"--server env needs {self.servers}, listing the servers the "
                              "environment may name", field="--server",
                              fix="add a [[server]] table with url and token_file to it "
                                  "(docs/fleet.md, Remote bridges)")
        if self.ca is not None and not self.ca.is_file():
            raise ConfigError(f"the CA file {self.ca} does not exist", field="--ca")
        unknown = sorted(set(self.fallback_local) - set(EVENTS[agent]))
        if unknown:
            raise ConfigError(f"--fallback-local {', '.join(unknown)}: not an event installed "
                              f"for {agent}", field="--fallback-local",
                              fix=f"one of {', '.join(EVENTS[agent])}")


def bridge_argv(agent: str, project: Path, deadline: int,
                remote: RemoteArgs | None = None, event: str | None = None) -> list[str]:
    """The isolated Python command line of the bridge itself."""
    from interlock.store.paths import state_dir

    # The state dir is named, not left to the environment: Gemini CLI drops most
    # variables from a hook's env in CI, and approvals must still be found.
    return [sys.executable, *python_flags(), "-m", "interlock.bridge", agent,
            "--project", str(project), "--deadline", str(deadline),
            "--state-dir", str(state_dir().expanduser().absolute()),
            *(remote.argv(event) if remote is not None else [])]


def python_flags() -> list[str]:
    """``-I`` (isolated: no cwd, no ``PYTHON*`` variables, no user site), unless
    interlock itself lives in the user site; then ``-E -P`` keeps the first two."""
    import site

    import interlock

    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE is not False else ""
    here = Path(interlock.__file__).resolve()
    if user_site and here.is_relative_to(Path(user_site).resolve()):
        return ["-E", "-P"]
    return ["-I"]


def command_for(agent: str, project: Path, deadline: int, event: str | None = None,
                remote: RemoteArgs | None = None) -> str:
    """The absolute command line an agent runs for ``event`` (wrapped: see the module doc).

    Without ``event``, the bare bridge command (what ``bridge install`` prints).
    """
    argv = bridge_argv(agent, project, deadline, remote, event)
    if event is None:
        return shlex.join(argv)
    from interlock.hosts.bridge import host
    from interlock.hosts.bridge._core import failure

    reason = ("the bridge could not start or crashed (its Python is gone, it cannot import "
              f"interlock, or a hook ended it); reinstall it with `interlock bridge install "
              f"{agent}` if it keeps happening")
    reply = failure(host(agent), event, reason, scrub=False)
    script = guard_script(ANSWER_CODES[agent], reply.code)
    return shlex.join(["/bin/sh", "-c", script, "interlock-bridge", reply.stdout.rstrip("\n"),
                       reply.stderr.rstrip("\n"), *argv, "--guarded"])


def guard_script(answers: tuple[int, ...], code: int) -> str:
    """The ``sh`` script: run the bridge (``--guarded``: it exits ``GUARDED`` +
    its answer's code), pass its answer's code on, and on any other ending
    write the reply it would have failed with ($1: stdout, $2: stderr;
    ``code``: the exit code). An exit 0 is not an answer: a hook's
    ``os._exit(0)`` ends the bridge with 0 and nothing written."""
    from interlock.hosts.bridge._core import GUARDED

    cases = " ".join(f"{GUARDED + a}) exit {a};;" for a in answers)
    return (f'o=$1; e=$2; shift 2; "$@"; c=$?; case $c in {cases} esac; '
            f'if [ -n "$o" ]; then printf "%s\\n" "$o"; fi; '
            f'printf "%s (exit %s)\\n" "$e" "$c" >&2; exit {code}')


def config_path(agent: str, project: Path, *, user: bool = False) -> Path:
    """Where ``agent`` reads its hooks; user-level as the agent finds its own folder:
    ``$CLAUDE_CONFIG_DIR`` (for ``~/.claude``), ``$CODEX_HOME`` (for ``~/.codex``),
    ``$GEMINI_CLI_HOME`` (Gemini's home: ``$GEMINI_CLI_HOME/.gemini``)."""
    home = Path.home()

    def user_dir(var: str, default: Path) -> Path:
        value = os.environ.get(var)
        return Path(value).expanduser() if value else default

    if agent == "claude":
        folder = user_dir("CLAUDE_CONFIG_DIR", home / ".claude")
        return (folder if user else project / ".claude") / "settings.json"
    if agent == "codex":
        folder = user_dir("CODEX_HOME", home / ".codex")
        return (folder if user else project / ".codex") / "hooks.json"
    if agent == "gemini":
        folder = user_dir("GEMINI_CLI_HOME", home) / ".gemini"
        return (folder if user else project / ".gemini") / "settings.json"
    if agent == "cursor":
        return (home / ".cursor" if user else project / ".cursor") / "hooks.json"
    if agent == "hermes":
        base = Path(os.environ.get("HERMES_HOME") or home / ".hermes")
        return base / "config.yaml"
    if agent == "moltis":  # user-level only: Moltis reads no project config
        return user_dir("MOLTIS_CONFIG_DIR", home / ".config" / "moltis") / "moltis.toml"
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
            path: Path | None = None, remote: RemoteArgs | None = None) -> Plan:
    """Write (merge) ``agent``'s hook config; returns what was written where."""
    if agent not in AGENTS:
        raise ConfigError(f"unknown agent {agent!r}", field="agent",
                          fix=f"one of {', '.join(AGENTS)}")
    if timeout < 5:
        raise ConfigError("timeout must be at least 5 seconds", field="--timeout")
    project = project.resolve()
    from interlock.hosts.bridge._fit import check

    if remote is not None:
        remote.check(agent)
    else:  # a remote policy is the server's; its fit is checked where it runs
        check(agent, project, EVENTS[agent])  # a rewrite the agent would drop: refused
    deadline = max(2, timeout - 3)
    target = path or config_path(agent, project, user=user)
    check_importable()
    command = command_for(agent, project, deadline, remote=remote)
    if agent == "hermes":
        _install_hermes(target, agent, project, deadline, timeout, remote)
    elif agent == "moltis":
        _install_moltis(target, project, deadline, timeout, remote)
    else:
        data = _read_json(target)
        hooks = data.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise ConfigError("'hooks' must be an object", file=str(target), field="hooks")
        for event in EVENTS[agent]:
            line = command_for(agent, project, deadline, event, remote)
            if agent == "cursor":
                entries = hooks.setdefault(event, [])
                if not isinstance(entries, list):
                    raise ConfigError(f"hooks.{event} must be a list", file=str(target))
                hooks[event] = [e for e in entries if not _ours(e)]
                hooks[event].append({"command": line, "timeout": timeout})
            else:
                handler: dict[str, Any] = {"type": "command", "command": line}
                # Gemini takes milliseconds; Claude and Codex take seconds.
                handler["timeout"] = timeout * 1000 if agent == "gemini" else timeout
                if agent == "gemini":
                    handler["name"] = "interlock"
                _merge_grouped(hooks, event, handler, target)
        if agent == "cursor":
            data.setdefault("version", 1)
        _write(target, json.dumps(data, indent=2) + "\n")
    return Plan(path=target, command=command, timeout=timeout, deadline=deadline)


TRUST_STEPS: dict[str, tuple[str, ...]] = {
    "codex": (
        "Codex loads a project's .codex/ only in a trusted project: add "
        '[projects."PROJECT"] trust_level = "trusted" to $CODEX_HOME/config.toml '
        "(or answer its trust prompt)",
        "Codex then runs each hook only once trusted, and trust follows the hook's "
        "definition (it keeps a trusted_hash per hook under [hooks.state] in "
        "$CODEX_HOME/config.toml): review them in /hooks, and again after every "
        "`bridge install` (the line changes)",
        "headless `codex exec` cannot answer /hooks: run it with "
        "--dangerously-bypass-hook-trust, which runs every hook of the project, so only "
        "where you control .codex/ (CI on your own branch)",
    ),
    "gemini": (
        "Gemini CLI ignores a project's hooks in a folder it does not trust: trust this "
        "folder (its prompt, /permissions, or $GEMINI_CLI_HOME/.gemini/trustedFolders.json)",
        "--skip-trust skips the question by treating the folder as untrusted, so the "
        "project's hooks, Interlock's included, do not run: do not use it with a "
        "project install (install with --user instead)",
    ),
    "moltis": (
        "Moltis reads moltis.toml when it starts: restart it (its config is per user, so "
        "the bridge answers for this project wherever Moltis runs)",
    ),
    "hermes": (
        "Hermes asks before running new shell hooks: approve them once, or run with "
        "--accept-hooks / HERMES_ACCEPT_HOOKS=1",
    ),
}
"""What each agent needs before it runs the installed hooks: headless runs skip
untrusted hooks without a word, which would leave the agent with no policy."""


def duplicates(agent: str, target: Path, project: Path) -> list[str]:
    """The agent's own hooks that Interlock's config also runs (say, after ``hooks
    import``): with the bridge installed, each would now run twice."""
    import tomllib

    config = project / ".interlock" / "config.toml"
    if agent in ("hermes", "moltis") or not config.is_file() or not target.is_file():
        return []
    try:
        ours = tomllib.loads(config.read_text()).get("hooks") or []
        theirs = _read_json(target).get("hooks") or {}
    except (ValueError, ConfigError, OSError):
        return []

    def key(command: Any) -> str:
        words = command if isinstance(command, list) else str(command).split()
        return " ".join(os.path.basename(str(w)) for w in words)

    names = {key(h["command"]): h.get("name", "?") for h in ours
             if isinstance(h, dict) and h.get("command")}
    found = []
    for event, groups in theirs.items() if isinstance(theirs, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks", [group]) if isinstance(group, dict) else []
            for handler in handlers if isinstance(handlers, list) else ():
                if not isinstance(handler, dict) or _ours(handler):
                    continue
                name = names.get(key(handler.get("command", "")))
                if name is not None:
                    found.append(f"{event}: {handler['command']!r} is also Interlock hook "
                                 f"{name!r} in {config}; it would now run twice: remove it "
                                 f"from {target}")
    return found


def check_importable() -> None:
    """ConfigError unless the bridge imports under the flags the command uses.

    A bridge that cannot import would deny every call (the wrapper fails
    closed); better to say so now than at the agent's first tool call.
    """
    import subprocess

    argv = [sys.executable, *python_flags(), "-c", "import interlock.hosts.bridge._core"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd="/", timeout=60,
                          check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ConfigError(f"{shlex.join(argv)} fails: {last}", field="python",
                          fix="install interlock where this Python finds it in isolated "
                              "mode (a venv or the system site-packages)")


def _install_hermes(target: Path, agent: str, project: Path, deadline: int,
                    timeout: int, remote: RemoteArgs | None) -> None:
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
        entries.append({"command": command_for(agent, project, deadline, event, remote),
                        "timeout": timeout})
        hooks[event] = entries
    _write(target, yaml.safe_dump(data, sort_keys=False))


def _install_moltis(target: Path, project: Path, deadline: int, timeout: int,
                    remote: RemoteArgs | None) -> None:
    """``[[hooks.hooks]]`` entries in moltis.toml, one per event (each line carries
    that event's deny for the guard)."""
    import tomllib

    import tomli_w

    data: Any = {}
    if target.exists():
        try:
            data = tomllib.loads(target.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"not valid TOML: {exc}", file=str(target)) from None
    section = data.setdefault("hooks", {})
    if not isinstance(section, dict) or not isinstance(section.setdefault("hooks", []), list):
        raise ConfigError("'hooks.hooks' must be a list of tables", file=str(target),
                          field="hooks.hooks")
    entries = [e for e in section["hooks"] if not _ours(e)]
    for event in EVENTS["moltis"]:
        entries.append({"name": f"interlock-{event}", "events": [event],
                        "command": command_for("moltis", project, deadline, event, remote),
                        "timeout": timeout})
    section["hooks"] = entries
    _write(target, tomli_w.dumps(data))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".interlock.tmp")
    tmp.write_text(text)
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)
