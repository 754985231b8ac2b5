"""`interlock serve` that cannot listen says so in one line: the address, and the fix."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("serve-errors")
    root = tmp / "project"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "config.toml").write_text(
        '[[hooks]]\nname = "ok"\nevents = ["before_tool_call"]\ncommand = "true"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    env.update(INTERLOCK_HOME=str(tmp / "home"), INTERLOCK_MANAGED=str(tmp / "managed"),
               INTERLOCK_ACCEPT_HOOKS="1")
    return root, env


def _serve(project: tuple[Path, dict[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    root, env = project
    return subprocess.run([sys.executable, "-m", "interlock", "serve", "--project", str(root),
                           *args], env=env, capture_output=True, text=True, timeout=60)


def _error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("interlock: error")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_a_port_in_use_names_the_address_and_the_fix(project) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        line = _error_line(_serve(project, "--port", str(port), "--no-socket"))
    assert f"127.0.0.1:{port}" in line
    assert "already in use" in line
    assert "--port" in line


def test_a_socket_in_use_names_the_path_and_the_fix(project) -> None:
    path = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "s.sock"
    with socket.socket(socket.AF_UNIX) as held:
        held.bind(str(path))
        held.listen(1)
        line = _error_line(_serve(project, "--no-tcp", "--socket", str(path)))
    assert str(path) in line
    assert "--socket" in line


def test_a_socket_path_too_long_says_how_long_it_may_be(project) -> None:
    path = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / ("s" * 120)
    line = _error_line(_serve(project, "--no-tcp", "--socket", str(path)))
    assert "too long" in line
    assert "--socket" in line
