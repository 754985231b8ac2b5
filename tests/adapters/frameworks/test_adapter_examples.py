"""Each adapter's example in docs/adapters.md is examples/adapters/*.py verbatim,
and runs offline, as a script, against the example project's policy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "realclients"))

from fake_models import FakeModels, Turn

ROOT = Path(__file__).parents[3]
EXAMPLES = ROOT / "examples" / "adapters"
DOC = (ROOT / "docs" / "adapters.md").read_text()
NAMES = ["with_pydantic_ai", "with_langchain", "with_openai_agents", "with_claude_agent_sdk"]

BLOCKED = '"reason": "deleting files is not allowed"'


def run(name: str, tmp_path: Path, **env: str) -> str:
    pytest.importorskip(name.removeprefix("with_").replace("openai_agents", "agents"))
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    (project / ".git").mkdir()  # the project search stops here
    full = {**os.environ, "INTERLOCK_ACCEPT_HOOKS": "1",
            "INTERLOCK_HOME": str(tmp_path / "config"),
            "INTERLOCK_STATE_DIR": str(tmp_path / "state"),
            "INTERLOCK_MANAGED": str(tmp_path / "managed"), **env}
    full.pop("INTERLOCK_STORE", None)
    proc = subprocess.run([sys.executable, f"{name}.py"], cwd=project, env=full,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("name", NAMES)
def test_the_doc_shows_the_example_as_it_is(name):
    assert (EXAMPLES / f"{name}.py").read_text().rstrip("\n") in DOC


@pytest.mark.e2e
def test_pydantic_ai_example(tmp_path):
    assert BLOCKED.replace(" ", "") in run("with_pydantic_ai", tmp_path).replace(" ", "")


@pytest.mark.e2e
def test_langchain_example(tmp_path):
    assert run("with_langchain", tmp_path).strip() == "shouted: HELLO"


@pytest.mark.e2e
def test_openai_agents_example(tmp_path):
    out = run("with_openai_agents", tmp_path)
    assert BLOCKED in out
    assert out.strip().endswith("I was not allowed to delete it.")


@pytest.mark.e2e
def test_claude_agent_sdk_example(tmp_path):
    home = tmp_path / "claude-home"
    home.mkdir()
    with FakeModels() as fake:
        fake.turn = Turn("rm notes.txt", final="It was not allowed.")
        out = run("with_claude_agent_sdk", tmp_path, ANTHROPIC_BASE_URL=fake.base_url,
                  ANTHROPIC_API_KEY="sk-ant-fake", HOME=str(home),
                  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                  HTTPS_PROXY=fake.base_url, NO_PROXY="127.0.0.1,localhost")
        returned = [r.text() for r in fake.main_requests()]
        escaped = [r for r in fake.requests if r.wire == "escape"]
    assert out.strip() == "It was not allowed."
    assert not escaped
    assert any("deleting files is not allowed" in text and "tool_result" in text
               for text in returned)
