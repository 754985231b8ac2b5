"""Shared helpers for the agent tests: a recorder hook on every event, and a runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from interlock import Engine
from interlock.agent import Agent, AgentOptions, SessionStore
from interlock.engine.catalog import BY_NAME
from interlock.events import Event
from interlock.testing import ScriptedModel

GATEWAY_OR_REGISTRY = frozenset({"message_received", "before_message_send", "message_sent",
                                 "gateway_start", "gateway_stop", "config_change"})


class Recorder:
    """A no-opinion hook on every catalog event; keeps every event it sees, in order."""

    def __init__(self, engine: Engine) -> None:
        self.seen: list[Event] = []
        for name in BY_NAME:
            engine.on(name, self._hook, name=f"record-{name}")

    def _hook(self, event: Event) -> None:
        self.seen.append(event)

    def names(self) -> list[str]:
        return [e.name for e in self.seen]

    def of(self, name: str) -> list[Any]:
        return [e for e in self.seen if e.name == name]

    def one(self, name: str) -> Any:
        found = self.of(name)
        assert found, f"{name} never fired; fired: {self.names()}"
        return found[0]


def make_agent(engine: Engine, steps: list[Any], tmp_path: Path, *, store: bool = True,
               **options: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(steps)
    opts = AgentOptions(cwd=tmp_path, project_root=tmp_path, **options)
    db = SessionStore(tmp_path / ".state" / "sessions.db") if store else None
    return Agent(engine, model, options=opts, store=db), model


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def tool_messages(model: ScriptedModel, call_index: int) -> list[dict[str, Any]]:
    """Tool result messages the model saw in call ``call_index``."""
    return [m for m in model.calls[call_index].messages if m["role"] == "tool"]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                  ) -> Path:
    """Import into a test module: agent tests never touch the real config or state dirs."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("INTERLOCK_HOME", str(home / "config"))
    monkeypatch.setenv("INTERLOCK_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("INTERLOCK_MANAGED", str(home / "managed"))
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "INTERLOCK_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return home
