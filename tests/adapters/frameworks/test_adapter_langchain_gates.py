"""What a LangChain agent runs besides the tools the middleware gates: provider-run
(dict) tools are refused, and a tool a hook took off the offer is not run
(docs/adapters.md, LangChain). Each runs through create_agent's own loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("langchain")

from adapter_project import session
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from interlock import ConfigError, Engine, modify
from interlock.adapters import Policy
from interlock.adapters.langchain import InterlockMiddleware

RAN: list[str] = []


class Chat(GenericFakeChatModel):
    bound: list[Any] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound.append(tools)
        return self


@tool
def shell(cmd: str) -> str:
    """Run a shell command."""
    RAN.append(cmd)
    return "ok"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    RAN.append(path)
    return "contents"


async def _run(agent: Any, run: str, state: dict[str, Any]) -> Any:
    return agent.invoke(state) if run == "invoke" else await agent.ainvoke(state)


@pytest.fixture
def engine() -> Iterator[Engine]:
    RAN.clear()
    Chat.bound = []
    engine = Engine()
    yield engine
    engine.close(timeout=2)


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
async def test_provider_run_dict_tools_are_refused(engine, run):
    mcp_tool = {"type": "mcp", "server_label": "github",
                "server_url": "https://example.invalid/mcp", "require_approval": "never"}
    model = Chat(messages=iter([AIMessage("deleted the repo (the provider ran the MCP call)")]))
    agent = create_agent(model, tools=[mcp_tool], middleware=[
        InterlockMiddleware(policy=Policy("langchain", engine=engine, session_id=session()))])
    state = {"messages": [{"role": "user", "content": "delete the prod repo"}]}
    with pytest.raises(ConfigError, match="github"):
        await _run(agent, run, state)
    assert Chat.bound == []


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
async def test_a_tool_a_hook_took_off_the_offer_is_blocked_when_called(engine, run):
    engine.on("before_llm_call", lambda e: modify(tools=[t for t in e.tools if t != "shell"]),
              name="no-shell-here", modifies=True)
    model = Chat(messages=iter([
        AIMessage("", tool_calls=[{"id": "c1", "name": "shell", "args": {"cmd": "rm -rf /srv"}},
                                  {"id": "c2", "name": "read_file", "args": {"path": "a"}}]),
        AIMessage("done")]))
    agent = create_agent(model, tools=[shell, read_file], middleware=[
        InterlockMiddleware(policy=Policy("langchain", engine=engine, session_id=session()))])
    state = {"messages": [{"role": "user", "content": "go"}]}
    out = await _run(agent, run, state)
    assert RAN == ["a"], "the offered tool ran, the dropped one did not"
    results = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results["c1"].status == "error"
    assert "not offered" in str(results["c1"].content)
    assert "engine.active-tools" in str(results["c1"].content)


class _Counting(ThreadPoolExecutor):
    """The loop's default executor, counting what it is handed."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.handed = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.handed += 1
        return super().submit(fn, *args, **kwargs)


async def test_the_async_hooks_hand_no_work_to_a_worker_thread(engine):
    """LangChain runs each middleware's awrap_* hooks as LangSmith spans, which for a
    coroutine function are set up and closed on a worker thread (two thread-pool
    round trips a model or tool call, traced or not; docs/adapters.md, Overhead).
    The middleware's run hands the thread pool no more work than a bare run."""
    engine.on("before_tool_call", lambda e: None, name="watch")
    counting = _Counting()
    asyncio.get_running_loop().set_default_executor(counting)

    async def handed(middleware: list[Any]) -> int:
        model = Chat(messages=iter([
            AIMessage("", tool_calls=[{"id": f"c{i}", "name": "read_file",
                                       "args": {"path": str(i)}} for i in range(3)]),
            AIMessage("done")]))
        before = counting.handed
        await create_agent(model, tools=[read_file], middleware=middleware).ainvoke(
            {"messages": [{"role": "user", "content": "go"}]})
        return counting.handed - before

    bare = await handed([])
    governed = await handed([InterlockMiddleware(
        policy=Policy("langchain", engine=engine, session_id=session()))])
    assert RAN == ["0", "1", "2"] * 2
    assert governed == bare
