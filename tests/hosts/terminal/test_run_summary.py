"""`interlock run` says what the hooks did without -v: one stderr line per blocked,
asked or rewritten call, and exit 1 when an extension's stand-in blocked the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.e2e

CONFIG = """
[[hooks]]
name = "no-rm"
events = ["before_tool_call"]
matcher = "terminal"
handler = "no_rm.py"

[[hooks]]
name = "longer"
events = ["before_tool_call"]
matcher = "terminal"
handler = "longer.py"
modifies = true
"""

NO_RM = """
from interlock import block

def handle(event):
    if "rm -rf" in event.args.get("command", ""):
        return block("rm -rf deletes more than you think, every time", hint="name the files")
"""

LONGER = """
from interlock import modify

def handle(event):
    if event.args.get("command") == "ls":
        return modify(args={**event.args, "command": "ls -la"})
"""

SCRIPT = """
- text: working
  tool_calls:
    - {name: terminal, args: {command: 'rm -rf build/'}}
    - {name: terminal, args: {command: 'ls'}}
    - {name: terminal, args: {command: 'git push origin main'}}
- text: finished
"""


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "interlock", "run", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".interlock").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "script.yaml").write_text(SCRIPT)
    return root


def test_each_blocked_asked_or_rewritten_call_gets_one_line_without_verbose(
        tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / ".interlock" / "config.toml").write_text(CONFIG)
    (root / ".interlock" / "no_rm.py").write_text(NO_RM)
    (root / ".interlock" / "longer.py").write_text(LONGER)
    proc = _run(root, "--model", "scripted:script.yaml", "--accept-hooks",
                "--ask", "terminal:git push *", "clean up")
    lines = proc.stderr.splitlines()
    blocked = [x for x in lines if x.startswith("interlock: blocked terminal `rm -rf build/`")]
    assert len(blocked) == 1, proc.stderr
    # The reason in full, and who said it.
    assert "rm -rf deletes more than you think, every time" in blocked[0]
    assert "project:no-rm" in blocked[0]
    assert any(x.startswith("interlock: rewrote terminal `ls` -> `ls -la`") and
               "project:longer" in x for x in lines), proc.stderr
    assert any(x.startswith("interlock: asked terminal `git push origin main`")
               for x in lines), proc.stderr
    # The ask nobody could answer is blocked too, and says so.
    assert any(x.startswith("interlock: blocked terminal `git push origin main`")
               for x in lines), proc.stderr
    assert proc.returncode == 0  # the run itself completed


def test_a_run_whose_every_call_a_stand_in_blocked_exits_1(tmp_path: Path) -> None:
    root = _project(tmp_path)
    ext = root / ".interlock" / "extensions" / "broken"
    ext.mkdir(parents=True)
    (ext / "extension.toml").write_text('name = "broken"\nmodule = "broken"\n'
                                        'guards = ["before_tool_call"]\n')
    (ext / "broken.py").write_text("raise RuntimeError('cannot load')\n")
    (root / "script.yaml").write_text(
        "- text: working\n  tool_calls:\n    - {name: terminal, args: {command: 'ls'}}\n"
        "- text: finished\n")
    proc = _run(root, "--model", "scripted:script.yaml", "--accept-hooks", "list files")
    assert any(x.startswith("interlock: blocked terminal `ls`") and "broken" in x
               for x in proc.stderr.splitlines()), proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert "stand-in" in proc.stderr
