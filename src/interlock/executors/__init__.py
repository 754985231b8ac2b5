"""Executors: how out-of-process and model-backed hooks run: ``command`` (a
process per call), ``worker`` (one long-lived process per hook speaking JSON
lines), ``http`` and ``prompt``.

Each satisfies ``interlock.engine.hooks.Executor``: an async callable taking an
``Invocation`` and returning a decision, ``None``, or raising ``HookFailure``.

Names load on first use (PEP 562): the bridges read ``executors.toolnames`` on
every hook call and must not pay for asyncio and the process executors.
"""

from interlock.engine import lazy as _lazy

_TYPE_CHECKING = False
if _TYPE_CHECKING:
    from interlock.executors._process import Completed
    from interlock.executors.command import CommandExecutor
    from interlock.executors.worker import WorkerExecutor

_LAZY = {"Completed": "interlock.executors._process",
         "CommandExecutor": "interlock.executors.command",
         "WorkerExecutor": "interlock.executors.worker"}


def __getattr__(name: str) -> object:
    return _lazy.attribute(globals(), _LAZY, name)


__all__ = ["CommandExecutor", "Completed", "WorkerExecutor"]
