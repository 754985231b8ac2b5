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

import shutil
import sys
import tempfile
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
