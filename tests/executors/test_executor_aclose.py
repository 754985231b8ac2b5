"""Every executor can be closed with ``await executor.aclose()``: no getattr probing."""

from __future__ import annotations

import asyncio

from interlock.engine.decisions import Decision
from interlock.engine.hooks import Executor, Invocation
from interlock.reliability import Policy, wrap


class _Bare(Executor):
    async def __call__(self, invocation: Invocation) -> Decision | None:
        return None


class _Pool(Executor):
    def __init__(self) -> None:
        self.closed = 0

    async def __call__(self, invocation: Invocation) -> Decision | None:
        return None

    async def aclose(self) -> None:
        self.closed += 1


def test_an_executor_with_nothing_to_release_closes_as_a_no_op() -> None:
    assert asyncio.run(_Bare().aclose()) is None


def test_closing_the_reliability_wrapper_closes_what_it_wraps() -> None:
    pool = _Pool()
    wrapped = wrap(pool, Policy(retries=1))
    asyncio.run(wrapped.aclose())
    assert pool.closed == 1


def test_every_built_in_executor_is_an_executor() -> None:
    from interlock.executors.agent import AgentExecutor
    from interlock.executors.command import CommandExecutor
    from interlock.executors.http import HttpExecutor
    from interlock.executors.prompt import PromptExecutor
    from interlock.executors.worker import WorkerExecutor

    for cls in (AgentExecutor, CommandExecutor, HttpExecutor, PromptExecutor, WorkerExecutor):
        assert Executor in cls.__mro__, cls
        assert asyncio.iscoroutinefunction(cls.aclose), cls
