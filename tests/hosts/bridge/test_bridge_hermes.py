"""A real client: hermes-agent's own shell-hook machinery calls `interlock bridge hermes`.

hermes-agent is installed from PyPI into its own virtualenv (``.cache/hermes-venv``
in the repository, git-ignored), configured by ``interlock bridge install
hermes``, and asked to run a terminal command through ``handle_function_call``.
An Interlock hook blocks it, and Hermes must return the block to its model
instead of running the command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interlock import Engine, block
from interlock.hosts.bridge.install import install
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import TokenStore
from interlock.hosts.server.listen import Serving

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / ".cache"
VENV = CACHE / "hermes-venv"


@pytest.fixture(scope="session")
def hermes_python() -> Path:
    python = VENV / "bin" / "python"
    probe = [str(python), "-c", "import agent.shell_hooks, hermes_cli.plugins, model_tools"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "hermes-agent"],
                         capture_output=True, text=True, timeout=900)
    if pip.returncode != 0:
        network = ("Could not find a version", "NewConnectionError", "Temporary failure",
                   "No matching distribution", "Network is unreachable")
        if any(n in pip.stderr for n in network):
            pytest.skip(f"hermes-agent could not be installed (no network?): {pip.stderr[-300:]}")
        raise AssertionError(f"pip install hermes-agent failed:\n{pip.stderr[-2000:]}")
    return python


@pytest.fixture
def interlock_server() -> Iterator[tuple[Path, Path]]:
    root = Path(tempfile.mkdtemp(prefix="il-hermes-")).resolve()
    sock = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "run" / "serve.sock"
    engine = Engine()

    @engine.on("before_tool_call", matcher="terminal", name="no-rm")
    def no_rm(event: Any) -> Any:
        if "rm -rf" in event.args.get("command", ""):
            return block("destructive command refused by Interlock policy")
        return None

    app = create_app(engine, project_root=root, tokens=TokenStore(), socket_path=sock)
    with Serving(app, socket_path=sock, tcp=False).running():
        yield root, sock
    engine.close()


SCRIPT = textwrap.dedent("""
    import json, sys
    from hermes_cli.config import load_config
    from agent.shell_hooks import register_from_config
    registered = register_from_config(load_config(), accept_hooks=True)
    import model_tools
    from hermes_cli.plugins import resolve_pre_tool_block
    blocked = model_tools.handle_function_call(
        "terminal", {"command": "rm -rf /tmp/interlock-canary"}, task_id="t1",
        session_id="s1", tool_call_id="c1")
    allowed = resolve_pre_tool_block("terminal", {"command": "make test"}, session_id="s1")
    print(json.dumps({"registered": sorted(s.event for s in registered),
                      "blocked": json.loads(blocked), "allowed": allowed}))
""")


def test_hermes_shell_hook_block_reaches_hermes(hermes_python: Path, tmp_path: Path,
                                                interlock_server: tuple[Path, Path]) -> None:
    root, sock = interlock_server
    home = tmp_path / "hermes-home"
    canary = Path("/tmp/interlock-canary")
    canary.mkdir(exist_ok=True)
    env = {**os.environ, "HERMES_HOME": str(home), "INTERLOCK_SOCKET": str(sock)}
    env.pop("PYTHONPATH", None)
    plan = install("hermes", root, timeout=30, path=home / "config.yaml")
    assert plan.path == home / "config.yaml"
    proc = subprocess.run([str(hermes_python), "-c", SCRIPT], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "pre_tool_call" in result["registered"]
    assert "destructive command refused by Interlock policy" in result["blocked"]["error"]
    assert canary.exists()  # the command never ran
    assert result["allowed"] is None
