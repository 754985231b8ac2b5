"""``interlock.engine.coroutines`` answers what ``inspect.iscoroutinefunction``
answers, with ``inspect`` loaded or not (docs/one-policy.md, Speed)."""

from __future__ import annotations

import functools
import inspect
import subprocess
import sys
from typing import Any

from interlock.engine.coroutines import has_coroutine_flag, iscoroutinefunction
from interlock.engine.hooks import Hook, Mode


async def coro(event: Any) -> None:
    return None


async def agen(event: Any) -> Any:
    yield event


def plain(event: Any) -> None:
    return None


def gen(event: Any) -> Any:
    yield event


class Methods:
    async def acall(self, event: Any) -> None:
        return None

    def call(self, event: Any) -> None:
        return None

    @classmethod
    async def aclass(cls, event: Any) -> None:
        return None

    @staticmethod
    async def astatic(event: Any) -> None:
        return None

    async def __call__(self, event: Any) -> None:
        return None

    partial_async = functools.partialmethod(acall)
    partial_sync = functools.partialmethod(call)


class SyncCallable:
    def __call__(self, event: Any) -> None:
        return None


class FunctionLike:
    """A duck-typed function (as Cython compiles them) around an async def's code."""

    __name__ = "function_like"
    __code__ = coro.__code__
    __defaults__ = None
    __kwdefaults__ = None
    __annotations__: dict[str, Any] = {}

    def __call__(self, event: Any) -> None:
        return None


def _cases() -> list[object]:
    obj = Methods()
    return [coro, agen, plain, gen, obj.acall, obj.call, Methods.aclass, Methods.astatic,
            obj, SyncCallable(), FunctionLike(), functools.partial(coro, 1),
            functools.partial(functools.partial(coro, 1)), functools.partial(plain, 1),
            functools.partial(obj.acall), obj.partial_async, obj.partial_sync,
            Methods.__dict__["partial_async"], lambda e: None, print, len, Methods, None, 3,
            functools.wraps(coro)(lambda e: None), functools.lru_cache(coro)]


def test_the_answer_is_inspects_for_every_kind_of_callable() -> None:
    for case in _cases():
        expected = inspect.iscoroutinefunction(case)
        assert iscoroutinefunction(case) is expected, case
        if not getattr(inspect, "_has_coroutine_mark", lambda f: False)(case):
            assert has_coroutine_flag(case) is expected, case  # the test made without inspect


def test_async_callable_objects_and_partials_run_as_async_hooks() -> None:
    for fn, mode in ((coro, Mode.ASYNC), (functools.partial(coro), Mode.ASYNC),
                     (Methods().acall, Mode.ASYNC), (Methods(), Mode.ASYNC),
                     (plain, Mode.SYNC), (agen, Mode.SYNC), (SyncCallable(), Mode.SYNC)):
        assert Hook(name="h", events=("before_tool_call",), fn=fn).mode is mode, fn


def test_without_inspect_loaded_the_same_answers() -> None:
    """In a process that has not imported inspect, the module's own test decides."""
    code = """
import sys, functools
from interlock.engine.coroutines import iscoroutinefunction
async def a(e): pass
async def g(e): yield e
def s(e): pass
class C:
    async def m(self, e): pass
    async def __call__(self, e): pass
print("inspect" in sys.modules, iscoroutinefunction(a), iscoroutinefunction(g),
      iscoroutinefunction(s), iscoroutinefunction(functools.partial(a)),
      iscoroutinefunction(C().m), iscoroutinefunction(C()),
      iscoroutinefunction(C().__call__))
"""
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True", "False", "False", "True", "True", "False", "True"]
