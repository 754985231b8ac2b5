"""One policy in every host: `interlock serve` (``/v1/events``, ``/v1/bridge``) and
the in-process bridge load the project's extensions as `interlock run` does. An
extension's hook blocks there too, and so does the stand-in for the events an
extension that failed to load, or is not approved, declared it guards.

Real processes throughout: the CLI approves, the server serves, the bridge answers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from helpers.http import request

pytestmark = pytest.mark.e2e

NOSHELL = textwrap.dedent("""\
    from interlock import block

    def register(ctx):
        def no_shell(event):
            if event.tool_name == "terminal":
                return block("no shell for " + event.args.get("command", ""))
            return None
        ctx.on("before_tool_call", no_shell, name="noshell")
    """)

BROKEN = textwrap.dedent("""\
    def register(ctx):
        raise RuntimeError("its policy server is down")
    """)

# A user hook on another event, so a host without the extension would run (and allow).
USER_CONFIG = ('[[hooks]]\nname = "log"\nevents = ["session_start"]\n'
               'handler = "log.py"\n')

PRE_TOOL = {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
READ = {**PRE_TOOL, "tool_name": "Read", "tool_input": {"file_path": "/etc/hostname"}}
PROMPT = {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit",
          "prompt": "hello"}


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.project = tmp_path / "project"
        (self.project / ".interlock").mkdir(parents=True)
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("INTERLOCK_STORE", "INTERLOCK_STATE_DIR", "INTERLOCK_PROJECT")}
        self.env.update({"INTERLOCK_HOME": str(self.home),
                         "INTERLOCK_MANAGED": str(tmp_path / "managed"),
                         "INTERLOCK_SOCKET": str(Path(tempfile.mkdtemp(prefix="il-", dir="/tmp"))
                                                 / "s.sock")})

    def extension(self, name: str, module: str, *, guards: tuple[str, ...] = (),
                  approve: bool = True) -> None:
        folder = self.project / ".interlock" / "extensions" / name
        folder.mkdir(parents=True)
        (folder / "extension.toml").write_text(f"name = {name!r}\nguards = {list(guards)!r}\n")
        (folder / "extension.py").write_text(module)
        if approve:
            self.cli("ext", "approve", name, "--yes")

    def cli(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "interlock", *args], env=self.env,
                              cwd=self.project, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def bridge(self, payload: dict[str, Any], *args: str) -> tuple[int, Any, str]:
        """(exit code, JSON answer, stderr) of `interlock bridge claude`."""
        done = subprocess.run([sys.executable, "-m", "interlock", "bridge", "claude",
                               "--project", str(self.project), *args],
                              input=json.dumps(payload), env=self.env, capture_output=True,
                              text=True, timeout=60)
        return (done.returncode, json.loads(done.stdout) if done.stdout.strip() else None,
                done.stderr)

    @contextmanager
    def serving(self) -> Iterator[tuple[int, str, list[str]]]:
        """(port, admin token, the server's stderr lines up to "listening on")."""
        token = self.cli("serve", "token", "create", "ops", "--admin").strip()
        proc = subprocess.Popen([sys.executable, "-m", "interlock", "serve", "--project",
                                 str(self.project), "--port", "0"], env=self.env,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        try:
            lines = [proc.stderr.readline()]
            while "listening on" not in lines[-1] and lines[-1]:
                lines.append(proc.stderr.readline())
            assert "listening on http://127.0.0.1:" in lines[-1], "".join(lines)
            yield int(lines[-1].split("http://127.0.0.1:")[1].split()[0].rstrip(",/")), token, lines
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
            proc.stderr.close()


def _request(port: int, method: str, path: str, body: Any = None,
             token: str | None = None) -> Any:
    status, data = request(port, method, path, body, token)
    assert status == 200, data
    return data


def _pre_tool_reason(answer: Any) -> str:
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny", answer
    return str(out["permissionDecisionReason"])


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_an_extension_hook_blocks_in_serve_and_in_the_bridge(world: World) -> None:
    # The extension is the project's only policy: its hook counts as one, so
    # neither host refuses to run as "no hooks are configured".
    world.extension("noshell", NOSHELL)

    code, answer, _ = world.bridge(PRE_TOOL, "--local")
    assert code == 2
    assert "no shell for rm -rf /" in _pre_tool_reason(answer)
    code, answer, _ = world.bridge(READ, "--local")
    assert code == 0
    assert (answer or {}).get("hookSpecificOutput", {}).get("permissionDecision") != "deny"

    with world.serving() as (port, token, _):
        call = {"tool_name": "terminal", "args": {"command": "rm -rf /"}}
        out = _request(port, "POST", "/v1/events/before_tool_call", call, token)
        assert out["decision"] == "block"
        assert "no shell for rm -rf /" in out["reason"]
        out = _request(port, "POST", "/v1/events/before_tool_call",
                       {"tool_name": "read_file", "args": {"path": "x"}}, token)
        assert out["decision"] != "block"
        # The bridge finds the server on the socket: /v1/bridge has the extension too.
        code, answer, _ = world.bridge(PRE_TOOL)
        assert code == 2
        assert "no shell for rm -rf /" in _pre_tool_reason(answer)
        status = _request(port, "GET", "/v1/status", token=token)
        assert [(e["name"], e["status"]) for e in status["extensions"]] == [
            ("noshell", "loaded")]
        # A reload swaps only the registry's hooks: the extension's stay.
        _request(port, "POST", "/v1/runtime/reload", token=token)
        out = _request(port, "POST", "/v1/events/before_tool_call", call, token)
        assert out["decision"] == "block"


def test_the_guards_of_an_extension_that_cannot_load_block_everywhere(world: World) -> None:
    (world.home / "config.toml").write_text(USER_CONFIG)
    (world.home / "log.py").write_text("def handle(event):\n    return None\n")
    world.extension("broken", BROKEN, guards=("before_tool_call",))
    world.extension("unreviewed", NOSHELL, guards=("user_input",), approve=False)

    code, answer, err = world.bridge(PRE_TOOL, "--local")
    assert code == 2
    assert "broken.unavailable" in _pre_tool_reason(answer)
    # Logged, with why, to the state dir's bridge.log: never to the stderr
    # Claude reads as the block reason.
    assert "its policy server is down" in (world.home / "state" / "bridge.log").read_text()
    assert "its policy server is down" not in err
    code, answer, _ = world.bridge(PROMPT, "--local")
    assert code == 2
    assert answer["decision"] == "block"
    assert "unreviewed.unavailable" in answer["reason"]

    with world.serving() as (port, token, lines):
        assert any("its policy server is down" in line for line in lines)
        out = _request(port, "POST", "/v1/events/before_tool_call",
                       {"tool_name": "read_file", "args": {"path": "x"}}, token)
        assert out["decision"] == "block"
        assert "broken.unavailable" in out["reason"]
        out = _request(port, "POST", "/v1/events/user_input", {"text": "hello"}, token)
        assert out["decision"] == "block"
        assert "unreviewed.unavailable" in out["reason"]
        code, answer, _ = world.bridge(PRE_TOOL)
        assert code == 2
        assert "broken.unavailable" in _pre_tool_reason(answer)
        status = _request(port, "GET", "/v1/status", token=token)
        assert {e["name"]: (e["status"], e["guards"]) for e in status["extensions"]} == {
            "broken": ("failed", ["before_tool_call"]),
            "unreviewed": ("unapproved", ["user_input"])}
        messages = {e["name"]: e["message"] for e in status["extensions"]}
        assert "its policy server is down" in messages["broken"]
        assert "interlock ext approve unreviewed" in messages["unreviewed"]
