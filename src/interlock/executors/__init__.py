"""Executors: how out-of-process and model-backed hooks run: ``command`` (a
process per call), ``worker`` (one long-lived process per hook speaking JSON
lines), ``http`` and ``prompt``.

Each satisfies ``interlock.engine.hooks.Executor``: an async callable taking an
``Invocation`` and returning a decision, ``None``, or raising ``HookFailure``.
"""

from interlock.executors._process import Completed
from interlock.executors.command import CommandExecutor
from interlock.executors.worker import WorkerExecutor

__all__ = ["CommandExecutor", "Completed", "WorkerExecutor"]
