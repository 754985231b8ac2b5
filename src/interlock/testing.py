"""Helpers to test hooks the way Interlock tests its own.

    from interlock.testing import RecordingSink, fire

    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    outcome = fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})

Drive the reference agent with a scripted model (no network):

    from interlock.testing import ScriptedModel, run_agent

    model = ScriptedModel([{"tool_calls": [{"name": "terminal", "args": {"command": "ls"}}]},
                           {"text": "done"}])
    result = run_agent(engine, model, "list the files", cwd=tmp_path)
    model.assert_done()
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from interlock.engine.dispatch import Engine
from interlock.engine.outcome import Outcome
from interlock.engine.sinks import FailureRecord
from interlock.events import make
from interlock.models.scripted import ScriptedModel, ScriptExhausted, ScriptMismatch, Step

if TYPE_CHECKING:
    from interlock.agent import RunResult


class RecordingSink:
    """Keeps every outcome and failure in memory, in order."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.failures: list[FailureRecord] = []
        self._lock = threading.Lock()

    def dispatched(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)

    def failed(self, record: FailureRecord) -> None:
        with self._lock:
            self.failures.append(record)

    def verdicts(self) -> list[tuple[str, str, str]]:
        """(event, hook, verdict) for every hook of every recorded dispatch."""
        return [(o.name, r.hook, r.verdict) for o in self.outcomes for r in o.hooks]


def fire(engine: Engine, event: str, payload: dict[str, Any] | None = None,
         **fields: Any) -> Outcome:
    """Build event ``event`` from fields and emit it through the sync facade."""
    return engine.emit_sync(make(event, payload, **fields))


async def afire(engine: Engine, event: str, payload: dict[str, Any] | None = None,
                **fields: Any) -> Outcome:
    """Build event ``event`` from fields and emit it through the async API."""
    return await engine.emit(make(event, payload, **fields))


def run_agent(engine: Engine, model: Any, prompt: str, **options: Any) -> RunResult:
    """Run the reference agent once on ``prompt`` (sync helper); options are AgentOptions."""
    import asyncio

    from interlock.agent import Agent, AgentOptions

    async def go() -> RunResult:
        agent = Agent(engine, model, options=AgentOptions(**options))
        result = await agent.run(prompt)
        await agent.close()
        return result

    return asyncio.run(go())


__all__ = ["RecordingSink", "ScriptExhausted", "ScriptMismatch", "ScriptedModel", "Step",
           "afire", "fire", "run_agent"]
