"""The package layout: few entries at the top, and the paths installed configs use."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import interlock

GUARD = '''
from interlock import block

def handle(event):
    if "rm" in event.args.get("command", ""):
        return block("no rm")
'''

PACKAGE = Path(interlock.__file__).parent


def test_the_top_of_the_package_has_at_most_20_entries() -> None:
    # A folder left holding only __pycache__ by an older checkout does not count.
    entries = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__" and not (
        p.is_dir() and {c.name for c in p.iterdir()} <= {"__pycache__"}))
    assert len(entries) <= 20, entries


def test_no_module_is_over_600_lines() -> None:
    """A module that long holds more than one idea (docs/architecture.md)."""
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if "__pycache__" not in p.parts
            and (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}


@pytest.mark.slow
def test_the_installed_bridge_line_runs_this_version(tmp_path: Path) -> None:
    """Agents' configs hold ``python -I -m interlock.bridge <agent> ...``: a line
    that failed to import would read as "allow" to the agent, so the exact line
    ``bridge install`` writes must reach this version's bridge and answer."""
    project = tmp_path / "project"
    (project / ".interlock").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    (home / "guard.py").write_text(GUARD)
    (home / "config.toml").write_text(
        '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\nhandler = "guard.py"\n')
    env = {**os.environ, "INTERLOCK_HOME": str(home),
           "INTERLOCK_MANAGED": str(tmp_path / "managed"),
           "INTERLOCK_SOCKET": str(tmp_path / "none.sock")}
    subprocess.run([sys.executable, "-m", "interlock", "bridge", "install", "claude",
                    "--project", str(project)], capture_output=True, text=True, check=True,
                   env=env)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][-1]["hooks"][0]["command"]
    argv = shlex.split(command)
    bridge = [a for a in argv[argv.index(sys.executable):] if a != "--guarded"]
    assert bridge[:5] == [sys.executable, "-I", "-m", "interlock.bridge", "claude"]

    def payload(command: str) -> str:
        return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                           "tool_input": {"command": command}, "session_id": "s",
                           "cwd": str(project)})

    # The bare bridge (no guard around it) starts, runs the hook and answers.
    allowed = subprocess.run(bridge, input=payload("ls"), capture_output=True, text=True,
                             env=env, timeout=60)
    assert allowed.returncode == 0, allowed.stderr
    assert "deny" not in allowed.stdout
    ran = subprocess.run(bridge, input=payload("rm x"), capture_output=True, text=True,
                         env=env, timeout=60)
    assert ran.returncode == 2, ran.stderr
    assert "no rm" in ran.stdout
    # The full installed command answers the same (the guard did not step in).
    guarded = subprocess.run(argv, input=payload("rm x"), capture_output=True, text=True, env=env,
                             timeout=60)
    assert (guarded.returncode, guarded.stdout) == (2, ran.stdout), guarded.stderr


def test_folders_found_from_a_module_s_own_file_exist(monkeypatch) -> None:
    """Modules that find package folders from ``__file__`` moved with the layout."""
    from interlock.store.paths import bundled_dir

    monkeypatch.delenv("INTERLOCK_BUNDLED", raising=False)
    assert bundled_dir() == PACKAGE / "bundled"
    assert (bundled_dir() / "secret_redaction").is_dir()


def test_a_crash_site_skips_every_frame_inside_the_package() -> None:
    """A crash is reported at the deepest frame outside Interlock, wherever in
    the package (not only engine/) the exception was raised."""
    from interlock.engine.errors import ConfigError
    from interlock.engine.invoke import crash_site
    from interlock.store import backend_for

    try:
        backend_for("mysql://db/x")  # raises inside interlock/store/
    except ConfigError as exc:
        where = crash_site(exc)
    else:
        raise AssertionError("backend_for accepted an unknown scheme")
    assert where is not None
    assert where.startswith(f"{__file__}:")
