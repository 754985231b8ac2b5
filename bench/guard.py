"""How long the shell-parsing policies take per command.

The destructive-command guard and the path sandbox parse each terminal
command with tree-sitter-bash; this measures what that costs per check (cold: parse
cache cleared each time; cached: the second hook on the same command), next
to a naive substring scan (what a parser replaces) as the anchor.

    .venv/bin/python bench/guard.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import best_ns, report
from interlock.policies.destructive import check
from interlock.policies.sandbox import Sandbox
from interlock.policies.shell import _parse_cached

COMMANDS = {
    "simple": "ls -la src",
    "chain": "cd build && make -j4 && ./run_tests --fast || echo failed",
    "nested": "bash -c \"eval 'X=/; rm -rf ./out/$X'\"",
    "heredoc": "psql <<SQL\nSELECT * FROM users WHERE id = 1;\nSQL",
}


def naive(command: str) -> bool:
    return "rm -rf /" in command or "DROP TABLE" in command


def main() -> None:
    figures: dict[str, float] = {}
    sandbox = Sandbox.from_options({"allow": ["/tmp"]}, home="/home/bench")
    def cold(c: str) -> None:
        _parse_cached.cache_clear()
        check(c, home="/home/bench", cwd="/tmp")

    for name, command in COMMANDS.items():
        cold_ns = best_ns(lambda n, c=command: [cold(c) for _ in range(n)], 300)
        guard_ns = best_ns(lambda n, c=command: [check(c, home="/home/bench", cwd="/tmp")
                                                  for _ in range(n)], 300)
        sandbox_ns = best_ns(lambda n, c=command: [sandbox.check_command(c, "/tmp")
                                                    for _ in range(n)], 300)
        naive_ns = best_ns(lambda n, c=command: [naive(c) for _ in range(n)], 20000)
        figures[f"guard_{name}_cold_us"] = round(cold_ns / 1000, 1)
        figures[f"guard_{name}_us"] = round(guard_ns / 1000, 1)
        figures[f"sandbox_{name}_us"] = round(sandbox_ns / 1000, 1)
        figures[f"guard_{name}_cold_vs_substring"] = round(cold_ns / naive_ns, 1)
        print(f"{name:8} guard cold {cold_ns / 1000:7.1f} us  cached {guard_ns / 1000:6.1f} us"
              f"   sandbox {sandbox_ns / 1000:7.1f} us   substring {naive_ns:4.0f} ns",
              flush=True)
    report(figures)


if __name__ == "__main__":
    main()
