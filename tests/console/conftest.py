"""A real `interlock serve` with a project, a fail-closed command hook, and three
tokens (events, read, admin), for the console's API and browser tests."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

GUARD = textwrap.dedent("""\
    import json, sys
    event = json.load(sys.stdin)
    command = event.get("payload", event).get("args", {}).get("command", "")
    if "rm " in command:
        print(json.dumps({"decision": "block", "reason": "no rm here"}))
    elif "crash" in command:
        sys.exit(3)
    else:
        print("{}")
    """)

CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "no-rm"
    events = ["before_tool_call"]
    matcher = "terminal"
    command = ["python3", ".interlock/guard.py"]
    on_error = "closed"
    timeout = 20
    """)

READS = textwrap.dedent("""\
    [[hooks]]
    name = "reads"
    events = ["before_tool_call"]
    matcher = "read_file"
    handler = "reads.py"
    """)


@dataclass
class Served:
    port: int
    root: Path
    env: dict[str, str]
    events: str
    read: str
    admin: str
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "interlock", *args], env=self.env,
                              capture_output=True, text=True, timeout=60)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = tmp_path / "project"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "guard.py").write_text(GUARD)
    (root / ".interlock" / "config.toml").write_text(CONFIG)
    home = tmp_path / "home"
    home.mkdir()
    # A user's in-process hook on file reads: quick decisions, to fill the feed.
    (home / "reads.py").write_text("def handle(event):\n    return None\n")
    (home / "config.toml").write_text(READS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    env.update({"INTERLOCK_HOME": str(tmp_path / "home"),
                "INTERLOCK_MANAGED": str(tmp_path / "managed"),
                "INTERLOCK_STORE": str(tmp_path / "interlock.db"),
                "INTERLOCK_SOCKET": str(Path(tempfile.mkdtemp(prefix="il-", dir="/tmp"))
                                        / "s.sock")})
    cli = [sys.executable, "-m", "interlock"]

    def token(name: str, *flags: str) -> str:
        made = subprocess.run([*cli, "serve", "token", "create", name, *flags,
                               "--project", str(root)],
                              env=env, capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        return made.stdout.strip()

    tokens = (token("bridge"), token("viewer", "--read"), token("oncall", "--admin"))
    approved = subprocess.run([*cli, "hooks", "approve", "--all", "-C", str(root)], env=env,
                              capture_output=True, text=True, timeout=60)
    assert approved.returncode == 0, approved.stderr
    log = tmp_path / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen([*cli, "serve", "--project", str(root), "--port", "0"],
                                env=env, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            while "listening on" not in line and line:
                err.write(line)
                line = proc.stderr.readline()
            assert "listening on http://127.0.0.1:" in line, line
            port = int(line.split("http://127.0.0.1:")[1].split()[0].rstrip(",/"))
            # Keep reading what it logs, so a full pipe never stalls the server.
            drain = threading.Thread(target=lambda: err.writelines(proc.stderr), daemon=True)
            drain.start()
            yield Served(port, root, env, *tokens, log)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            proc.stderr.close()  # type: ignore[union-attr]
