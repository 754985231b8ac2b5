"""`interlock serve` as a real process for the fault tests: a project, a token,
the port and the socket; kill it, restart it, read its store."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "interlock"]


GUARD_CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "guard"
    events = ["before_tool_call"]
    handler = "guard.py"
    on_error = "closed"
    """)
"""One fail-closed Python hook, ``guard`` (its handler: :data:`NO_RM`)."""
NO_RM = textwrap.dedent("""\
    from interlock import block

    def handle(event):
        if "rm" in event.args.get("command", ""):
            return block("no deleting")
        return None
    """)
"""The ``guard.py`` handler of :data:`GUARD_CONFIG`: blocks any command holding ``rm``."""


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 30) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class Serve:
    """One project and its `interlock serve` process (start, kill, restart)."""

    def __init__(self, tmp: Path, config: str, *, store: str | None = None,
                 files: dict[str, str] | None = None, extra: list[str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.project = tmp / "project"
        (self.project / ".interlock").mkdir(parents=True, exist_ok=True)
        (self.project / ".interlock" / "config.toml").write_text(config)
        for name, text in (files or {}).items():
            path = self.project / ".interlock" / name
            path.write_text(text)
            path.chmod(0o755)
        self.state = tmp / "home" / "state"
        self.store = store or str(self.state / "interlock.db")
        self.socket = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "s.sock"
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("INTERLOCK_STORE", "INTERLOCK_STATE_DIR", "INTERLOCK_AUDIT")}
        self.env.update({"INTERLOCK_HOME": str(tmp / "home"),
                         "INTERLOCK_MANAGED": str(tmp / "managed"),
                         "INTERLOCK_ACCEPT_HOOKS": "1", "INTERLOCK_STORE": self.store,
                         "INTERLOCK_SOCKET": str(self.socket), **(env or {})})
        self.extra = extra or []
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.log: list[str] = []
        made = self.cli("serve", "token", "create", "ops", "--admin")
        assert made.returncode == 0, made.stderr
        self.token = made.stdout.strip()

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], env=self.env, cwd=self.project,
                              capture_output=True, text=True, timeout=timeout)

    def start(self) -> Serve:
        self.proc = subprocess.Popen([*CLI, "serve", "--project", str(self.project),
                                      "--port", "0", *self.extra], env=self.env,
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        while "listening on" not in line:
            self.log.append(line)
            if not line:
                self.proc.stderr.close()
                self.proc.wait(30)
                raise AssertionError("serve exited before listening:\n" + "".join(self.log))
            line = self.proc.stderr.readline()
        self.port = int(line.split("://127.0.0.1:")[1].split()[0].rstrip(",/"))
        # Keep draining stderr so the server never blocks on a full pipe.
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
        return self

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        with proc.stderr:
            for line in proc.stderr:
                self.log.append(line)

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = "",
                unix: bool = False, timeout: float = 30) -> tuple[int, Any]:
        conn: http.client.HTTPConnection = (
            UnixConnection(str(self.socket), timeout) if unix
            else http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout))
        headers = {"Content-Type": "application/json"}
        token = self.token if token == "" else token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request(method, path, None if body is None else json.dumps(body).encode(),
                         headers)
            resp = conn.getresponse()
            text = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(text) if text else None
        except ValueError:
            return resp.status, text.decode(errors="replace")

    def event(self, body: dict[str, Any], name: str = "before_tool_call") -> dict[str, Any]:
        code, out = self.request("POST", f"/v1/events/{name}", body)
        assert code == 200, out
        assert isinstance(out, dict)
        return out

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


def wait_for(check: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
