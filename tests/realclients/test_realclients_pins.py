"""The pinned client versions and the ones docs/one-policy.md says are tested agree."""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "one-policy.md"


def test_the_docs_list_exactly_the_pinned_client_versions() -> None:
    pins = json.loads((HERE / "npm" / "package.json").read_text())["dependencies"]
    lock = json.loads((HERE / "npm" / "package-lock.json").read_text())["packages"]
    section = DOC.read_text().split("## Tested clients", 1)[1].split("\n## ", 1)[0]
    listed = dict(re.findall(r"\| `(@[^`]+)` \| ([0-9][^ |]*) \|", section))
    assert listed == pins
    for package, version in pins.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{package} must be pinned exactly"
        assert lock[f"node_modules/{package}"]["version"] == version
