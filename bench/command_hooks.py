"""Per-call latency of out-of-process hooks: spawn-per-call sh and Python
scripts against the same logic served by a worker (one long-lived process).

Each hook reads the wire contract v1 request, blocks when the command holds
``rm -rf``, and otherwise has no opinion. Calls go through the real
executors (``CommandExecutor``, ``WorkerExecutor``) from an asyncio loop,
and for the worker also through ``Engine.emit_sync``. Run:
``python bench/command_hooks.py`` (no extra dependencies).

Target: the worker is >= 20x faster than the spawn-per-call
Python script, with p50 <= 1 ms per call.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report
from interlock import Engine, Hook, Verdict
from interlock.engine.hooks import Invocation
from interlock.events import BeforeToolCall
from interlock.executors import CommandExecutor, WorkerExecutor

SH = """#!/bin/sh
payload=$(cat)
case "$payload" in
  *'rm -rf'*) echo '{"decision":"block","reason":"no rm -rf"}' ;;
esac
"""

PY_SPAWN = """import json, sys
request = json.load(sys.stdin)
if "rm -rf" in request["payload"]["args"].get("command", ""):
    print(json.dumps({"decision": "block", "reason": "no rm -rf"}))
"""

PY_WORKER = """from interlock.worker import run

def handle(request):
    if "rm -rf" in request["payload"]["args"].get("command", ""):
        return {"decision": "block", "reason": "no rm -rf"}

run(handle)
"""


def percentiles(samples_ns: list[int]) -> dict[str, float]:
    ms = sorted(s / 1e6 for s in samples_ns)
    return {"p50": statistics.median(ms), "p95": ms[int(len(ms) * 0.95) - 1],
            "mean": statistics.fmean(ms), "n": len(ms)}


async def measure(executor, n: int) -> dict[str, float]:
    hook = Hook(name="guard", events=("before_tool_call",), executor=executor)
    ls = BeforeToolCall(tool_name="terminal", args={"command": "ls"}, session_id="s")
    rm = BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"}, session_id="s")
    blocked = await executor(Invocation(event=rm, hook=hook, invocation_id="check"))
    if blocked is None or blocked.verdict is not Verdict.BLOCK:
        sys.exit(f"{executor!r}: the hook logic is broken (no block on rm -rf)")
    for i in range(min(20, n)):  # warm up (page cache, worker start)
        await executor(Invocation(event=ls, hook=hook, invocation_id=f"w{i}"))
    samples = []
    for i in range(n):
        inv = Invocation(event=ls, hook=hook, invocation_id=str(i))
        t0 = time.perf_counter_ns()
        answer = await executor(inv)
        samples.append(time.perf_counter_ns() - t0)
        assert answer is None
    return percentiles(samples)


def measure_engine(executor: WorkerExecutor, n: int) -> dict[str, float]:
    engine = Engine()
    engine.register(Hook(name="guard", events=("before_tool_call",), executor=executor))
    try:
        for _ in range(50):
            engine.emit_sync(BeforeToolCall(tool_name="terminal", args={"command": "ls"}))
        samples = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            out = engine.emit_sync(BeforeToolCall(tool_name="terminal",
                                                  args={"command": "ls"}, session_id="s"))
            samples.append(time.perf_counter_ns() - t0)
            assert not out.blocked
        return percentiles(samples)
    finally:
        engine.close()


def show(name: str, fig: dict[str, float]) -> None:
    print(f"{name:<28} p50 {fig['p50']:8.3f} ms   p95 {fig['p95']:8.3f} ms   "
          f"mean {fig['mean']:8.3f} ms   (n={fig['n']})", flush=True)


async def main() -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "guard.sh").write_text(SH)
        (d / "guard.py").write_text(PY_SPAWN)
        (d / "worker.py").write_text(PY_WORKER)
        sh = CommandExecutor(f"sh {d / 'guard.sh'}", hook_name="guard", cwd=d)
        py = CommandExecutor([sys.executable, str(d / "guard.py")], hook_name="guard", cwd=d)
        worker = WorkerExecutor([sys.executable, str(d / "worker.py")], hook_name="guard",
                                cwd=d)
        try:
            figs = {}
            figs["sh_spawn"] = await measure(sh, 200)
            show("command, sh per call", figs["sh_spawn"])
            figs["py_spawn"] = await measure(py, 60)
            show("command, python per call", figs["py_spawn"])
            figs["worker"] = await measure(worker, 3000)
            show("worker (executor)", figs["worker"])
            figs["worker_engine"] = await asyncio.to_thread(measure_engine, worker, 2000)
            show("worker (engine.emit_sync)", figs["worker_engine"])
        finally:
            await worker.aclose()
    ratio = figs["py_spawn"]["p50"] / figs["worker"]["p50"]
    ratio_sh = figs["sh_spawn"]["p50"] / figs["worker"]["p50"]
    met = ratio >= 20 and figs["worker"]["p50"] <= 1.0
    print(f"worker vs python spawn: {ratio:.1f}x faster (target >= 20x); "
          f"vs sh spawn: {ratio_sh:.1f}x; worker p50 {figs['worker']['p50']:.3f} ms "
          f"(target <= 1 ms): {'met' if met else 'NOT met'}", flush=True)
    out: dict[str, object] = {f"{k}_{m}_ms": round(v[m], 4) for k, v in figs.items()
                              for m in ("p50", "p95")}
    out.update(worker_vs_py_spawn_x=round(ratio, 1), worker_vs_sh_spawn_x=round(ratio_sh, 1),
               target_met=met)
    return out


if __name__ == "__main__":
    report(asyncio.run(main()))
