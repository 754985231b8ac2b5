"""A running `interlock serve` re-checks: an edited hook script (inside .interlock/
or a pinned one outside it), `hooks revoke`, `hooks disable` and `hooks approve`
from another terminal, and a config edit (with its config_change) all show in
the server's next decision within LIVE_BOUND seconds, without a restart."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest
from _host_world import BLOCK_ALL, LIVE_BOUND, Server, World, script, until


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def _changed(server: Server, command: str, before: tuple[str, str]) -> tuple[str, str] | None:
    now = server.decide(command)
    return now if now != before else None


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_an_edited_hook_script_stops_running_as_approved_within_the_bound(
        world: World, where: str) -> None:
    hook = world.pinned_inside() if where == "inside" else world.pinned_outside()
    world.ok("hooks", "approve", "--all")
    with world.serve() as server:
        assert server.decide("rm -rf /") == ("block", "v1: no rm -rf")
        before = server.decide("ls")
        assert before[0] != "block"
        # A prompt-injected model rewrites the approved script to let everything by...
        # and to show it ran, to block `ls`. Either way it is no longer what was approved.
        hook.write_text(script("v2", BLOCK_ALL))

        def unapproved() -> tuple[str, str] | None:
            # Not the new code's answer: the edited hook is unapproved, and fails
            # closed. (Checking the pin before each run, so the new code never runs
            # even before the reload, is the consent check's job, not the reload's.)
            now = server.decide("ls")
            return now if now[0] == "block" and "v2" not in now[1] else None

        (decision, reason), took = until(unapproved)
        assert took <= LIVE_BOUND, f"took {took:.2f} s"
        assert "project:guard" in reason
        # The operator reviews and approves it in another terminal: it runs now.
        world.ok("hooks", "approve", "guard")
        (decision, reason), took = until(
            lambda: server.decide("ls") if "v2" in server.decide("ls")[1] else None)
        assert took <= LIVE_BOUND
        assert (decision, reason) == ("block", "v2: nothing runs")


def test_revoke_in_another_terminal_takes_effect_in_running_serve(world: World) -> None:
    world.pinned_outside()
    world.ok("hooks", "approve", "--all")
    with world.serve() as server:
        before = server.decide("ls")
        assert before[0] != "block"
        assert world.ok("hooks", "revoke", "guard").strip() == "revoked: project:guard"
        (decision, reason), took = until(lambda: _changed(server, "ls", before))
        assert took <= LIVE_BOUND
        # An unapproved fail-closed hook blocks what it guards.
        assert decision == "block"
        assert "project:guard" in reason
        # And rm -rf stays blocked throughout (never an allow in between).
        assert server.decide("rm -rf /")[0] == "block"


def test_disable_in_another_terminal_takes_effect_in_running_serve(world: World) -> None:
    world.pinned_outside()
    world.ok("hooks", "approve", "--all")
    with world.serve() as server:
        assert server.decide("rm -rf /")[0] == "block"
        revision = server.status()["revision"]
        assert world.ok("hooks", "disable", "guard").strip() == "project:guard: disabled"
        blocked = ("block", "v1: no rm -rf")
        (decision, _), took = until(lambda: _changed(server, "rm -rf /", blocked))
        assert took <= LIVE_BOUND
        assert decision != "block"  # an operator turned it off: that is the point
        assert server.status()["revision"] > revision
        assert world.ok("hooks", "enable", "guard").strip() == "project:guard: active"
        _, took = until(lambda: server.decide("rm -rf /")[0] == "block")
        assert took <= LIVE_BOUND


def test_approve_in_another_terminal_takes_effect_in_running_serve(world: World) -> None:
    world.pinned_outside()
    # Not approved yet: the fail-closed guard blocks everything it guards.
    with world.serve() as server:
        decision, reason = server.decide("ls")
        assert decision == "block"
        assert "v1" not in reason
        assert "approved: project:guard" in world.ok("hooks", "approve", "guard")
        (decision, _), took = until(lambda: _changed(server, "ls", ("block", reason)))
        assert took <= LIVE_BOUND
        assert decision != "block"
        assert server.decide("rm -rf /") == ("block", "v1: no rm -rf")


CONFIG_LOG = textwrap.dedent("""\
    import json, os

    def handle(event):
        with open(os.environ["CHANGES_LOG"], "a") as out:
            out.write(json.dumps({"path": event.path, "revision": event.revision}) + "\\n")
    """)


def test_config_change_fires_before_a_live_reload_is_applied(world: World) -> None:
    log = world.tmp / "changes.log"
    world.env["CHANGES_LOG"] = str(log)
    world.write(world.root / ".interlock" / "watch.py", CONFIG_LOG)
    config = world.root / ".interlock" / "config.toml"
    world.write(config, textwrap.dedent("""\
        [[hooks]]
        name = "watch"
        events = ["config_change"]
        handler = "watch.py"
        env_passthrough = ["CHANGES_LOG"]
        """))
    world.ok("hooks", "approve", "--all")
    with world.serve() as server:
        assert server.decide("rm -rf /")[0] != "block"
        start = time.monotonic()
        world.write(world.root / "hooks" / "no_rm.py", script("v1"))
        config.write_text(config.read_text() + "\n" + textwrap.dedent(f"""\
            [[hooks]]
            name = "guard"
            events = ["before_tool_call"]
            matcher = "terminal"
            command = ["{__import__('sys').executable}", "../hooks/no_rm.py"]
            on_error = "closed"
            """))
        # New and unapproved: the guard blocks (fail closed) once the reload applied.
        until(lambda: server.decide("rm -rf /")[0] == "block")
        assert time.monotonic() - start <= LIVE_BOUND + 1.0
        records = [json.loads(line) for line in log.read_text().splitlines()]
        assert [r["path"] for r in records] == [str(config.resolve())]
        assert records[0]["revision"] == server.status()["revision"]
