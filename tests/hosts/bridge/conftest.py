"""Fixtures shared by the bridge tests."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.bridges import Env


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    """A project with a private home and runtime folder; the bridge servers its
    calls started are killed when the test ends."""
    made = Env(tmp_path)
    yield made
    for pid in made.servers():
        os.kill(pid, signal.SIGKILL)
