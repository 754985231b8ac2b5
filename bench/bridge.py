"""The bridge round trip, from process start to answer, with and without `serve`.

Each run starts ``python -I -m interlock.bridge claude`` (what ``bridge install``
writes, also timed inside its ``sh`` wrapper) with a Claude Code
PreToolUse payload on stdin and waits for its answer, as Claude Code does.
With a server, the bridge posts the raw payload over the Unix socket; without
one it loads the hooks in process (``interlock.config.registry.open_engine``; when
this build has no registry, a stand-in that builds the same 3-hook engine is
injected via ``sitecustomize``, and the figure says so). ``python -c pass``
is the floor no Python bridge can beat.

Target: median <= 30 ms with the server.
Run: ``python bench/bridge.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report

RUNS = 40
PAYLOAD = json.dumps({
    "session_id": "abc123", "cwd": "/tmp", "hook_event_name": "PreToolUse",
    "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "tool_use_id": "t1"}).encode()

POLICY = textwrap.dedent('''
    from interlock import Engine, block, context

    def build():
        engine = Engine()
        engine.on("before_tool_call", lambda e: block("destructive")
                  if "rm -rf" in e.args.get("command", "") else None, name="no-rm")
        engine.on("before_tool_call", lambda e: None, name="audit")
        engine.on("before_tool_call", lambda e: context("checked"), name="note")
        return engine
''')


SERVER = textwrap.dedent('''
    import sys
    from pathlib import Path
    import bench_policy
    from interlock.hosts.server.app import create_app
    from interlock.hosts.server.auth import TokenStore
    from interlock.hosts.server.listen import Serving

    root, sock = Path(sys.argv[1]), Path(sys.argv[2])
    app = create_app(bench_policy.build(), project_root=root, tokens=TokenStore(),
                     socket_path=sock)
    serving = Serving(app, socket_path=sock, tcp=False)
    with serving.running():
        print("ready", flush=True)
        sys.stdin.read()
''')


HANDLERS = {
    "no_rm.py": "from interlock import block\n\ndef handle(e):\n"
                "    return block('destructive') if 'rm -rf' in e.args.get('command', '') "
                "else None\n",
    "audit.py": "def handle(e):\n    return None\n",
    "note.py": "from interlock import context\n\ndef handle(e):\n    return context('checked')\n",
}


def configured(root: Path, env: dict[str, str]) -> dict[str, str]:
    """The same 3 hooks as project config (Python handlers), with a private home and
    state dir (the store the bridge records into lives there)."""
    cfg = root / ".interlock"
    cfg.mkdir(exist_ok=True)
    hooks = []
    for name, text in HANDLERS.items():
        (cfg / name).write_text(text)
        hooks.append(f'[[hooks]]\nname = "{name[:-3]}"\nevents = ["before_tool_call"]\n'
                     f'handler = "{name}"\n')
    (cfg / "config.toml").write_text("\n".join(hooks))
    home = Path(tempfile.mkdtemp(prefix="il-home-"))
    local = {**env, "INTERLOCK_HOME": str(home), "INTERLOCK_ACCEPT_HOOKS": "1"}
    for name in ("INTERLOCK_STATE_DIR", "INTERLOCK_STORE"):
        local.pop(name, None)
    return local


def timed(argv: list[str], env: dict[str, str], stdin: bytes) -> tuple[list[float], str]:
    subprocess.run(argv, input=stdin, capture_output=True, env=env)  # warm: writes bytecode
    samples = []
    out = ""
    for _ in range(RUNS):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, input=stdin, capture_output=True, env=env)
        samples.append((time.perf_counter() - t0) * 1000)
        out = proc.stdout.decode()
    return samples, out


def summary(name: str, samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    figures = {"median_ms": round(statistics.median(ordered), 2),
               "p90_ms": round(ordered[int(len(ordered) * 0.9) - 1], 2),
               "min_ms": round(ordered[0], 2)}
    print(f"{name:<34} median {figures['median_ms']:6.2f} ms   p90 {figures['p90_ms']:6.2f} ms"
          f"   min {figures['min_ms']:6.2f} ms", flush=True)
    return figures


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="il-bench-")).resolve()
    sock = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "run" / "serve.sock"
    env = {**os.environ, "INTERLOCK_SOCKET": str(sock)}
    # Installed packages run from cached bytecode; with PYTHONDONTWRITEBYTECODE
    # set (as in some CI shells) every bridge would recompile its modules.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # What `bridge install` writes; `interlock bridge claude` also loads interlock.hosts.cli.
    from interlock.hosts.bridge.install import command_for

    bridge = [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--project", str(root)]
    installed = ["/bin/sh", "-c", command_for("claude", root, 20, "PreToolUse")]
    via_cli = [sys.executable, "-m", "interlock", "bridge", "claude", "--project", str(root)]
    figures: dict[str, Any] = {}

    floor, _ = timed([sys.executable, "-c", "pass"], env, b"")
    figures["python_startup"] = summary("python -c pass (floor)", floor)

    # The server runs in its own process, as `interlock serve` does: in this
    # one it would share a GIL with the benchmark's own subprocess handling.
    shim = Path(tempfile.mkdtemp(prefix="il-shim-"))
    (shim / "bench_policy.py").write_text(POLICY)
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(root), str(sock)],
                              env={**env, "PYTHONPATH": str(shim)}, stdout=subprocess.PIPE,
                              # The server runs until its stdin closes: with an inherited
                              # stdin already at EOF it stopped at once, and every "with
                              # server" run silently fell back to in process.
                              stdin=subprocess.PIPE)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == b"ready"
        samples, out = timed(bridge, env, PAYLOAD)
        assert "destructive" in out, out  # the policy's answer, not a failed-closed deny
        figures["with_server"] = summary("bridge claude, serve running", samples)
        samples, out = timed(installed, env, PAYLOAD)
        assert "destructive" in out, out
        figures["with_server_installed_line"] = summary("installed line (sh), serve up", samples)
        samples, out = timed(via_cli, env, PAYLOAD)
        assert "destructive" in out, out
        figures["with_server_via_cli"] = summary("interlock bridge claude, serve up", samples)
    finally:
        server.terminate()
        server.wait(10)

    try:
        import interlock.config.registry  # type: ignore[import-not-found]  # noqa: F401
        stand_in = False
        local_env = configured(root, env)
    except ImportError:
        stand_in = True
        (shim / "sitecustomize.py").write_text(textwrap.dedent('''
            import sys, types
            def _open_engine(root):
                import bench_policy
                return bench_policy.build()
            _mod = types.ModuleType("interlock.config.registry")
            _mod.open_engine = _open_engine
            sys.modules["interlock.config.registry"] = _mod
        '''))
        local_env = {**env, "PYTHONPATH": str(shim)}
    samples, out = timed(bridge, local_env, PAYLOAD)
    assert "destructive" in out, out
    assert '"deny"' in out, out
    label = "bridge claude, in process" + (" (stand-in)" if stand_in else "")
    figures["in_process"] = summary(label, samples)
    figures["in_process_stand_in_registry"] = stand_in
    median = figures["with_server"]["median_ms"]
    figures["target_with_server_ms"] = 30
    figures["with_server_meets_target"] = median <= 30
    figures["with_server_over_floor_ms"] = round(median - figures["python_startup"]["median_ms"],
                                                 2)
    print(f"with server: {median} ms median (target <= 30 ms); "
          f"{figures['with_server_over_floor_ms']} ms above bare Python startup")
    report(figures)


if __name__ == "__main__":
    main()
