"""Shared helpers for the config, registry, trust and `hooks` CLI tests.

Every test gets its own managed, user, state and project folders under
tmp_path (INTERLOCK_HOME / INTERLOCK_MANAGED point there), so nothing reads
the real ~/.config or /etc.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from interlock import Engine
from interlock.config.registry import Registry
from interlock.testing import RecordingSink


class World:
    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "project"
        self.home = tmp / "home"
        self.managed = tmp / "managed"
        self.bundled = tmp / "bundled"
        for d in (self.root, self.home, self.managed, self.bundled):
            d.mkdir(parents=True)
        self.engines: list[Engine] = []

    @property
    def project(self) -> Path:
        return self.root / ".interlock"

    def write(self, path: Path, text: str, *, mode: int | None = None) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        if mode is not None:
            path.chmod(mode)
        return path

    def config(self, where: Path, text: str, name: str = "config.toml") -> Path:
        return self.write(where / name, text)

    def registry(self, *, accept: bool = False, sink: RecordingSink | None = None) -> Registry:
        engine = Engine(sinks=[sink] if sink is not None else [])
        self.engines.append(engine)
        return Registry(engine, project_root=self.root, home=self.home, managed=self.managed,
                        bundled=self.bundled, accept_hooks=accept)

    def close(self) -> None:
        for engine in self.engines:
            engine.close(timeout=2)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    w = World(tmp_path)
    monkeypatch.setenv("INTERLOCK_HOME", str(w.home))
    monkeypatch.setenv("INTERLOCK_MANAGED", str(w.managed))
    monkeypatch.setenv("INTERLOCK_BUNDLED", str(w.bundled))
    monkeypatch.delenv("INTERLOCK_STATE_DIR", raising=False)
    monkeypatch.delenv("INTERLOCK_ACCEPT_HOOKS", raising=False)
    yield w
    w.close()


def run(world: World, *args: str) -> tuple[int, str, str]:
    """Run `interlock hooks ARGS -C <project>`; returns (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from interlock.hosts.cli import build_app

    project = ["-C", str(world.root)] if args[0] != "import" else []
    # Output to a pipe has no width limit, whatever $COLUMNS the test runner left set.
    # Only the hooks command is built, as `interlock hooks ...` builds it (the whole
    # tree took typer about 20 ms a run).
    result = CliRunner().invoke(build_app("hooks"),  # type: ignore[arg-type]
                                ["hooks", *args, *project], env={"COLUMNS": None})
    return result.exit_code, result.stdout, result.stderr


GUARD = '''
from interlock import block

def handle(event):
    if "rm" in event.args.get("command", ""):
        return block("no rm")
'''

__all__ = ["GUARD", "World", "os", "run", "world"]
