from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from adapter_project import make_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The policy project (tests/adapters/adapter_project.py), as the working folder."""
    yield from make_project(tmp_path, monkeypatch)
