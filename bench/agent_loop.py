"""The engine's overhead per tool call inside the reference agent loop.

The same scripted run (turns of 5 concurrent calls to an in-process no-op
tool) goes through the agent twice: with hooks off (an engine with no hooks)
and with 10 in-process policy hooks (8 on before_tool_call, one of them a
modifier, and 2 on after_tool_call). The difference, per tool call, is what
the hooks cost the loop. Target: at most 1 ms added per tool call.

Run: ``python bench/agent_loop.py``.
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report
from interlock import Engine, block
from interlock.agent import Agent, AgentOptions, ToolRegistry
from interlock.models.scripted import ScriptedModel
from interlock.models.tooling import ModelRequest, ModelResponse, ToolSpec

TURNS = 20
CALLS_PER_TURN = 5
RUNS = 30
TARGET_MS = 1.0


async def _noop(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"ok": True, "n": args.get("n")}


TOOL = ToolSpec("noop", "does nothing", {"type": "object",
                                         "properties": {"n": {"type": "integer"},
                                                        "command": {"type": "string"}}}, _noop)


def policy_hooks(engine: Engine) -> None:
    """Ten small policies of the kind operators write."""
    patterns = [re.compile(p) for p in (r"\brm\s+-rf\b", r"\bcurl\b.*\|\s*sh", r"\bsudo\b",
                                        r"\bchmod\s+777\b", r"\bgit\s+push\s+--force\b",
                                        r"\bmkfs\b", r"/etc/shadow")]
    for i, pat in enumerate(patterns):
        def check(event: Any, pat: re.Pattern[str] = pat) -> Any:
            if pat.search(event.args.get("command", "")):
                return block(f"matches {pat.pattern}")
            return None
        engine.on("before_tool_call", check, name=f"policy-{i}")

    def normalise(event: Any) -> None:
        return None  # a modifier that had nothing to change this time

    engine.on("before_tool_call", normalise, modifies=True, name="normalise")

    def size_cap(event: Any) -> None:
        return None

    def audit_tag(event: Any) -> None:
        return None

    engine.on("after_tool_call", size_cap, name="size-cap")
    engine.on("after_tool_call", audit_tag, name="audit-tag")


def script() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "noop", "args": {"n": t * CALLS_PER_TURN + c,
                                                  "command": "echo safe"}}
                        for c in range(CALLS_PER_TURN)]}
        for t in range(TURNS)]
    steps.append({"text": "done"})
    return steps


class ReplayModel:
    """Replies from the script without recording calls: the bench measures the loop,
    not ScriptedModel's deep copies."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self._replies = [ScriptedModel([s])._take(_EMPTY) for s in steps]
        self._i = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self._i += 1
        return self._replies[self._i - 1]

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        yield await self.complete(request)


_EMPTY = ModelRequest(model="", messages=[])


async def one_run(engine: Engine, cwd: Path) -> float:
    model = ReplayModel(script())
    agent = Agent(engine, model, tools=ToolRegistry([TOOL]),
                  options=AgentOptions(cwd=cwd, max_turns=TURNS + 5, stream=False))
    t0 = time.perf_counter_ns()
    result = await agent.run("go")
    elapsed = time.perf_counter_ns() - t0
    assert result.ok, result.text
    return elapsed / (TURNS * CALLS_PER_TURN)


async def measure(off: Engine, on: Engine, cwd: Path) -> tuple[float, float]:
    """Best of RUNS for each, interleaved so drift hits both sides alike."""
    await one_run(off, cwd)  # warm up
    await one_run(on, cwd)
    best_off = best_on = float("inf")
    for _ in range(RUNS):
        best_off = min(best_off, await one_run(off, cwd))
        best_on = min(best_on, await one_run(on, cwd))
    return best_off, best_on


def main() -> None:
    cwd = Path(tempfile.mkdtemp(prefix="interlock-bench-"))
    off = Engine()
    on = Engine()
    policy_hooks(on)
    base, hooked = asyncio.run(measure(off, on, cwd))
    print(f"hooks off:           {base / 1000:8.1f} us per tool call")
    print(f"10 policy hooks:     {hooked / 1000:8.1f} us per tool call")
    added_ms = (hooked - base) / 1e6
    print(f"added per tool call: {added_ms * 1000:8.1f} us (target <= {TARGET_MS * 1000:.0f} us)")
    off.close()
    on.close()
    report({"bench": "agent_loop", "calls_per_run": TURNS * CALLS_PER_TURN,
            "hooks_off_us_per_call": round(base / 1000, 2),
            "hooks_on_us_per_call": round(hooked / 1000, 2),
            "added_ms_per_call": round(added_ms, 4), "target_ms": TARGET_MS,
            "meets_target": added_ms <= TARGET_MS})


if __name__ == "__main__":
    main()
