"""How long the CLI takes to start, as ratios to a bare Python start.

Four commands, each a fresh process, in interleaved rounds (bare, --help,
hooks list, hooks test, bare, ...) so that load on the machine hits all of them
alike:

- bare: ``python -c pass`` (the floor every command pays);
- help: ``interlock --help``;
- hooks_list: ``interlock hooks list`` on a project with 10 command hooks;
- hooks_test: ``interlock hooks test before_tool_call --tool terminal`` on the
  same project, its hooks approved: all 10 run (a ``sh`` script each) and none
  blocks, the path of a call every hook lets through.

It prints the median and the spread (p10..p90) of each in ms, and the ratio
of each median to the bare median, against the targets. It also prints each
command's least CPU time (user + system): on a busy machine the wall times
swing with the load, the CPU times much less. The targets:
``--help`` <= 6x a bare start, ``hooks list`` and ``hooks test`` <= 250 ms.

    .venv/bin/python bench/cli.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import report

HOOK = """
[[hooks]]
name = "h{i}"
events = ["before_tool_call"]
matcher = "terminal"
command = "./check.sh"
"""


def _project(root: Path) -> None:
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "config.toml").write_text(
        "".join(HOOK.format(i=i) for i in range(10)))
    script = root / ".interlock" / "check.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    subprocess.run(["git", "init", "-q", str(root)], check=True)


CPU: dict[str, list[float]] = {}


def _time(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall time in ms; the CPU time goes to CPU under the command's argv."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(" ".join(argv), []).append(
        (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    rounds = parser.parse_args().rounds
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        _project(root)
        env = {**os.environ, "INTERLOCK_HOME": str(Path(tmp) / "home"),
               "INTERLOCK_STATE_DIR": str(Path(tmp) / "state"),
               "INTERLOCK_MANAGED": str(Path(tmp) / "managed"), "COLUMNS": "100"}
        cases = {"bare": [py, "-c", "pass"],
                 "help": [py, "-m", "interlock", "--help"],
                 "hooks_list": [py, "-m", "interlock", "hooks", "list"],
                 "hooks_test": [py, "-m", "interlock", "hooks", "test", "before_tool_call",
                                "--tool", "terminal"]}
        subprocess.run([py, "-m", "interlock", "hooks", "approve", "--all"], cwd=root,
                       env=env, stdout=subprocess.DEVNULL, check=True)
        for argv in cases.values():  # warm the file cache and .pyc files
            _time(argv, root, env)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, argv in cases.items():
                samples[name].append(_time(argv, root, env))
    figures: dict[str, float] = {"rounds": rounds}
    bare = statistics.median(samples["bare"])
    for name, values in samples.items():
        deciles = statistics.quantiles(values, n=10)
        median = statistics.median(values)
        figures[f"{name}_ms"] = round(median, 1)
        figures[f"{name}_p10_ms"] = round(deciles[0], 1)
        figures[f"{name}_p90_ms"] = round(deciles[-1], 1)
        figures[f"{name}_x_bare"] = round(median / bare, 2)
        print(f"{name:<11} median {median:7.1f} ms  (p10 {deciles[0]:.1f} .. "
              f"p90 {deciles[-1]:.1f})  {median / bare:5.2f}x bare")
    bare_cpu = min(CPU[" ".join(cases["bare"])])
    for name, argv in cases.items():
        cpu = min(CPU[" ".join(argv)])
        figures[f"{name}_cpu_ms"] = round(cpu, 1)
        print(f"{name:<11} cpu    {cpu:7.1f} ms  (least)  {cpu / bare_cpu:5.2f}x bare")
    met = {name: "met" if figures[f"{name}_ms"] <= 250 else "missed"
           for name in ("hooks_list", "hooks_test")}
    print(f"targets: help <= 6x bare ({'met' if figures['help_x_bare'] <= 6 else 'missed'}), "
          f"hooks list <= 250 ms ({met['hooks_list']}), "
          f"hooks test <= 250 ms ({met['hooks_test']})")
    report(figures)


if __name__ == "__main__":
    main()
