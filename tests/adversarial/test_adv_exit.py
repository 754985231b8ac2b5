"""A hook that calls sys.exit() (or raises KeyboardInterrupt) is a crashed hook,
not an ended host: through the real CLI, the in-process bridge and `serve`, a
fail-closed gate still blocks, and the answer is one the host understands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.serve import Serve

HANDLERS = {
    "exit0": "import sys\n\ndef handle(event):\n    sys.exit(0)\n",
    "exit2": "import sys\n\ndef handle(event):\n    raise SystemExit(2)\n",
    "interrupt": "def handle(event):\n    raise KeyboardInterrupt\n",
    "genexit": "def handle(event):\n    raise GeneratorExit\n",
}

CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "quitter"
    events = ["before_tool_call"]
    handler = "quitter.py"
    on_error = "closed"
    """)

CLAUDE_CALL = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "s",
               "tool_input": {"command": "ls"}, "cwd": "", "transcript_path": ""}


def _world(tmp: Path, handler: str) -> tuple[Path, dict[str, str]]:
    home = tmp / "home"
    home.mkdir()
    (home / "quitter.py").write_text(HANDLERS[handler])
    (home / "config.toml").write_text(CONFIG)  # a user hook: no approval needed
    project = tmp / "project"
    (project / ".interlock").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("INTERLOCK_") or k == "INTERLOCK_STORE"}
    env.update({"INTERLOCK_HOME": str(home), "INTERLOCK_MANAGED": str(tmp / "managed")})
    CLAUDE_CALL["cwd"] = str(project)
    return project, env


def _claude_denied(proc: subprocess.CompletedProcess[str]) -> bool:
    if proc.returncode == 2:
        return True
    if proc.returncode != 0 or not proc.stdout.strip():
        return False
    out = json.loads(proc.stdout)
    return out.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"


@pytest.mark.parametrize("handler", sorted(HANDLERS))
def test_hooks_test_reports_a_block_when_the_hook_exits(tmp_path: Path, handler: str) -> None:
    project, env = _world(tmp_path, handler)
    proc = subprocess.run([sys.executable, "-m", "interlock", "hooks", "test",
                           "before_tool_call", "--tool", "terminal", "--json",
                           "-C", str(project)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["decision"] == "block"
    assert data["hooks"][0]["failure"] == "crash"


@pytest.mark.parametrize("handler", ["exit0", "interrupt"])
def test_the_in_process_bridge_denies_when_the_hook_exits(tmp_path: Path, handler: str) -> None:
    project, env = _world(tmp_path, handler)
    proc = subprocess.run([sys.executable, "-m", "interlock.bridge", "claude", "--local",
                           "--project", str(project)],
                          input=json.dumps(CLAUDE_CALL), env=env, capture_output=True,
                          text=True, timeout=60)
    assert _claude_denied(proc), (proc.returncode, proc.stdout, proc.stderr)


def test_serve_answers_a_json_block_when_the_hook_exits(tmp_path: Path) -> None:
    served = Serve(tmp_path, CONFIG, files={"quitter.py": HANDLERS["exit0"]}).start()
    try:
        call = {"tool_name": "terminal", "args": {"command": "ls"}}
        for _ in range(2):  # the server outlives the first exit
            out = served.event(call)
            assert out["decision"] == "block"
        assert served.proc is not None
        assert served.proc.poll() is None
    finally:
        served.stop()
