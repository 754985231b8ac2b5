"""What each framework adapter adds per tool call, against the framework's bare loop.

Each framework's own agent loop runs a scripted conversation (its own test
model: turns of CALLS tool calls to an in-process no-op tool, then a final
answer), bare and with the adapter on an engine holding 5 in-process hooks
(4 on before_tool_call, one of them a modifier with nothing to change, and 1
on after_tool_call). What the adapter adds grows by ``per_call`` with each
tool call (its tool events, and its share of the model-call events of its
turn) on top of a fixed ``per_run`` cost (the run events, and the
framework's cost of having the adapter at all, such as LangGraph's extra
graph nodes).

The machine may be busy, so no figure compares runs of different rounds.
Each round times four scripted runs, bare and with the adapter, for a short
run (SHORT turns) and a long one (LONG turns), REPEAT times in an order that
alternates. On a shared machine the same run's CPU time varies by a factor of
up to two with what the other processes do (they share the processor's
caches and cores), and that load changes within a round: so each run with
the adapter is paired with the bare run of the same length timed next to it,
and a repeat's added time is that pair's ratio (less one) times the fastest
bare run of the round (its time unslowed). From the round's median ratio of
each length, ``per_call`` is the long run's added time less the short run's,
over the difference of their tool calls, and ``per_run`` what is left of the
short run's added time. The figures are the median over the rounds, with
their spread (p10-p90); the target reads the median.

The runs are not made longer instead: these frameworks' runs grow faster
than their turns (each turn reads the whole conversation), so a long run's
jitter grows faster than its tool calls; LONG - SHORT = 8 turns (40 tool
calls, some 30-100 ms of framework time) already puts a round's difference
far above the timer's resolution, and the repeats take the jitter out.
Times are this process's CPU time, so other processes on a shared machine
count less; a garbage collection runs before each run, so none is inherited
from the run before.

Of what an adapter adds, the part spent in the policy's own calls (its
events, their dispatch, the hooks) is timed apart, last, by timing every
call the adapter makes into its Policy (``instrument``), less what the timer
counts of its own (``timer_us`` per call, shown beside it); the rest is the
adapter's glue and what the framework charges for having hooks at all
(``--baseline empty`` measures the latter for pydantic-ai and LangChain).

The Claude Agent SDK's loop is the Claude Code CLI, a separate process whose
own run time (seconds) would bury microseconds; for it the figure is the cost
of the hook callbacks of one tool call (PreToolUse and PostToolUse) as the
SDK awaits them.

Target (docs/adapters.md, Overhead): at most 50 µs per tool call.

Run: ``python bench/adapters.py [--rounds N] [--only NAME ...] [--baseline empty]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import re
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report
from interlock import Engine, block
from interlock.adapters import Policy

SHORT, LONG = 1, 9
REPEAT = 5
"""Each round times every one of its four runs this many times, interleaved, and
keeps the fastest of each (a run that another process slowed is not the cost)."""
BASELINE = "bare"
"""``--baseline empty``: compare with a pass-through capability or middleware on the
same hook points instead (pydantic-ai, LangChain), so the figure is Interlock's part."""
CALLS = 5
TARGET_US = 50.0


def policy(framework: str) -> Policy:
    """An engine with 5 small in-process hooks of the kind operators write."""
    engine = Engine()
    for i, pattern in enumerate((r"\brm\s+-rf\b", r"\bsudo\b", r"/etc/shadow")):
        compiled = re.compile(pattern)

        def check(event: Any, pat: re.Pattern[str] = compiled) -> Any:
            if pat.search(str(event.args.get("command", ""))):
                return block(f"matches {pat.pattern}")
            return None

        engine.on("before_tool_call", check, name=f"policy-{i}")
    engine.on("before_tool_call", lambda e: None, name="normalise", modifies=True)
    engine.on("after_tool_call", lambda e: None, name="scan-result")
    made = POLICIES[framework] = Policy(framework, engine=engine, session_id=f"bench-{framework}")
    return made


POLICIES: dict[str, Policy] = {}
"""The policy each framework's adapter was given, by framework."""

_ASYNC = ("before_tool", "after_tool", "after_gated", "start_run", "emit")
_SYNC = ("before_tool_sync", "after_tool_sync", "after_gated_sync", "start_run_sync",
         "emit_sync", "notify", "listens", "apply", "check_fired")


def instrument(p: Policy) -> list[float]:
    """Time every call the adapter makes into ``p`` (its events, and the engine's
    dispatch of them): the returned list adds up the seconds spent there and
    the number of those calls, outermost calls only, for as long as the policy
    lives. In this thread's CPU time: a framework's worker threads (LangChain's
    tracing) hold the GIL at times, which is theirs to count."""
    spent: list[float] = [0.0, 0]
    depth = [0]  # one for all: a call inside another is the outer one's time
    for name in _ASYNC:
        setattr(p, name, _timed_async(getattr(p, name), spent, depth))
    for name in _SYNC:
        setattr(p, name, _timed_sync(getattr(p, name), spent, depth))
    return spent


def _timed_sync(fn: Callable[..., Any], spent: list[float],
                depth: list[int]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            depth[0] -= 1
            if not depth[0]:
                spent[0] += time.thread_time() - t0
                spent[1] += 1
    return call


def _timed_async(fn: Callable[..., Awaitable[Any]], spent: list[float],
                 depth: list[int]) -> Callable[..., Awaitable[Any]]:
    async def call(*args: Any, **kwargs: Any) -> Any:
        # The policy's hooks are plain sync ones: nothing here suspends, so no
        # other task's time is counted.
        depth[0] += 1
        t0 = time.thread_time()
        try:
            return await fn(*args, **kwargs)
        finally:
            depth[0] -= 1
            if not depth[0]:
                spent[0] += time.thread_time() - t0
                spent[1] += 1
    return call


async def timer_us(n: int = 20000) -> float:
    """What ``instrument`` counts of its own per call: its wrapper and clock reads
    around a call that does nothing (the fastest of a few loops, the mean of the
    sync and async wrappers). Taken out of the policy's figure, which it would
    otherwise inflate by this much per call (a lower bound: inside a
    framework's run the timer's own code is out of the caches too)."""
    async def nothing_async() -> None:
        return None

    sync, asynchronous = float("inf"), float("inf")
    for _ in range(5):
        spent: list[float] = [0.0, 0]
        timed_sync = _timed_sync(lambda: None, spent, [0])
        for _ in range(n):
            timed_sync()
        sync = min(sync, spent[0] / n)
        spent = [0.0, 0]
        timed_async = _timed_async(nothing_async, spent, [0])
        for _ in range(n):
            await timed_async()
        asynchronous = min(asynchronous, spent[0] / n)
    return (sync + asynchronous) / 2 * 1e6


async def interlock_us(framework: str, run: Run, rounds: int) -> tuple[float, float]:
    """Of what the adapter adds per tool call, the time spent in the policy's own
    calls (events, dispatch, hooks): the median over ``rounds`` of the long run's
    less the short run's, per tool call, less the timer's own part of it
    (:func:`timer_us` per call); and that part. Run last: it slows the adapter
    down."""
    own = await timer_us()
    spent = instrument(POLICIES[framework.replace("_", "-")])
    per_call, timer = [], []
    tool_calls = (LONG - SHORT) * CALLS
    for _ in range(rounds):
        seconds, calls = spent
        await run(True, SHORT)
        short, short_calls = spent[0] - seconds, spent[1] - calls
        seconds, calls = spent
        await run(True, LONG)
        made = spent[1] - calls - short_calls
        timer.append(made * own / tool_calls)
        per_call.append((spent[0] - seconds - short) / tool_calls * 1e6 - timer[-1])
    return statistics.median(per_call), statistics.median(timer)


Run = Callable[[bool, int], Awaitable[None]]
"""``run(with_adapter, turns)``: one scripted run of ``turns`` turns."""


async def timed(run: Run, with_adapter: bool, turns: int) -> float:
    """CPU seconds of this process for one scripted run, after a garbage collection."""
    gc.collect()
    t0 = time.process_time()
    await run(with_adapter, turns)
    return time.process_time() - t0


# Each round times these four runs, in this order on even rounds and reversed
# on odd ones, so that neither side always runs first (warmer caches).
ORDER = ((False, LONG), (True, LONG), (True, SHORT), (False, SHORT))


async def rounds_of(run: Run, rounds: int) -> list[dict[str, float]]:
    """Per round: the four runs' times and the round's per_call and per_run (µs)."""
    for with_adapter, turns in ORDER:  # warm up both paths, both lengths
        await run(with_adapter, turns)
    out = []
    for i in range(rounds):
        times = dict.fromkeys(ORDER, float("inf"))
        ratios: dict[int, list[float]] = {SHORT: [], LONG: []}
        for j in range(REPEAT):
            took = {}
            for key in (ORDER if (i + j) % 2 == 0 else ORDER[::-1]):
                took[key] = await timed(run, *key)
                times[key] = min(times[key], took[key])
            for turns in (SHORT, LONG):  # each pair was timed side by side
                ratios[turns].append(took[True, turns] / took[False, turns])
        added_short, added_long = (
            (statistics.median(ratios[turns]) - 1) * times[False, turns]
            for turns in (SHORT, LONG))
        per_call = (added_long - added_short) / ((LONG - SHORT) * CALLS)
        out.append({"per_call": per_call * 1e6,
                    "per_run": (added_short - per_call * SHORT * CALLS) * 1e6,
                    "bare_ms": times[False, LONG] * 1e3, "adapter_ms": times[True, LONG] * 1e3})
    return out


def spread(values: list[float]) -> tuple[float, float, float]:
    """(median, p10, p90) of ``values``."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return statistics.median(values), deciles[0], deciles[-1]


# -- the frameworks --------------------------------------------------------------------

def pydantic_ai_run() -> Run:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    from interlock.adapters.pydantic_ai import Interlock

    turns = [SHORT]

    def script(messages: list[Any], info: AgentInfo) -> ModelResponse:
        turn = sum(1 for m in messages if isinstance(m, ModelResponse))
        if turn >= turns[0]:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("noop", {"command": "ls", "n": i},
                                                 tool_call_id=f"c{turn}-{i}")
                                    for i in range(CALLS)])

    def noop(command: str, n: int) -> str:
        return "ok"

    from pydantic_ai.capabilities import AbstractCapability

    class Empty(AbstractCapability[Any]):
        """The same hook points, passing through: what pydantic-ai charges for any."""

        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            return await handler()

        async def wrap_model_request(self, ctx: Any, *, request_context: Any,
                                     handler: Any) -> Any:
            return await handler(request_context)

        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any,
                                    handler: Any) -> Any:
            return await handler(args)

    bare: Agent[None, str] = Agent(FunctionModel(script), tools=[noop],
                                   capabilities=[Empty()] if BASELINE == "empty" else [])
    governed: Agent[None, str] = Agent(FunctionModel(script), tools=[noop],
                                       capabilities=[Interlock(policy=policy("pydantic-ai"))])

    async def run(with_adapter: bool, n: int) -> None:
        turns[0] = n
        await (governed if with_adapter else bare).run(
            "go", usage_limits=UsageLimits(request_limit=None))

    return run


def langchain_run() -> Run:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from interlock.adapters.langchain import InterlockMiddleware

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:  # type: ignore[override]
            return self

    @tool
    def noop(command: str, n: int) -> str:
        """Does nothing."""
        return "ok"

    def script(turns: int = SHORT) -> Any:
        return iter([AIMessage("", tool_calls=[{"id": f"c{t}-{i}", "name": "noop",
                                                "args": {"command": "ls", "n": i}}
                                               for i in range(CALLS)])
                     for t in range(turns)] + [AIMessage("done")])

    from langchain.agents.middleware import AgentMiddleware

    class Empty(AgentMiddleware[Any, Any, Any]):
        """The same hook points, passing through: what LangChain charges for any. Its
        wrap hooks are plain functions returning the awaitable, as the adapter's are:
        LangChain's cheaper path for them (docs/adapters.md, Overhead)."""

        async def abefore_agent(self, state: Any, runtime: Any) -> None:
            return None

        async def aafter_agent(self, state: Any, runtime: Any) -> None:
            return None

        def awrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

        def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

    bare_model, governed_model = Scripted(messages=script()), Scripted(messages=script())
    bare = create_agent(bare_model, tools=[noop],
                        middleware=[Empty()] if BASELINE == "empty" else [])
    governed = create_agent(governed_model, tools=[noop],
                            middleware=[InterlockMiddleware(policy=policy("langchain"))])

    async def run(with_adapter: bool, turns: int) -> None:
        model, agent = (governed_model, governed) if with_adapter else (bare_model, bare)
        model.messages = script(turns)
        await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]},
                            {"recursion_limit": 4 * turns + 10})

    return run


def openai_agents_run() -> Run:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing.model import ScriptedModel, assistant_message, function_call

    from interlock.adapters.openai_agents import Interlock

    set_tracing_disabled(True)

    @function_tool
    def noop(command: str, n: int) -> str:
        """Does nothing."""
        return "ok"

    def model(turns: int) -> ScriptedModel:
        return ScriptedModel([[function_call("noop", {"command": "ls", "n": i},
                                             call_id=f"c{t}-{i}") for i in range(CALLS)]
                              for t in range(turns)] + [[assistant_message("done")]])

    interlock = Interlock(policy=policy("openai-agents"))
    governed_tools = interlock.tools([noop])

    async def run(with_adapter: bool, turns: int) -> None:
        if with_adapter:
            agent = Agent(name="a", model=model(turns), tools=governed_tools)
            await Runner.run(agent, "go", hooks=interlock, max_turns=turns + 2)
        else:
            await Runner.run(Agent(name="a", model=model(turns), tools=[noop]), "go",
                             max_turns=turns + 2)

    return run


def claude_agent_sdk_run() -> Run:
    from interlock.adapters.claude_agent_sdk import interlock_hooks

    hooks = interlock_hooks(policy=policy("claude-agent-sdk"))
    pre, post = hooks["PreToolUse"][0].hooks[0], hooks["PostToolUse"][0].hooks[0]
    base = {"session_id": "bench", "transcript_path": "", "cwd": "/tmp",
            "tool_name": "Bash", "tool_input": {"command": "ls"}}

    async def run(with_adapter: bool, turns: int) -> None:
        if not with_adapter:
            return
        for i in range(turns * CALLS):
            await pre({**base, "hook_event_name": "PreToolUse",  # type: ignore[typeddict-item]
                       "tool_use_id": f"t{i}"}, f"t{i}", {"signal": None})
            await post({**base, "hook_event_name": "PostToolUse",  # type: ignore[typeddict-item]
                        "tool_use_id": f"t{i}", "tool_response": "ok"}, f"t{i}",
                       {"signal": None})

    return run


FRAMEWORKS: dict[str, Callable[[], Run]] = {
    "pydantic_ai": pydantic_ai_run,
    "langchain": langchain_run,
    "openai_agents": openai_agents_run,
    "claude_agent_sdk": claude_agent_sdk_run,
}


async def core_us(rounds: int, n: int = 5000) -> tuple[float, float, float]:
    """The policy alone per tool call (before_tool_call and after_tool_call on the 5
    hooks), without any framework: the share of the figures above that is Interlock's.
    (median, p10, p90) over the rounds."""
    p = policy("core")

    async def calls(n: int) -> None:
        for _ in range(n):
            gate = await p.before_tool("noop", {"command": "ls", "n": 1}, "c")
            await p.after_tool("noop", gate.args, "ok", "c")

    await calls(n // 10)
    per_call = []
    for _ in range(max(rounds, 5)):
        gc.collect()
        t0 = time.process_time()
        await calls(n)
        per_call.append((time.process_time() - t0) / n * 1e6)
    return spread(per_call)


async def main(rounds: int, only: list[str]) -> dict[str, Any]:
    figures: dict[str, Any] = {"tool_calls": [SHORT * CALLS, LONG * CALLS], "hooks": 5,
                               "target_us": TARGET_US, "baseline": BASELINE,
                               "rounds": rounds}
    core, low, high = await core_us(rounds)
    figures["policy_core_us_per_tool_call"] = round(core, 1)
    figures["policy_core_us_per_tool_call_p10_p90"] = [round(low, 1), round(high, 1)]
    print(f"{'policy alone':18} {core:6.1f} µs per tool call (p10-p90 {low:.1f}-{high:.1f}; "
          "no framework)")
    for name, build in FRAMEWORKS.items():
        if only and name not in only:
            continue
        try:
            run = build()
        except ImportError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        measured = await rounds_of(run, rounds)
        ours, timer = ((await interlock_us(name, run, rounds))
                       if name.replace("_", "-") in POLICIES and name != "claude_agent_sdk"
                       else (None, 0.0))
        per_call, low, high = spread([r["per_call"] for r in measured])
        per_run = statistics.median(r["per_run"] for r in measured)
        bare = statistics.median(r["bare_ms"] for r in measured)
        governed = statistics.median(r["adapter_ms"] for r in measured)
        figures[f"{name}_bare_ms"] = round(bare, 3)
        figures[f"{name}_adapter_ms"] = round(governed, 3)
        figures[f"{name}_us_per_tool_call"] = round(per_call, 1)
        figures[f"{name}_us_per_tool_call_p10_p90"] = [round(low, 1), round(high, 1)]
        figures[f"{name}_us_per_run"] = round(per_run, 1)
        verdict = "ok" if per_call <= TARGET_US else "OVER TARGET"
        shown = ""
        if ours is not None:
            figures[f"{name}_policy_us_per_tool_call"] = round(ours, 1)
            figures[f"{name}_policy_timer_us_per_tool_call"] = round(timer, 1)
            shown = f"; in the policy's calls {ours:.1f}, the timer's own {timer:.1f} taken out"
        print(f"{name:18} {LONG * CALLS} calls: bare {bare:7.2f} ms, with adapter "
              f"{governed:7.2f} ms; adds {per_call:6.1f} µs per tool call "
              f"(p10-p90 {low:.1f}-{high:.1f}; {verdict}{shown}) + {per_run:7.1f} µs per run")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", nargs="*", default=[], choices=list(FRAMEWORKS))
    parser.add_argument("--baseline", choices=["bare", "empty"], default="bare")
    args = parser.parse_args()
    BASELINE = args.baseline
    report(asyncio.run(main(args.rounds, args.only)))
