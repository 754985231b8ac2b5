"""How long the destructive-command guard and the path sandbox take per call.

Both bundled hooks are called through their real ``handle()`` on a
``before_tool_call`` event, over every command of the guard's case table
(tests/data/guard_cases.toml) plus long scripts up to 4 KB:

- cold: the shell parser's cache cleared before every call (what a new
  command costs, parse included);
- cached: the same command again (the guard and the sandbox parse once per
  command between them).

It reports p50 and p99 of each, against the targets of docs/guard.md
(p99 <= 2 ms cold, <= 50 us cached).

A peer is measured in the same run when it is installed: claude-safety-guard
(PyPI), a published Claude Code PreToolUse guard, spawned once per call as
Claude Code runs it (``claude-safety-guard hook``, the event as JSON on stdin).
Install it in any environment and put it on PATH, or point
``INTERLOCK_BENCH_PEER`` at its executable. With ``--table`` the peer also
judges the whole case table, for a comparison of what each blocks.

    .venv/bin/python bench/guard.py [--table]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _common import report
from interlock.bundled import load_handler
from interlock.events import BeforeToolCall
from interlock.policies import destructive
from interlock.shell.analyse import _parse_cached

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CWD = str(ROOT)
PEER = "claude-safety-guard"
PEER_PACKAGE = "claude-safety-guard (PyPI)"


def table() -> list[tuple[str, str]]:
    """(expect, command) of every case of the guard's table."""
    data = tomllib.loads((DATA / "guard_cases.toml").read_text())
    return [(g["expect"], c.replace("{data}", str(DATA)))
            for g in data["group"] for c in g["commands"]]


def long_scripts() -> list[str]:
    """Scripts of 1-4 KB: a long && chain, a heredoc, a loop-heavy build script."""
    chain = " && ".join(f"cd pkg{i} && make -j2 test && cd .." for i in range(60))[:4000]
    heredoc = "cat > notes.md <<'EOF'\n" + ("rm -rf / is what we never run\n" * 120)[:3900] \
        + "EOF"
    script = "\n".join(
        f'for f in src/mod{i}/*.py; do ruff check "$f" || echo "lint $f"; done; '
        f'x{i}=$(git rev-parse HEAD); [ -n "$x{i}" ] && echo ok'
        for i in range(30))[:4000]
    return [chain, heredoc, script]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return p50, p99


def time_handle(handle: Any, events: list[BeforeToolCall], *, cold: bool,
                rounds: int) -> tuple[list[list[float]], list[list[float]]]:
    """Per-call wall-clock and CPU times in microseconds: ``rounds`` samples per event."""
    out: list[list[float]] = [[] for _ in events]
    cpu: list[list[float]] = [[] for _ in events]
    for _ in range(rounds):
        for i, event in enumerate(events):
            if cold:
                _parse_cached.cache_clear()
                destructive._decisions.clear()
            else:
                handle(event)  # the first call parses; the timed one is cached
            c0 = time.thread_time_ns()
            t0 = time.perf_counter_ns()
            handle(event)
            out[i].append((time.perf_counter_ns() - t0) / 1000)
            cpu[i].append((time.thread_time_ns() - c0) / 1000)
    return out, cpu


def peer_path() -> str | None:
    return os.environ.get("INTERLOCK_BENCH_PEER") or shutil.which(PEER)


def peer_call(exe: str, command: str) -> bool:
    """One spawn of the peer as a Claude Code PreToolUse hook; True when it denies."""
    envelope = {"session_id": "bench", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": command}, "cwd": CWD}
    env = {**os.environ, "HOME": "/home/alice"}
    proc = subprocess.run([exe, "hook"], input=json.dumps(envelope), capture_output=True,
                          text=True, timeout=30, check=False, env=env)
    if proc.returncode == 2:
        return True
    try:
        out = json.loads(proc.stdout or "{}")
    except ValueError:
        return False
    decision = (out.get("hookSpecificOutput") or {}).get("permissionDecision")
    return decision == "deny" or out.get("decision") == "block"


def main() -> None:
    with_table = "--table" in sys.argv
    guard = load_handler("destructive-guard")
    guard.configure({"home": "/home/bench"})
    sandbox = load_handler("path-sandbox")
    sandbox.configure({"home": "/home/bench"})
    cases = table()
    commands = [c for _e, c in cases] + long_scripts()
    events = [BeforeToolCall(tool_name="terminal", args={"command": c}, cwd=CWD)
              for c in commands]
    longest = max(len(c.encode()) for c in commands)
    figures: dict[str, Any] = {"commands": len(commands), "longest_bytes": longest}
    print(f"{len(commands)} commands (the case table and long scripts, up to {longest} B), "
          "each through the hook's handle()", flush=True)
    load = os.getloadavg()[0]
    figures["load_average"] = round(load, 2)
    print(f"load average {load:.2f} on {os.cpu_count()} CPUs. 'wall': every sample of "
          "wall-clock time; 'cpu': each command's best of 5 in CPU time (what the code "
          "costs, without the waits of a shared machine)", flush=True)
    for name, hook in (("guard", guard.handle), ("sandbox", sandbox.handle)):
        for mode, cold in (("cold", True), ("cached", False)):
            wall, cpu = time_handle(hook, events, cold=cold, rounds=5)
            p50, p99 = percentiles([t for per in wall for t in per])
            best = [min(per) for per in cpu]
            b50, b99 = percentiles(best)
            worst = max(range(len(best)), key=best.__getitem__)
            figures[f"{name}_{mode}_wall_p50_us"] = round(p50, 1)
            figures[f"{name}_{mode}_wall_p99_us"] = round(p99, 1)
            figures[f"{name}_{mode}_cpu_p50_us"] = round(b50, 1)
            figures[f"{name}_{mode}_cpu_p99_us"] = round(b99, 1)
            figures[f"{name}_{mode}_cpu_max_us"] = round(best[worst], 1)
            print(f"{name:8} {mode:6}  wall p50 {p50:8.1f} us  p99 {p99:8.1f} us   "
                  f"cpu p50 {b50:8.1f} us  p99 {b99:8.1f} us  max {best[worst]:8.1f} us "
                  f"({len(commands[worst].encode())} B)", flush=True)
    figures["guard_cold_cpu_p99_within_2ms"] = figures["guard_cold_cpu_p99_us"] <= 2000
    figures["guard_cached_cpu_p99_within_50us"] = figures["guard_cached_cpu_p99_us"] <= 50

    exe = peer_path()
    if exe is None:
        print(f"peer     not installed: {PEER_PACKAGE} is the peer this bench runs; "
              f"install it (pip install {PEER}) to measure it. No figure is invented.",
              flush=True)
        figures["peer"] = None
    else:
        sample = commands[:: max(1, len(commands) // 60)]
        times = []
        for command in sample:
            t0 = time.perf_counter_ns()
            peer_call(exe, command)
            times.append((time.perf_counter_ns() - t0) / 1000)
        p50, p99 = percentiles(times)
        figures["peer"] = PEER_PACKAGE
        figures["peer_spawned_p50_us"] = round(p50, 1)
        figures["peer_spawned_p99_us"] = round(p99, 1)
        print(f"peer     {PEER} hook, spawned per call ({len(sample)} commands): "
              f"p50 {p50:8.1f} us   p99 {p99:8.1f} us", flush=True)
        if with_table:
            figures.update(compare(exe, cases, guard))
    report(figures)


def compare(exe: str, cases: list[tuple[str, str]], guard: Any) -> dict[str, Any]:
    """What each guard blocks of the case table, where the table is written to run
    (HOME /home/alice, in /home/alice/project, not a git checkout)."""
    guard.configure({"home": "/home/alice"})
    counts = {"guard": [0, 0], "peer": [0, 0]}  # [dangerous blocked, benign blocked]
    dangerous = sum(1 for e, _c in cases if e == "block")
    benign = len(cases) - dangerous
    for expect, command in cases:
        event = BeforeToolCall(tool_name="terminal", args={"command": command},
                               cwd="/home/alice/project")
        ours = guard.handle(event) is not None
        theirs = peer_call(exe, command)
        slot = 0 if expect == "block" else 1
        counts["guard"][slot] += ours
        counts["peer"][slot] += theirs
    for who, (hit, false) in counts.items():
        print(f"{who:8} blocks {hit}/{dangerous} dangerous, {false}/{benign} benign",
              flush=True)
    return {"table_dangerous": dangerous, "table_benign": benign,
            "guard_blocked_dangerous": counts["guard"][0],
            "guard_blocked_benign": counts["guard"][1],
            "peer_blocked_dangerous": counts["peer"][0],
            "peer_blocked_benign": counts["peer"][1]}


if __name__ == "__main__":
    main()
