"""Out-of-process executors: ``command`` (a process per call) and ``worker``
(one long-lived process per hook speaking JSON lines).

Both satisfy ``interlock._hooks.Executor``: an async callable taking an
``Invocation`` and returning a decision, ``None``, or raising ``HookFailure``.
"""

from interlock.executors._process import Completed
from interlock.executors.command import CommandExecutor
from interlock.executors.worker import WorkerExecutor

__all__ = ["CommandExecutor", "Completed", "WorkerExecutor"]
