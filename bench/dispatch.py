"""Cost of one emit with 0, 1 and 5 in-process hooks on before_tool_call.

Measures Interlock's sync facade and async API against Hermes Agent's
``PluginManager.invoke_hook`` (PyPI ``hermes-agent``, bare callbacks) and
pluggy, all in this run. Every emit builds its event, as Hermes's call builds
its kwargs. Run: ``make bench`` (or ``python bench/dispatch.py``).

The machine may be busy, so variants are not timed one after another: each
round times every variant once, in a fresh order, and a ratio is taken per
round. The figures are the median ratio and its spread (lowest-highest) over
the rounds; targets read the median. Times are this thread's CPU time, so
time spent descheduled by other processes does not count.

Targets: no hooks <= 0.55x Hermes (sync) and <= 0.6x (async); 1 hook, 5
hooks and 5 hooks of which three answer (approve and two contexts, merged
into one outcome) <= 1.0x Hermes with as many callbacks (sync and async).

Scale rows (no target): 1, 10, 100 and 1,000 hooks with tool matchers (one
in ten matches) and with field matchers, a nested payload (1,000 dicts in the
tool's args), and registering 1,000 hooks.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report
from interlock import Engine, approve, context
from interlock.events import BeforeToolCall

N = 20_000
"""Emits per variant per round."""
ROUNDS = 15

Loop = Callable[[int], Any]


def hermes_loop(n_hooks: int, deciding: bool = False, args: Any = None) -> Loop:
    try:
        from hermes_cli.plugins import PluginContext, PluginManager, PluginManifest
    except ImportError:
        sys.exit("bench needs the bench extra (hermes-agent, pluggy): run it with "
                 "`make bench`, which keeps them in .venv-bench")
    pm = PluginManager()
    ctx = PluginContext(PluginManifest(name="bench"), pm)
    for cb in (hermes_answers() if deciding else [lambda **kwargs: None] * n_hooks):
        ctx.register_hook("pre_tool_call", cb)  # Hermes's public registration call
    invoke = pm.invoke_hook
    if args is not None:
        def nested(n: int) -> None:
            for _ in range(n):
                invoke("pre_tool_call", tool_name="terminal", args=args, task_id="s1")
        return nested

    def loop(n: int) -> None:
        for _ in range(n):
            invoke("pre_tool_call", tool_name="terminal", args={"command": "ls"},
                   task_id="s1")

    return loop


def pluggy_loop(n_hooks: int) -> Loop:
    import pluggy

    spec = pluggy.HookspecMarker("bench")
    impl = pluggy.HookimplMarker("bench")

    class Spec:
        @spec
        def pre_tool_call(self, tool_name, args, session_id):  # type: ignore[no-untyped-def]
            """spec"""

    pm = pluggy.PluginManager("bench")
    pm.add_hookspecs(Spec)
    for i in range(n_hooks):
        class Plugin:
            @impl
            def pre_tool_call(self, tool_name, args, session_id):  # type: ignore[no-untyped-def]
                return None

        pm.register(Plugin(), name=f"p{i}")
    call = pm.hook.pre_tool_call

    def loop(n: int) -> None:
        for _ in range(n):
            call(tool_name="terminal", args={"command": "ls"}, session_id="s1")

    return loop


def hermes_answers() -> list[Callable[..., Any]]:
    """Five Hermes callbacks, three of which answer (Hermes lists the answers)."""
    return [lambda **kw: {"context": "be careful"}, lambda **kw: None,
            lambda **kw: {"action": "approve"}, lambda **kw: None,
            lambda **kw: {"context": "log it"}]


def interlock_answers() -> list[Callable[..., Any]]:
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


def sync_loop(engine: Engine, tool: str = "terminal", args: Any = None) -> Loop:
    emit = engine.emit_sync
    if args is not None:
        def nested(n: int) -> None:
            for _ in range(n):
                emit(BeforeToolCall(tool_name=tool, args=args, session_id="s1"))
        return nested

    def loop(n: int) -> None:
        for _ in range(n):
            emit(BeforeToolCall(tool_name=tool, args={"command": "ls"}, session_id="s1"))

    return loop


def async_loop(engine: Engine) -> Loop:
    emit = engine.emit

    async def run(n: int) -> None:
        for _ in range(n):
            await emit(BeforeToolCall(tool_name="terminal", args={"command": "ls"},
                                      session_id="s1"))

    def loop(n: int) -> None:
        asyncio.run(run(n))

    return loop


def interlock_sync_loop(n_hooks: int, deciding: bool = False) -> Loop:
    return sync_loop(engine_with(n_hooks, deciding))


def interlock_async_loop(n_hooks: int, deciding: bool = False) -> Loop:
    return async_loop(engine_with(n_hooks, deciding))


def rounds(variants: dict[str, tuple[Loop, int]], n_rounds: int = ROUNDS
           ) -> dict[str, list[float]]:
    """ns per call of every variant, once per round, in a fresh order each round.

    ``variants`` maps a name to its loop and how many calls one timing makes.
    """
    for loop, n in variants.values():
        loop(min(n, 1000))  # warm up caches and lazily built plans
    times: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    shuffle = random.Random(1234).shuffle
    for _ in range(n_rounds):
        shuffle(order)
        for name in order:
            loop, n = variants[name]
            t0 = time.thread_time_ns()
            loop(n)
            times[name].append((time.thread_time_ns() - t0) / n)
    return times


def ratio(times: dict[str, list[float]], ours: str, peer: str) -> tuple[float, float, float]:
    """Median, lowest and highest of the per-round ratios ours/peer."""
    per_round = [a / b for a, b in zip(times[ours], times[peer], strict=True)]
    return statistics.median(per_round), min(per_round), max(per_round)


def tool_matched(n_hooks: int) -> Engine:
    """``n_hooks`` hooks, each on one of ten tool names: one in ten matches."""
    engine = Engine()
    for i in range(n_hooks):
        engine.on("before_tool_call", lambda event: None, name=f"t{i}",
                  matcher=f"tool_{i % 10}")
    return engine


def field_matched(n_hooks: int) -> Engine:
    """``n_hooks`` hooks matching the session: every one runs, on a resolved plan."""
    engine = Engine()
    for i in range(n_hooks):
        engine.on("before_tool_call", lambda event: None, name=f"f{i}",
                  matcher={"session_id": "s1" if i % 2 == 0 else "s*"})
    return engine


def registration_s(n_hooks: int) -> float:
    engine = Engine()
    t0 = time.thread_time()
    for i in range(n_hooks):
        engine.on("before_tool_call", lambda event: None, name=f"r{i}")
    return time.thread_time() - t0


def main() -> None:
    figures: dict[str, Any] = {}
    variants: dict[str, tuple[Loop, int]] = {}
    for hooks in (0, 1, 5):
        variants[f"hermes_{hooks}"] = (hermes_loop(hooks), N)
        variants[f"pluggy_{hooks}"] = (pluggy_loop(hooks), N)
        variants[f"interlock_sync_{hooks}"] = (interlock_sync_loop(hooks), N)
        variants[f"interlock_async_{hooks}"] = (interlock_async_loop(hooks), N)
    # Five hooks of which three answer (approve and two contexts): the merge
    # does real work. Hermes's callbacks answer too; it returns them as a list.
    variants["hermes_5_deciding"] = (hermes_loop(5, deciding=True), N)
    variants["interlock_sync_5_deciding"] = (interlock_sync_loop(5, deciding=True), N)
    variants["interlock_async_5_deciding"] = (interlock_async_loop(5, deciding=True), N)
    times = rounds(variants)
    for name, ts in times.items():
        figures[f"{name}_ns"] = round(statistics.median(ts), 1)
    print(f"{'variant':<28} {'median ns/emit':>14}")
    for name, ts in times.items():
        print(f"{name:<28} {statistics.median(ts):14.1f}")
    print(f"\nper-round ratios over {ROUNDS} rounds: median (lowest-highest)")
    rows = [(f"interlock_{api}_{h}", f"{peer}_{h}")
            for h in ("0", "1", "5") for api in ("sync", "async") for peer in ("hermes", "pluggy")]
    rows += [(f"interlock_{api}_5_deciding", "hermes_5_deciding") for api in ("sync", "async")]
    for ours, peer in rows:
        med, lo, hi = ratio(times, ours, peer)
        key = f"ratio_{ours}_vs_{peer}"
        figures[key] = round(med, 3)
        figures[key + "_spread"] = [round(lo, 3), round(hi, 3)]
        print(f"{ours:<28} / {peer:<18} {med:5.2f}x ({lo:.2f}-{hi:.2f})")

    scale_figures(figures)

    targets = {
        "target_sync_0_hooks_le_0.55x_hermes":
            figures["ratio_interlock_sync_0_vs_hermes_0"] <= 0.55,
        "target_async_0_hooks_le_0.6x_hermes":
            figures["ratio_interlock_async_0_vs_hermes_0"] <= 0.6,
    }
    for h in ("1", "5", "5_deciding"):
        for api in ("sync", "async"):
            targets[f"target_{api}_{h}_hooks_le_1.0x_hermes"] = \
                figures[f"ratio_interlock_{api}_{h}_vs_hermes_{h}"] <= 1.0
    print()
    for key, met in targets.items():
        print(f"{key}: {'met' if met else 'MISSED'}")
    report({**figures, **targets})


def scale_figures(figures: dict[str, Any]) -> None:
    """Scale rows: ns per emit against Hermes with as many bare callbacks."""
    print("\nscale rows: median ns/emit, and ratio to Hermes with as many callbacks")
    for hooks in (1, 10, 100, 1000):
        n = max(200, N // max(1, hooks // 5))
        variants = {
            "hermes": (hermes_loop(hooks), n),
            "tool_matchers": (sync_loop(tool_matched(hooks), tool="tool_3"), n),
            "field_matchers": (sync_loop(field_matched(hooks)), n),
        }
        times = rounds(variants, 7)
        for name in ("tool_matchers", "field_matchers"):
            med, lo, hi = ratio(times, name, "hermes")
            ns = statistics.median(times[name])
            figures[f"scale_{name}_{hooks}_ns"] = round(ns, 1)
            figures[f"scale_{name}_{hooks}_vs_hermes"] = round(med, 3)
            print(f"{hooks:>5} hooks {name:<15} {ns:12.1f} ns  {med:7.2f}x ({lo:.2f}-{hi:.2f})")
    nested = {"items": [{"id": i, "name": f"n{i}"} for i in range(1000)]}
    variants = {"hermes": (hermes_loop(1, args=nested), 2000),
                "interlock": (sync_loop(engine_with(1), args=nested), 2000)}
    times = rounds(variants, 7)
    med, lo, hi = ratio(times, "interlock", "hermes")
    ns = statistics.median(times["interlock"])
    figures["scale_nested_1000_dicts_ns"] = round(ns, 1)
    figures["scale_nested_1000_dicts_vs_hermes"] = round(med, 3)
    print(f"nested args (1,000 dicts), 1 hook {ns:12.1f} ns  {med:7.2f}x ({lo:.2f}-{hi:.2f})")
    seconds = min(registration_s(1000) for _ in range(3))
    figures["scale_register_1000_hooks_s"] = round(seconds, 4)
    print(f"registering 1,000 hooks          {seconds * 1e3:12.1f} ms")


if __name__ == "__main__":
    main()
