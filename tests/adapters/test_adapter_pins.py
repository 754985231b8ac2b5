"""The framework versions the dev extra pins and the ones docs/adapters.md says are
tested agree, and each is pinned exactly."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("pydantic-ai-slim", "langchain", "langchain-core", "langgraph", "openai-agents",
              "claude-agent-sdk")


def _dev_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins: dict[str, str] = {}
    for requirement in project["optional-dependencies"]["dev"]:
        name = re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0]
        if name in FRAMEWORKS:
            exact = re.fullmatch(rf"{re.escape(name)}==(\d+(?:\.\d+)*)", requirement)
            assert exact, f"the dev extra must pin {name} exactly (name==version)"
            pins[name] = exact.group(1)
    return pins


def test_the_docs_list_exactly_the_pinned_framework_versions() -> None:
    section = (ROOT / "docs" / "adapters.md").read_text().split("## Tested versions", 1)[1]
    table = section.split("\n## ", 1)[0].split("| adapter |", 1)[1]
    listed = dict(re.findall(r"\b([a-z][a-z0-9-]*) (\d+\.\d+\.\d+)\b", table))
    assert listed == _dev_pins()
    assert sorted(listed) == sorted(FRAMEWORKS)
