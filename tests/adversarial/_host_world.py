"""A hostile world for the host tests: a project (a git repository) whose guard is a
real script, the real CLI in subprocesses, and a real `interlock serve` on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from helpers.http import request

LIVE_BOUND = 1.0
"""A change must show in a running host's next decision within this many seconds."""

NO_RM = textwrap.dedent("""\
    import json, sys
    payload = json.dumps(json.load(sys.stdin))
    if "rm -rf" in payload:
        print(json.dumps({"decision": "block", "reason": "VERSION: no rm -rf"}))
    else:
        print("{}")
    """)

BLOCK_ALL = textwrap.dedent("""\
    import json, sys
    json.load(sys.stdin)
    print(json.dumps({"decision": "block", "reason": "VERSION: nothing runs"}))
    """)


def script(version: str, body: str = NO_RM) -> str:
    return body.replace("VERSION", version)


def guard_config(command: str) -> str:
    return textwrap.dedent(f"""\
        [[hooks]]
        name = "guard"
        events = ["before_tool_call"]
        matcher = "terminal"
        command = {command}
        on_error = "closed"
        timeout = 10
        """)


class World:
    """``tmp/project`` (a repository with ``.interlock/``), a private home, the CLI."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "project"
        self.home = tmp / "home"
        self.managed = tmp / "managed"
        (self.root / ".git").mkdir(parents=True)
        (self.root / "src").mkdir()
        self.home.mkdir()
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("INTERLOCK_", "CLAUDE_", "GEMINI_", "CURSOR_"))}
        self.env.update({
            "INTERLOCK_HOME": str(self.home), "INTERLOCK_MANAGED": str(self.managed),
            "INTERLOCK_STORE": str(tmp / "interlock.db"),
            "INTERLOCK_SOCKET": str(Path(tempfile.mkdtemp(prefix="il-", dir="/tmp"))
                                    / "s.sock")})

    def write(self, path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written in place, as an editor or the agent's write_file does.
        path.write_text(text)
        return path

    def pinned_outside(self, version: str = "v1") -> Path:
        """The README's layout: the script in hooks/ at the project root, outside
        .interlock/, named relative to the config's folder."""
        hook = self.write(self.root / "hooks" / "no_rm.py", script(version))
        self.write(self.root / ".interlock" / "config.toml",
                   guard_config(f'["{sys.executable}", "../hooks/no_rm.py"]'))
        return hook

    def pinned_inside(self, version: str = "v1") -> Path:
        hook = self.write(self.root / ".interlock" / "no_rm.py", script(version))
        self.write(self.root / ".interlock" / "config.toml",
                   guard_config(f'["{sys.executable}", "./no_rm.py"]'))
        return hook

    def cli(self, *args: str, cwd: Path | None = None, stdin: str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "interlock", *args],
                              cwd=cwd or self.root, env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=timeout)

    def ok(self, *args: str, cwd: Path | None = None) -> str:
        done = self.cli(*args, cwd=cwd)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    @contextmanager
    def serve(self, *extra: str, cwd: Path | None = None) -> Iterator[Server]:
        token = self.ok("serve", "token", "create", "t", cwd=cwd).strip()
        proc = subprocess.Popen([sys.executable, "-m", "interlock", "serve", "--port", "0",
                                 "--no-socket", *extra], cwd=cwd or self.root, env=self.env,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            seen = []
            line = proc.stderr.readline()
            while "listening on" not in line and line:
                seen.append(line)
                line = proc.stderr.readline()
            assert "listening on http://127.0.0.1:" in line, "".join(seen) + line
            port = int(line.split("http://127.0.0.1:")[1].split()[0].rstrip(",/"))
            yield Server(port, token, "".join(seen))
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(15)
            if proc.stderr is not None:
                proc.stderr.close()


class Server:
    def __init__(self, port: int, token: str, startup: str) -> None:
        self.port = port
        self.token = token
        self.startup = startup

    def decide(self, command: str) -> tuple[str, str]:
        """(decision, reason) of the running server for a terminal call."""
        code, out = request(self.port, "POST", "/v1/events/before_tool_call",
                            {"tool_name": "terminal", "args": {"command": command}},
                            self.token)
        assert code == 200, out
        return out["decision"], out.get("reason") or ""

    def status(self) -> dict[str, Any]:
        code, out = request(self.port, "GET", "/v1/status", None, self.token)
        assert code == 200, out
        assert isinstance(out, dict)
        return out


def until(check: Callable[[], Any], *, deadline: float = 15.0) -> tuple[Any, float]:
    """Poll ``check`` until it returns something truthy; (that value, seconds taken).
    Fails after ``deadline`` seconds."""
    start = time.monotonic()
    while True:
        value = check()
        elapsed = time.monotonic() - start
        if value:
            return value, elapsed
        assert elapsed < deadline, f"no change within {deadline} s"
        time.sleep(0.02)
