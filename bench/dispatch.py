"""Cost of one emit with 0, 1 and 5 in-process hooks on before_tool_call.

Measures Interlock's sync facade and async API against Hermes Agent's
``PluginManager.invoke_hook`` (PyPI ``hermes-agent``, bare callbacks) and
pluggy, all in this run. Every emit builds its event, as Hermes's call builds
its kwargs. Run: ``make bench`` (or ``python bench/dispatch.py``).

Targets (issue 2): no hooks <= 0.5x Hermes (sync) and <= 0.6x (async);
5 hooks with a merged outcome <= 1.0x Hermes with 5 bare callbacks (hooks that
return None, as bare callbacks do). Also printed, with no target: five hooks of
which three answer (approve and two contexts), against five Hermes callbacks
of which three return a value.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_ns, report
from interlock import Engine, approve, context
from interlock.events import BeforeToolCall

N = 200_000


def hermes_loop(n_hooks: int, deciding: bool = False):
    try:
        from hermes_cli.plugins import PluginContext, PluginManager, PluginManifest
    except ImportError:
        sys.exit("bench needs the bench extra: pip install -e '.[bench]' (hermes-agent, pluggy)")
    pm = PluginManager()
    ctx = PluginContext(PluginManifest(name="bench"), pm)
    for cb in (hermes_answers() if deciding else [lambda **kwargs: None] * n_hooks):
        ctx.register_hook("pre_tool_call", cb)  # Hermes's public registration call
    invoke = pm.invoke_hook

    def loop(n: int) -> None:
        for _ in range(n):
            invoke("pre_tool_call", tool_name="terminal", args={"command": "ls"},
                   task_id="s1")

    return loop


def pluggy_loop(n_hooks: int):
    import pluggy

    spec = pluggy.HookspecMarker("bench")
    impl = pluggy.HookimplMarker("bench")

    class Spec:
        @spec
        def pre_tool_call(self, tool_name, args, session_id):
            """spec"""

    pm = pluggy.PluginManager("bench")
    pm.add_hookspecs(Spec)
    for i in range(n_hooks):
        class Plugin:
            @impl
            def pre_tool_call(self, tool_name, args, session_id):
                return None

        pm.register(Plugin(), name=f"p{i}")
    call = pm.hook.pre_tool_call

    def loop(n: int) -> None:
        for _ in range(n):
            call(tool_name="terminal", args={"command": "ls"}, session_id="s1")

    return loop


def hermes_answers() -> list:
    """Five Hermes callbacks, three of which answer (Hermes lists the answers)."""
    return [lambda **kw: {"context": "be careful"}, lambda **kw: None,
            lambda **kw: {"action": "approve"}, lambda **kw: None,
            lambda **kw: {"context": "log it"}]


def interlock_answers() -> list:
    """The same five as hooks: approve plus two contexts, merged into one outcome."""
    return [lambda event: context("be careful"), lambda event: None,
            lambda event: approve("ok"), lambda event: None,
            lambda event: context("log it")]


def engine_with(n_hooks: int, deciding: bool = False) -> Engine:
    engine = Engine()
    hooks = interlock_answers() if deciding else [lambda event: None] * n_hooks
    for i, fn in enumerate(hooks):
        engine.on("before_tool_call", fn, name=f"h{i}")
    return engine


def interlock_sync_loop(n_hooks: int, deciding: bool = False):
    emit = engine_with(n_hooks, deciding).emit_sync

    def loop(n: int) -> None:
        for _ in range(n):
            emit(BeforeToolCall(tool_name="terminal", args={"command": "ls"}, session_id="s1"))

    return loop


def interlock_async_loop(n_hooks: int, deciding: bool = False):
    emit = engine_with(n_hooks, deciding).emit

    async def run(n: int) -> None:
        for _ in range(n):
            await emit(BeforeToolCall(tool_name="terminal", args={"command": "ls"},
                                      session_id="s1"))

    def loop(n: int) -> None:
        asyncio.run(run(n))

    return loop


def main() -> None:
    figures: dict[str, float] = {}
    for hooks in (0, 1, 5):
        for name, make in [("hermes", hermes_loop), ("pluggy", pluggy_loop),
                           ("interlock_sync", interlock_sync_loop),
                           ("interlock_async", interlock_async_loop)]:
            ns = best_ns(make(hooks), N)
            figures[f"{name}_{hooks}_ns"] = round(ns, 1)
            print(f"{hooks} hooks  {name:<16} {ns:8.1f} ns/emit", flush=True)
    # Five hooks of which three answer (approve and two contexts): the merge
    # does real work. Hermes's callbacks answer too; it returns them as a list.
    for name, make in [("hermes", hermes_loop), ("interlock_sync", interlock_sync_loop),
                       ("interlock_async", interlock_async_loop)]:
        ns = best_ns(make(5, deciding=True), N)
        figures[f"{name}_5_deciding_ns"] = round(ns, 1)
        print(f"5 deciding {name:<16} {ns:8.1f} ns/emit", flush=True)
    for hooks in (0, 1, 5):
        for ours in ("interlock_sync", "interlock_async"):
            for peer in ("hermes", "pluggy"):
                ratio = figures[f"{ours}_{hooks}_ns"] / figures[f"{peer}_{hooks}_ns"]
                figures[f"ratio_{ours}_vs_{peer}_{hooks}"] = round(ratio, 3)
    for ours in ("interlock_sync", "interlock_async"):
        ratio = figures[f"{ours}_5_deciding_ns"] / figures["hermes_5_deciding_ns"]
        figures[f"ratio_{ours}_vs_hermes_5_deciding"] = round(ratio, 3)
        print(f"5 deciding {ours} / hermes: {ratio:.2f}x (no target)")
    targets = {
        "target_sync_0_hooks_le_0.5x_hermes": figures["ratio_interlock_sync_vs_hermes_0"] <= 0.5,
        "target_async_0_hooks_le_0.6x_hermes":
            figures["ratio_interlock_async_vs_hermes_0"] <= 0.6,
        "target_sync_5_hooks_le_1.0x_hermes": figures["ratio_interlock_sync_vs_hermes_5"] <= 1.0,
        "target_async_5_hooks_le_1.0x_hermes":
            figures["ratio_interlock_async_vs_hermes_5"] <= 1.0,
    }
    for key, met in targets.items():
        print(f"{key}: {'met' if met else 'MISSED'}")
    report({**figures, **targets})


if __name__ == "__main__":
    main()
