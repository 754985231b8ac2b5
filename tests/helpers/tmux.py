"""A private tmux server for tests of the chat in a real terminal."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


class Tmux:
    def __init__(self, sock: Path) -> None:
        self.sock = sock

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", str(self.sock), *args], check=True,
                              capture_output=True, text=True, timeout=30).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "chat")

    def wait(self, check: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}")
            time.sleep(0.1)  # polling the pane: the terminal has no event to wait on


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    t = Tmux(tmp_path / "tmux.sock")
    yield t
    subprocess.run(["tmux", "-S", str(t.sock), "kill-server"], capture_output=True, timeout=30)
