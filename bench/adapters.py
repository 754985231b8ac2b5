"""What each framework adapter adds per tool call, against the framework's bare loop.

Each framework's own agent loop runs a scripted conversation (its own test
model: turns of CALLS tool calls to an in-process no-op tool, then a final
answer), bare and with the adapter on an engine holding 5 in-process hooks
(4 on before_tool_call, one of them a modifier with nothing to change, and 1
on after_tool_call), interleaved in the same process; the best round of each
is kept (CPU time of this process, so that other processes on a shared
machine count less). It does so for a short run (SHORT turns) and a long one (LONG
turns): what the adapter adds grows by ``per_call`` with each tool call (its
tool events, and its share of the model-call events of its turn) on top of a
fixed ``per_run`` cost (the run events, and the framework's cost of having
the adapter at all, such as LangGraph's extra graph nodes). ``per_call`` is
the difference of the two runs' added time over the difference of their tool
calls; the figure at the target is ``per_call``.

The Claude Agent SDK's loop is the Claude Code CLI, a separate process whose
own run time (seconds) would bury microseconds; for it the figure is the cost
of the hook callbacks of one tool call (PreToolUse and PostToolUse) as the
SDK awaits them.

Target (docs/adapters.md, Overhead): at most 50 µs per tool call.

Run: ``python bench/adapters.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
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
    return Policy(framework, engine=engine, session_id=f"bench-{framework}")


Run = Callable[[bool, int], Awaitable[None]]
"""``run(with_adapter, turns)``: one scripted run of ``turns`` turns."""


async def measure(run: Run, rounds: int, turns: int) -> tuple[float, float]:
    """(best bare, best governed) CPU seconds of this process per scripted run,
    interleaved: CPU time, so other processes on a shared machine count less."""
    await run(False, turns)
    await run(True, turns)  # warm up both paths
    bare = governed = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        await run(False, turns)
        bare = min(bare, time.process_time() - t0)
        t0 = time.process_time()
        await run(True, turns)
        governed = min(governed, time.process_time() - t0)
    return bare, governed


# -- the frameworks --------------------------------------------------------------------

def pydantic_ai_run() -> Run:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

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
        await (governed if with_adapter else bare).run("go")

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
        """The same hook points, passing through: what LangChain charges for any."""

        async def abefore_agent(self, state: Any, runtime: Any) -> None:
            return None

        async def aafter_agent(self, state: Any, runtime: Any) -> None:
            return None

        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            return await handler(request)

        async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            return await handler(request)

    bare_model, governed_model = Scripted(messages=script()), Scripted(messages=script())
    bare = create_agent(bare_model, tools=[noop],
                        middleware=[Empty()] if BASELINE == "empty" else [])
    governed = create_agent(governed_model, tools=[noop],
                            middleware=[InterlockMiddleware(policy=policy("langchain"))])

    async def run(with_adapter: bool, turns: int) -> None:
        model, agent = (governed_model, governed) if with_adapter else (bare_model, bare)
        model.messages = script(turns)
        await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]})

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


async def core_us(n: int = 5000) -> float:
    """The policy alone per tool call (before_tool_call and after_tool_call on the 5
    hooks), without any framework: the share of the figures above that is Interlock's."""
    p = policy("core")
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(n):
            gate = await p.before_tool("noop", {"command": "ls", "n": 1}, "c")
            await p.after_tool("noop", gate.args, "ok", "c")
        best = min(best, (time.process_time() - t0) / n)
    return best * 1e6


async def main(rounds: int, only: list[str]) -> dict[str, Any]:
    figures: dict[str, Any] = {"tool_calls": [SHORT * CALLS, LONG * CALLS], "hooks": 5,
                               "target_us": TARGET_US, "baseline": BASELINE}
    core = await core_us()
    figures["policy_core_us_per_tool_call"] = round(core, 1)
    print(f"{'policy alone':18} {core:6.1f} µs per tool call (no framework)")
    for name, build in FRAMEWORKS.items():
        if only and name not in only:
            continue
        try:
            run = build()
        except ImportError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        short_bare, short_governed = await measure(run, rounds, SHORT)
        long_bare, long_governed = await measure(run, rounds, LONG)
        added_short, added_long = short_governed - short_bare, long_governed - long_bare
        per_call = (added_long - added_short) / ((LONG - SHORT) * CALLS) * 1e6
        per_run = added_short * 1e6 - per_call * SHORT * CALLS
        figures[f"{name}_bare_ms"] = round(long_bare * 1e3, 3)
        figures[f"{name}_adapter_ms"] = round(long_governed * 1e3, 3)
        figures[f"{name}_us_per_tool_call"] = round(per_call, 1)
        figures[f"{name}_us_per_run"] = round(per_run, 1)
        verdict = "ok" if per_call <= TARGET_US else "OVER TARGET"
        print(f"{name:18} {LONG * CALLS} calls: bare {long_bare * 1e3:7.2f} ms, with adapter "
              f"{long_governed * 1e3:7.2f} ms; adds {per_call:6.1f} µs per tool call "
              f"({verdict}) + {per_run:7.1f} µs per run")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--only", nargs="*", default=[], choices=list(FRAMEWORKS))
    parser.add_argument("--baseline", choices=["bare", "empty"], default="bare")
    args = parser.parse_args()
    BASELINE = args.baseline
    report(asyncio.run(main(args.rounds, args.only)))
