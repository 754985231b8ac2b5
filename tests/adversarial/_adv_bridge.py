"""A hostile project against installed bridges: shared pieces of the bridge attack tests.

Everything goes through the real CLI: ``interlock bridge install <agent>``
writes the agent's config, and the command written there is run the way the
agent runs it (through ``sh -c`` in the project folder; Hermes splits it
without a shell), with the agent's JSON on stdin.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

INTERLOCK = str(Path(sys.executable).with_name("interlock"))

GUARD_REASON = "the policy says no rm here"
GUARD = f"""
[[hooks]]
name = "no-rm"
events = ["before_tool_call"]
matcher = "terminal"
command = "echo '{GUARD_REASON}' >&2; exit 2"
"""

# The gate event each agent's config gets, with a shell call the guard blocks.
GATES: dict[str, tuple[str, dict[str, Any]]] = {
    "claude": ("PreToolUse", {"hook_event_name": "PreToolUse", "session_id": "s1",
                              "tool_name": "Bash", "tool_input": {"command": "rm -rf ~"},
                              "tool_use_id": "t1"}),
    "codex": ("PreToolUse", {"hook_event_name": "PreToolUse", "session_id": "s1",
                             "tool_name": "Bash", "tool_input": {"command": "rm -rf ~"},
                             "tool_use_id": "t1", "turn_id": "u1"}),
    "gemini": ("BeforeTool", {"hook_event_name": "BeforeTool", "session_id": "s1",
                              "tool_name": "run_shell_command",
                              "tool_input": {"command": "rm -rf ~"}}),
    "cursor": ("beforeShellExecution", {"hook_event_name": "beforeShellExecution",
                                        "conversation_id": "c1", "command": "rm -rf ~"}),
    "hermes": ("pre_tool_call", {"hook_event_name": "pre_tool_call", "session_id": "s1",
                                 "tool_name": "terminal", "tool_input": {"command": "rm -rf ~"},
                                 "extra": {}}),
}

# An event of each agent where a failing bridge must change nothing.
OBSERVE: dict[str, tuple[str, dict[str, Any]]] = {
    "claude": ("Stop", {"hook_event_name": "Stop", "session_id": "s1",
                        "stop_hook_active": False}),
    "codex": ("Stop", {"hook_event_name": "Stop", "session_id": "s1", "turn_id": "u1",
                       "stop_hook_active": False}),
    "gemini": ("AfterAgent", {"hook_event_name": "AfterAgent", "session_id": "s1",
                              "prompt": "hi", "prompt_response": "done"}),
    "cursor": ("stop", {"hook_event_name": "stop", "conversation_id": "c1", "status": "done"}),
    "hermes": ("pre_verify", {"hook_event_name": "pre_verify", "session_id": "s1",
                              "extra": {}}),
}


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout) if self.stdout.strip() else None


class Project:
    """A project folder with an Interlock policy, and its own home and state."""

    def __init__(self, tmp: Path, policy: str = GUARD) -> None:
        self.tmp = tmp
        (tmp / "project").mkdir(parents=True, exist_ok=True)
        self.root = (tmp / "project").resolve()
        (self.root / ".interlock").mkdir(exist_ok=True)
        (self.root / ".interlock" / "config.toml").write_text(policy)
        self.home = tmp / "home"
        self.home.mkdir(exist_ok=True)
        self.runtime = tmp / "run"
        self.runtime.mkdir(mode=0o700, exist_ok=True)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "HERMES_HOME": str(self.home / ".hermes"),
            "INTERLOCK_HOME": str(self.home / "interlock"),
            "INTERLOCK_STATE_DIR": str(self.home / "state"),
            "INTERLOCK_MANAGED": str(tmp / "managed"),
            "INTERLOCK_STORE": str(tmp / "store.db"),
            "INTERLOCK_ACCEPT_HOOKS": "1",
            # No real server can answer: the socket folder is this test's own.
            "XDG_RUNTIME_DIR": str(self.runtime),
            # Hooks run inside the bridge, as with no server (the bridge's own server:
            # tests/hosts/bridge/test_bridge_autostart.py).
            "INTERLOCK_BRIDGE_AUTOSTART": "0",
        }

    def logged(self) -> str:
        """What in-process bridges logged: bridge.log in the state dir (never their
        stderr, which hosts read as the block reason)."""
        log = self.home / "state" / "bridge.log"
        return log.read_text() if log.exists() else ""

    def install(self, agent: str, *args: str) -> dict[str, str]:
        """Run `interlock bridge install AGENT`; the command written per host event."""
        done = subprocess.run([INTERLOCK, "bridge", "install", agent, "--project",
                               str(self.root), *args], capture_output=True, text=True,
                              env=self.env, cwd=self.root, timeout=60)
        assert done.returncode == 0, done.stderr
        return commands(agent, self.config_path(agent))

    def config_path(self, agent: str) -> Path:
        if agent == "hermes":
            return self.home / ".hermes" / "config.yaml"
        folder = {"claude": ".claude", "codex": ".codex", "gemini": ".gemini",
                  "cursor": ".cursor"}[agent]
        name = "settings.json" if agent in ("claude", "gemini") else "hooks.json"
        return self.root / folder / name

    def host_runs(self, agent: str, command: str, payload: Any, *,
                  env: dict[str, str] | None = None, timeout: float = 60) -> Ran:
        """Run ``command`` as ``agent`` does: in the project folder, the JSON on stdin."""
        argv = shlex.split(command) if agent == "hermes" else ["/bin/sh", "-c", command]
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        done = subprocess.run(argv, input=raw, capture_output=True, cwd=self.root,
                              env={**self.env, **(env or {})}, timeout=timeout)
        return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


def commands(agent: str, path: Path) -> dict[str, str]:
    data = yaml.safe_load(path.read_text()) if agent == "hermes" else json.loads(path.read_text())
    out: dict[str, str] = {}
    for event, entries in data["hooks"].items():
        for entry in entries or []:
            for handler in entry.get("hooks", [entry]):
                if "interlock" in str(handler.get("command", "")):
                    out[event] = handler["command"]
    return out


def denied(agent: str, ran: Ran) -> bool:
    """Whether ``agent`` reads ``ran`` as a deny of the tool call (its documented rules)."""
    body = ran.json if ran.stdout.strip().startswith("{") else None
    if agent in ("claude", "codex"):
        # Exit 2 blocks; exit 0 with permissionDecision "deny" blocks; else it runs.
        if ran.code == 2:
            return True
        specific = (body or {}).get("hookSpecificOutput") or {}
        return ran.code == 0 and specific.get("permissionDecision") == "deny"
    if agent == "gemini":
        return ran.code == 2 or (ran.code == 0 and (body or {}).get("decision") == "deny")
    if agent == "cursor":
        return (body or {}).get("permission") == "deny"
    if agent == "hermes":
        return (body or {}).get("decision") == "block"
    raise AssertionError(agent)


def no_effect(agent: str, ran: Ran) -> bool:
    """Whether ``agent`` reads ``ran`` as "nothing to say" (exit 0, no decision)."""
    if ran.code != 0:
        return False
    body = ran.json if ran.stdout.strip() else {}
    return not isinstance(body, dict) or not ({"decision", "continue", "followup_message",
                                                 "permission"} & set(body))


class FakeServer:
    """Listens on a Unix socket and answers every request with ``answer``; records requests.

    What another local user (or a stale process) could put at the bridge's socket path.
    """

    def __init__(self, path: Path, answer: bytes) -> None:
        import socket
        import threading

        self.path = path
        self.requests: list[bytes] = []
        self._listener = socket.socket(socket.AF_UNIX)
        self._listener.bind(str(path))
        self._listener.listen()
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._answer = answer
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    self.requests.append(conn.recv(1 << 20))
                    conn.sendall(self._answer)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()


def http_answer(body: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


ALLOW = http_answer(b'{"event": "before_tool_call", "decision": "approve", "reason": "fine", '
                    b'"hint": null, "hook": "x", "changes": {}, "value": null, "context": [], '
                    b'"hooks": [], "session_id": "s1", "revision": 1}')
