"""More of what a running host must notice: a project extension edited after its
approval (in a running `serve`), an administrator's managed hook added while
`serve` runs, and a revocation during a running `interlock run`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _host_world import LIVE_BOUND, World, until

EXT = textwrap.dedent("""\
    def register(ctx):
        from interlock import block

        def guard(event):
            if "curl" in event.args.get("command", ""):
                return block("VERSION: no curl")

        ctx.on("before_tool_call", guard, name="guard")
    """)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_a_project_extension_edited_in_a_running_serve_fails_closed(world: World) -> None:
    folder = world.root / ".interlock" / "extensions" / "net"
    world.write(folder / "extension.toml", 'name = "net"\nguards = ["before_tool_call"]\n')
    world.write(folder / "extension.py", EXT.replace("VERSION", "v1"))
    world.ok("ext", "approve", "net", "--yes")
    with world.serve() as server:
        assert server.decide("curl x") == ("block", "v1: no curl")
        before = server.decide("ls")
        assert before[0] != "block"
        # The agent (or a pull) rewrites the approved extension to let curl through.
        world.write(folder / "extension.py", EXT.replace("VERSION", "v2").replace(
            '"curl" in', '"never" in'))
        (decision, reason), took = until(
            lambda: server.decide("ls") if server.decide("ls") != before else None)
        assert took <= LIVE_BOUND
        # Its content no longer matches its approval: what it guards blocks.
        assert decision == "block"
        assert "net." in reason
        assert server.decide("curl x")[0] == "block"
        status = {e["name"]: e for e in server.status()["extensions"]}
        assert status["net"]["status"] == "changed"
        # Approved again in another terminal: the new code runs.
        world.ok("ext", "approve", "net", "--yes")
        _, took = until(lambda: server.decide("ls")[0] != "block")
        assert took <= LIVE_BOUND
        assert server.decide("curl x")[0] != "block"  # v2 lets it through, as approved


def test_a_managed_hook_added_while_serve_runs_applies(world: World) -> None:
    world.pinned_outside()
    world.ok("hooks", "approve", "--all")
    world.managed.mkdir()
    with world.serve() as server:
        assert server.decide("git push --force")[0] != "block"
        world.write(world.managed / "no_force.py",
                    "from interlock import block\n\ndef handle(event):\n"
                    "    if '--force' in event.args.get('command', ''):\n"
                    "        return block('managed: no force push')\n")
        world.write(world.managed / "config.toml",
                    '[[hooks]]\nname = "no-force"\nevents = ["before_tool_call"]\n'
                    'handler = "no_force.py"\n')
        _, took = until(lambda: server.decide("git push --force")[0] == "block")
        assert took <= LIVE_BOUND
        assert server.decide("git push --force") == ("block", "managed: no force push")


WATCH = textwrap.dedent("""\
    import json, os

    def handle(event):
        with open(os.environ["CHANGES_LOG"], "a") as out:
            out.write(json.dumps({"pid": os.getpid(), "path": event.path}) + "\\n")
    """)


def test_a_revocation_during_a_running_run_applies_to_its_next_call(world: World) -> None:
    world.pinned_outside()
    world.ok("hooks", "approve", "--all")
    log = world.tmp / "changes.log"
    world.env["CHANGES_LOG"] = str(log)
    world.write(world.home / "watch.py", WATCH)
    world.write(world.home / "config.toml", '[[hooks]]\nname = "watch"\n'
                                            'events = ["config_change"]\nhandler = "watch.py"\n')
    started, go = world.tmp / "started", world.tmp / "go"
    # The first call waits (bounded) for the test's go; the second comes after it.
    wait = (f"touch {started}; i=0; while [ ! -f {go} ] && [ $i -lt 600 ]; "
            "do sleep 0.05; i=$((i+1)); done")
    script = world.write(world.tmp / "script.yaml", textwrap.dedent(f"""\
        - tool_calls:
            - {{name: terminal, args: {{command: {json.dumps(wait)}}}}}
        - tool_calls:
            - {{name: terminal, args: {{command: "ls"}}}}
        - text: finished
        """))
    export = world.tmp / "t.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "interlock", "run", "--model",
                             f"scripted:{script}", "--export", str(export), "go"],
                            cwd=world.root / "src", env=world.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        until(started.exists, deadline=60)
        world.ok("hooks", "revoke", "guard")

        def run_reloaded() -> bool:
            lines = log.read_text().splitlines() if log.exists() else []
            return any(json.loads(line)["pid"] == proc.pid for line in lines)

        # The running `run` fired config_change itself: its watcher saw the revocation.
        _, took = until(run_reloaded)
        assert took <= LIVE_BOUND + 1.0
        go.touch()
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    results = [str(r.get("content")) for r in map(json.loads, export.read_text().splitlines())
               if r.get("role") == "tool"]
    assert '"exit_code": 0' in results[0]
    assert "project:guard" in results[1]
    assert "unapproved" in results[1]
