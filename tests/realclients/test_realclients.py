"""One policy, proven on the real clients: Claude Code, Codex CLI and Gemini CLI.

Each test runs one pinned agent CLI headless (docs/one-policy.md, Tested
clients) in a throwaway home, against the fake model server on 127.0.0.1,
with the hooks ``interlock bridge install <agent>`` wrote. The model asks for
one shell command; the test then reads what the client sent back to the
model (the fake server records every request) and the filesystem (did the
command run?). Only the hosted model API is fake: the agent, the bridge, the
hooks and the command are real.

A scenario that fails on a known bridge bug is marked ``xfail(strict=True)``
naming the bug, so it turns into a failure the day the bug is fixed.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_models import FakeModels, Turn
from realclient_agents import AGENTS, Agent, Run, Workspace, followup, tool_results

pytestmark = pytest.mark.realclients

POLICY = Path(__file__).with_name("policy_hook.py")
REASON = "IL-REASON-4b1d"
CTX_BEFORE = "IL-CTX-BEFORE-91c2"
CTX_AFTER = "IL-CTX-AFTER-5e07"


def _hook(name: str, mode: str, events: str = '["before_tool_call"]',
          extra: str = "") -> str:
    return (f'[[hooks]]\nname = "{name}"\nevents = {events}\nmatcher = "terminal"\n'
            f'command = ["{sys.executable}", "./policy_hook.py", "{mode}"]\n{extra}\n')


GATE = _hook("gate", "gate")


def agents(**bugs: str) -> list[object]:
    """Every agent; one with a known bridge bug in this scenario is xfail(strict)."""
    return [pytest.param(name, id=name, marks=[pytest.mark.xfail(strict=True, reason=bugs[name])]
                         if name in bugs else []) for name in sorted(AGENTS)]


@pytest.fixture
def agent(request: pytest.FixtureRequest) -> Agent:
    found = AGENTS[request.param]
    found.require()
    return found


@pytest.fixture
def fake() -> Iterator[FakeModels]:
    with FakeModels() as server:
        yield server


@pytest.fixture
def ws(agent: Agent, fake: FakeModels, tmp_path: Path) -> Iterator[Workspace]:
    runtime = Path(tempfile.mkdtemp(prefix="ilrc-"))
    space = Workspace(agent, tmp_path, fake, runtime)
    (space.project / ".interlock").mkdir(parents=True)
    space.home.mkdir()
    shutil.copy(POLICY, space.project / ".interlock" / "policy_hook.py")
    yield space
    shutil.rmtree(runtime, ignore_errors=True)
    # The tests never reach the internet: a request for any other host came
    # through HTTPS_PROXY to the fake server, which refused and recorded it.
    escaped = [r.path for r in fake.requests if r.wire == "escape"]
    assert not escaped, f"{agent.name} tried to reach the internet: {escaped}"


def _configure(ws: Workspace, config: str) -> None:
    (ws.project / ".interlock" / "config.toml").write_text(config)


def _run(ws: Workspace, command: str, before_tool: Callable[[], None] | None = None) -> Run:
    ws.fake.turn = Turn(command=command, before_tool=before_tool)
    return ws.run()


# -- block and control ------------------------------------------------------------------

@pytest.mark.parametrize("agent", agents(), indirect=True)
def test_a_blocked_command_does_not_run_and_the_model_reads_why(ws: Workspace) -> None:
    _configure(ws, GATE)
    ws.install()
    marker = ws.project / "blocked.marker"
    run = _run(ws, f"touch {marker}  # BLOCKME")
    assert not marker.exists(), f"the blocked command ran\n{run}"
    results = tool_results(followup(ws.fake, run))
    assert any(REASON in r for r in results), f"the reason never reached the model: {results}"


@pytest.mark.parametrize("agent", agents(), indirect=True)
def test_a_command_no_hook_objects_to_runs(ws: Workspace) -> None:
    _configure(ws, GATE)
    ws.install()
    marker = ws.project / "ran.marker"
    run = _run(ws, f"touch {marker} && echo IL-CONTROL-OUT")
    assert marker.exists(), f"the allowed command did not run\n{run}"
    results = tool_results(followup(ws.fake, run))
    assert any("IL-CONTROL-OUT" in r for r in results), results
    assert not any("Interlock" in r for r in results), results


# -- context before and after a tool ----------------------------------------------------

CONTEXT = _hook("context", "context", '["before_tool_call", "after_tool_call"]')


@pytest.mark.parametrize("agent", agents(gemini=(
    "known bridge bug: Gemini CLI 0.61 reads additionalContext only on AfterTool, BeforeAgent "
    "and SessionStart; the bridge answers before_tool_call context on BeforeTool, where "
    "Gemini drops it")), indirect=True)
def test_context_from_before_the_tool_reaches_the_model(ws: Workspace) -> None:
    _configure(ws, CONTEXT)
    ws.install()
    run = _run(ws, "echo IL-CONTEXT-RAN")
    sent = followup(ws.fake, run)
    assert any("IL-CONTEXT-RAN" in r for r in tool_results(sent)), f"the tool did not run\n{run}"
    assert CTX_BEFORE in sent.text(), f"before_tool_call context never reached the model\n{run}"


@pytest.mark.parametrize("agent", agents(), indirect=True)
def test_context_from_after_the_tool_reaches_the_model(ws: Workspace) -> None:
    _configure(ws, CONTEXT)
    ws.install()
    run = _run(ws, "echo IL-CONTEXT-RAN")
    sent = followup(ws.fake, run)
    assert any("IL-CONTEXT-RAN" in r for r in tool_results(sent)), f"the tool did not run\n{run}"
    assert CTX_AFTER in sent.text(), f"after_tool_call context never reached the model\n{run}"


# -- output redaction ---------------------------------------------------------------------

# Codex and Gemini CLI cannot take a rewritten result: their bridges answer with a
# block whose reason replaces the output (docs/dialects.md, Conformance).
@pytest.mark.parametrize("agent", agents(), indirect=True)
def test_a_secret_the_tool_prints_never_reaches_the_model(ws: Workspace) -> None:
    _configure(ws, '[[hooks]]\nname = "secret-redaction"\nenabled = true\n')
    installed = ws.install(check=False)
    if installed.returncode != 0:
        # Also acceptable: a bridge that cannot express the rewrite refuses to
        # install, saying why (never a silent drop).
        message = installed.stdout + installed.stderr
        assert "Traceback" not in message, message
        assert "secret-redaction" in message or "output" in message.lower(), message
        return
    # The secret is only in the file, never in the command the model wrote.
    token = "ghp_" + secrets.token_hex(18)
    (ws.project / "deploy.env").write_text(f"GITHUB_TOKEN={token}\n")
    marker = ws.project / "redact.marker"
    run = _run(ws, f"cat {ws.project}/deploy.env; touch {marker}")
    assert marker.exists(), f"the command did not run\n{run}"
    sent = followup(ws.fake, run)
    leaked = [r.path for r in ws.fake.requests if token in r.text()]
    assert not leaked, f"the secret reached the model in {leaked}\n{tool_results(sent)}"
    # The model is told what happened: the redacted output, or Interlock's
    # reason where the host could only replace the result (failing closed).
    assert any("[REDACTED" in r or "Interlock" in r for r in tool_results(sent)), (
        tool_results(sent))


# -- approved rewrite ---------------------------------------------------------------------

REWRITE = (_hook("rewrite", "rewrite", extra="modifies = true")
           + _hook("approve", "approve"))


@pytest.mark.parametrize("agent", agents(), indirect=True)
def test_an_approved_rewrite_runs_the_rewritten_command(ws: Workspace) -> None:
    _configure(ws, REWRITE)
    ws.install()
    original, rewritten = ws.project / "original.marker", ws.project / "rewritten.marker"
    run = _run(ws, f"echo IL-ORIGINAL > {original}; echo IL-ORIGINAL-OUT")
    assert rewritten.exists(), f"the rewritten command did not run\n{run}"
    assert not original.exists(), f"the original command ran\n{run}"
    results = tool_results(followup(ws.fake, run))
    assert any("IL-REWRITTEN-OUT" in r for r in results), results


# -- failures: the bridge fails closed ----------------------------------------------------

FAILED_CLOSED = "Interlock bridge failed closed"


@pytest.mark.parametrize("agent", agents(), indirect=True)
def test_a_config_broken_mid_session_blocks_the_next_command(ws: Workspace) -> None:
    _configure(ws, GATE)
    ws.install()
    config = ws.project / ".interlock" / "config.toml"
    marker = ws.project / "broken.marker"
    run = _run(ws, f"touch {marker}",
               before_tool=lambda: config.write_text('[[hooks]\nname = "gate"\n'))
    assert not marker.exists(), f"the command ran under a broken config\n{run}"
    results = tool_results(followup(ws.fake, run))
    assert any(FAILED_CLOSED in r and "config.toml" in r for r in results), results


@pytest.fixture
def serve(ws: Workspace) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []

    log = ws.root / "serve.log"

    def start() -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            proc = subprocess.Popen([ws.python, "-m", "interlock", "serve", "--project",
                                     str(ws.project), "--no-tcp"], cwd=ws.project,
                                    env=ws.env(), stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        procs.append(proc)
        probe = [ws.python, "-c", "import sys; from interlock.hosts.server.paths import "
                 "socket_path_for; print(socket_path_for(sys.argv[1]))", str(ws.project)]
        path = subprocess.run(probe, env=ws.env(), capture_output=True, text=True,
                              check=True).stdout.strip()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"interlock serve exited:\n{log.read_text()}"
            with socket.socket(socket.AF_UNIX) as sock:
                try:
                    sock.connect(path)
                    return proc
                except OSError:
                    time.sleep(0.05)
        raise AssertionError("interlock serve did not open its socket within 60 s")

    yield start
    for proc in procs:
        os.killpg(proc.pid, signal.SIGCONT)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize("agent", agents(), indirect=True)
def test_a_frozen_server_blocks_the_command_at_the_deadline(
        ws: Workspace, serve: Callable[[], subprocess.Popen[bytes]]) -> None:
    _configure(ws, GATE)
    # The agent's hook timeout is 6 s, so the bridge's own deadline is 3 s.
    ws.install(timeout=6)
    server = serve()
    marker = ws.project / "frozen.marker"
    run = _run(ws, f"touch {marker}", before_tool=lambda: os.kill(server.pid, signal.SIGSTOP))
    assert not marker.exists(), f"the command ran while the server was frozen\n{run}"
    results = tool_results(followup(ws.fake, run))
    timed_out = ("no answer", "did not answer", "timed out", "deadline")
    assert any(FAILED_CLOSED in r and any(t in r for t in timed_out) for r in results), results


@pytest.mark.parametrize("agent", agents(), indirect=True)
def test_a_missing_interpreter_blocks_the_command(ws: Workspace) -> None:
    """The bridge's Python disappears mid-session (its virtualenv was removed)."""
    _configure(ws, GATE)
    venv = ws.root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # This interpreter sees Interlock where the test's does (a .pth of our path).
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "interlock-test.pth").write_text("\n".join(p for p in sys.path if p) + "\n")
    ws.install(python=str(venv / "bin" / "python"))
    marker = ws.project / "nopython.marker"
    run = _run(ws, f"touch {marker}", before_tool=lambda: shutil.rmtree(venv))
    assert not marker.exists(), f"the command ran without its policy\n{run}"
    results = tool_results(followup(ws.fake, run))
    assert any(FAILED_CLOSED in r for r in results), results
