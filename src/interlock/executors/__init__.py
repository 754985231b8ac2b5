"""Executors: how out-of-process and model-backed hooks (command, worker, http,
prompt, ...) run. Each is an async callable taking an
:class:`interlock.Invocation` and returning a decision or None, or raising
:class:`interlock.HookFailure` (the engine's ``Executor`` protocol)."""
