"""Out-of-process and model-backed executors: each is an async callable taking
an :class:`interlock.Invocation` and returning a decision or None, or raising
:class:`interlock.HookFailure` (the engine's ``Executor`` protocol)."""
