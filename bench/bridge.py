"""The bridge round trip, from process start to answer, as a ratio to a bare Python start.

Each sample runs ``python -I -m interlock.bridge claude`` (what ``bridge install``
writes) with a Claude Code PreToolUse payload on stdin, waits for its answer
as Claude Code does, and, right before or after it (alternating), a bare
``python -I -c pass``: the floor no Python bridge can beat. Pairing the two
cancels the machine's load at that moment; the figure is the median of the
per-pair ratios, with their spread (10th to 90th percentile).

- ``server_up``: the project's bridge server is running (started by an
  earlier call, interlock.hosts.bridge._autostart); target <= 2x.
- ``first_call``: no server yet (a fresh runtime folder per sample), so the
  call loads the hooks and answers in process, then starts the server for the
  calls after it without waiting for it; target <= 4x. The server each sample
  started is stopped before the next pair.
- ``in_process``: ``INTERLOCK_BRIDGE_AUTOSTART=0``, no server at all: the
  call loads the hooks itself (what every call cost before the server).
- ``installed_line``: the whole ``/bin/sh -c`` guard line, server up.
- ``loading_floor``: ``python -I -c "from interlock import Engine, block"``,
  what any call that loads the hooks must import (the engine, and the
  import line of the hooks themselves); no first call can be below it.

The project has 3 Python hooks (block ``rm -rf``, an audit no-op, a context
note). Run: ``python bench/bridge.py``; the last line is JSON.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report

RUNS = 40
FIRST_RUNS = 8
PAYLOAD = json.dumps({
    "session_id": "abc123", "cwd": "/tmp", "hook_event_name": "PreToolUse",
    "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "tool_use_id": "t1"}).encode()

HANDLERS = {
    "no_rm.py": "from interlock import block\n\ndef handle(e):\n"
                "    return block('destructive') if 'rm -rf' in e.args.get('command', '') "
                "else None\n",
    "audit.py": "def handle(e):\n    return None\n",
    "note.py": "from interlock import context\n\ndef handle(e):\n    return context('checked')\n",
}


def project() -> tuple[Path, dict[str, str]]:
    """A project with the 3 hooks, a private home and state dir, and no INTERLOCK_SOCKET."""
    root = Path(tempfile.mkdtemp(prefix="il-bench-")).resolve()
    cfg = root / ".interlock"
    cfg.mkdir()
    hooks = []
    for name, text in HANDLERS.items():
        (cfg / name).write_text(text)
        hooks.append(f'[[hooks]]\nname = "{name[:-3]}"\nevents = ["before_tool_call"]\n'
                     f'handler = "{name}"\n')
    (cfg / "config.toml").write_text("\n".join(hooks))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("INTERLOCK_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(INTERLOCK_HOME=tempfile.mkdtemp(prefix="il-home-"), INTERLOCK_ACCEPT_HOOKS="1",
               XDG_RUNTIME_DIR=tempfile.mkdtemp(prefix="il-run-", dir="/tmp"))
    return root, env


def run(argv: list[str], env: dict[str, str], stdin: bytes) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=env)
    return time.perf_counter() - t0, proc.stdout.decode()


def pairs(argv: list[str], env: dict[str, str], runs: int,
          before: Any = None, expect: str = "destructive") -> tuple[list[float], list[float]]:
    """``runs`` (floor, bridge) pairs, alternating which goes first; ``before(i)``
    prepares each bridge call (and returns the env it runs with)."""
    floor, bridge = [], []
    for i in range(runs):
        call_env = before(i) if before is not None else env
        bare = [sys.executable, "-I", "-c", "pass"]
        if i % 2:
            f, _ = run(bare, env, b"")
            b, out = run(argv, call_env, PAYLOAD)
        else:
            b, out = run(argv, call_env, PAYLOAD)
            f, _ = run(bare, env, b"")
        assert expect in out, out  # the policy's answer, not a failed-closed deny
        floor.append(f)
        bridge.append(b)
    return floor, bridge


def summary(name: str, floor: list[float], bridge: list[float]) -> dict[str, float]:
    ratios = sorted(b / f for f, b in zip(floor, bridge, strict=True))
    n = len(ratios)
    figures = {"ratio_median": round(statistics.median(ratios), 2),
               "ratio_p10": round(ratios[max(0, int(n * 0.1))], 2),
               "ratio_p90": round(ratios[min(n - 1, int(n * 0.9))], 2),
               "bridge_median_ms": round(statistics.median(bridge) * 1000, 2),
               "floor_median_ms": round(statistics.median(floor) * 1000, 2)}
    print(f"{name:<16} {figures['ratio_median']:5.2f}x (p10 {figures['ratio_p10']:.2f}, "
          f"p90 {figures['ratio_p90']:.2f})   bridge {figures['bridge_median_ms']:7.2f} ms   "
          f"python -c pass {figures['floor_median_ms']:6.2f} ms", flush=True)
    return figures


def stop_servers(runtime_dirs: list[str]) -> None:
    """SIGTERM the bridge servers whose sockets live in ``runtime_dirs`` (by pid)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "interlock.hosts.bridge._daemon" in cmd and any(d in cmd for d in runtime_dirs):
            os.kill(int(pid), signal.SIGTERM)


def main() -> None:
    root, env = project()
    from interlock.hosts.bridge.install import command_for

    bridge = [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--project", str(root)]
    installed = ["/bin/sh", "-c", command_for("claude", root, 20, "PreToolUse")]
    runtime_dirs = [env["XDG_RUNTIME_DIR"]]
    figures: dict[str, Any] = {}
    try:
        first_t, out = run(bridge, env, PAYLOAD)  # starts the server; also writes bytecode
        assert "destructive" in out, out
        figures["server_up"] = summary("server up", *pairs(bridge, env, RUNS))
        figures["installed_line"] = summary("installed line", *pairs(installed, env, RUNS))

        def fresh(i: int) -> dict[str, str]:
            stop_servers(runtime_dirs[1:])  # the last sample's, still loading: not in this pair
            runtime = tempfile.mkdtemp(prefix="il-run-", dir="/tmp")
            runtime_dirs.append(runtime)
            return {**env, "XDG_RUNTIME_DIR": runtime}

        figures["first_call"] = summary("first call", *pairs(bridge, env, FIRST_RUNS, fresh))
        local = {**env, "INTERLOCK_BRIDGE_AUTOSTART": "0",
                 "XDG_RUNTIME_DIR": tempfile.mkdtemp(prefix="il-run-", dir="/tmp")}
        figures["in_process"] = summary("in process", *pairs(bridge, local, FIRST_RUNS))
        # What a call that loads the hooks cannot avoid: the engine (asyncio,
        # msgspec) and the hooks' own `from interlock import block`. A first
        # call can only be as fast as this, plus reading the config.
        loading = [sys.executable, "-I", "-c",
                   "from interlock import Engine, block; print('loaded')"]
        figures["loading_floor"] = summary("loading floor", *pairs(loading, env, RUNS,
                                                                  expect="loaded"))
    finally:
        stop_servers(runtime_dirs)
    figures["very_first_call_ms"] = round(first_t * 1000, 2)
    figures["targets"] = {"server_up": 2.0, "first_call": 4.0}
    figures["server_up_meets_target"] = figures["server_up"]["ratio_median"] <= 2.0
    figures["first_call_meets_target"] = figures["first_call"]["ratio_median"] <= 4.0
    print(f"very first call (cold caches, bytecode written): {figures['very_first_call_ms']} ms")
    report(figures)


if __name__ == "__main__":
    main()
