"""Real bridge processes (``python -I -m interlock.bridge``, what ``bridge install``
writes) in a runtime folder of their own, and the bridge servers they start
(docs/one-policy.md, Speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GUARD = ("from interlock import block\n\n"
         "def handle(e):\n"
         "    if 'rm -rf' in e.args.get('command', ''):\n"
         "        return block(REASON)\n"
         "    return None\n")


def pre(command: str) -> dict[str, object]:
    return {"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "t1"}


class Env:
    def __init__(self, base: Path) -> None:
        self.runtime = tempfile.mkdtemp(prefix="il-rt-", dir="/tmp")
        self.vars = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
        self.vars.update(INTERLOCK_HOME=str(base / "home"), INTERLOCK_ACCEPT_HOOKS="1",
                         XDG_RUNTIME_DIR=self.runtime, INTERLOCK_STORE=str(base / "il.db"))

    def project(self, base: Path, reason: str = "no rm here", *, hooks: bool = True) -> Path:
        root = base.resolve()
        (root / ".interlock").mkdir(parents=True)
        if hooks:
            (root / ".interlock" / "guard.py").write_text(
                GUARD.replace("REASON", repr(reason)))
            (root / ".interlock" / "config.toml").write_text(
                '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\n'
                'handler = "guard.py"\n')
        return root

    def add_hook(self, root: Path, name: str, source: str) -> None:
        """Add the project hook ``name`` (before_tool_call), its handler ``source``."""
        handler = name.replace("-", "_") + ".py"
        (root / ".interlock" / handler).write_text(source)
        with (root / ".interlock" / "config.toml").open("a") as cfg:
            cfg.write(f'\n[[hooks]]\nname = "{name}"\nevents = ["before_tool_call"]\n'
                      f'handler = "{handler}"\n')

    def call(self, root: Path, command: str = "rm -rf /", *, env: dict[str, str] | None = None,
             args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--project", str(root),
             "--deadline", "15", *args],
            input=json.dumps(pre(command)), capture_output=True, text=True, timeout=60,
            env=env or self.vars)

    def start(self, root: Path, command: str = "rm -rf /", *,
              env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--project", str(root),
             "--deadline", "15"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env or self.vars)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(pre(command)))
        proc.stdin.close()
        proc.stdin = None  # written and closed: communicate() only reads
        return proc

    def servers(self) -> list[int]:
        """The pids of bridge servers whose socket is in this runtime folder."""
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"interlock.hosts.bridge._daemon" in cmd and any(
                    a.startswith(self.runtime.encode()) for a in cmd):
                found.append(int(pid))
        return found

    def socket(self, root: Path) -> Path:
        return Path(auto_socket_path_in(self.vars, root))

    def up(self, root: Path, variables: dict[str, str] | None = None) -> Path:
        """The project's server socket, once its server listens (a first call starts
        it after answering, and does not wait for it)."""
        import socket

        path = Path(auto_socket_path_in(variables or self.vars, root))

        def listening() -> bool:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(path))
            except OSError:
                return False
            finally:
                probe.close()
            return True

        wait_for(listening, seen=path)
        return path


def wait_for(check, timeout: float = 20.0, seen: object = None) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"timed out; last seen: {seen}"
        time.sleep(0.05)


def auto_socket_path_in(variables: dict[str, str], root: Path) -> str:
    code = ("import sys; from interlock.hosts.bridge._autostart import auto_socket_path; "
            "print(auto_socket_path(sys.argv[1]))")
    return subprocess.run([sys.executable, "-I", "-c", code, str(root)], env=variables,
                          capture_output=True, text=True, check=True).stdout.strip()
