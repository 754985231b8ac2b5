"""Content-pinned consent: approvals, edits, removals, --accept-hooks, concurrency."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from helpers.cfg import World, world
from interlock import Verdict
from interlock.config.trust import TrustStore
from interlock.engine.errors import ConfigError, FailureMode
from interlock.testing import RecordingSink, fire

__all__ = ["world"]

SCRIPT = """#!/bin/sh
cat >/dev/null
echo '{"decision": "block", "reason": "%s"}'
"""

CONFIG = """
[[hooks]]
name = "guard"
events = ["before_tool_call"]
command = "./guard.sh"
on_error = "%s"
"""


def rm(engine) -> object:
    return fire(engine, "before_tool_call", tool_name="terminal", args={"command": "rm x"})


def command_guard(world: World, reason: str = "v1", on_error: str = "closed") -> None:
    world.write(world.project / "guard.sh", SCRIPT % reason, mode=0o755)
    world.config(world.project, CONFIG % on_error)


def test_unapproved_fail_closed_hook_blocks_until_approved(world: World) -> None:
    command_guard(world)
    sink = RecordingSink()
    reg = world.registry(sink=sink)
    reg.load()
    [entry] = reg.hooks
    assert entry.needs_approval
    assert not entry.approved
    assert entry.state == "blocking (unapproved, fails closed)"
    out = rm(reg.engine)
    assert out.verdict is Verdict.BLOCK
    assert "did not answer (unapproved)" in (out.reason or "")
    assert sink.failures[-1].mode is FailureMode.UNAPPROVED
    assert reg.approve(["guard"]) == ["project:guard"]
    out = rm(reg.engine)
    assert out.verdict is Verdict.BLOCK
    assert out.reason == "v1"  # the script itself answered


def test_unapproved_fail_open_hook_does_not_run(world: World) -> None:
    command_guard(world, on_error="open")
    reg = world.registry()
    reg.load()
    assert reg.hooks[0].hook is None
    assert reg.hooks[0].state == "skipped (unapproved, fails open)"
    assert rm(reg.engine).verdict is Verdict.NONE


def test_an_edited_script_needs_approval_again(world: World) -> None:
    command_guard(world)
    reg = world.registry(accept=True)
    reg.load()
    assert rm(reg.engine).reason == "v1"
    world.write(world.project / "guard.sh", SCRIPT % "v2", mode=0o755)
    strict = world.registry()  # a later run without --accept-hooks
    strict.load()
    assert not strict.hooks[0].approved
    out = rm(strict.engine)
    assert out.verdict is Verdict.BLOCK
    assert out.reason != "v2"  # the edited script did not run
    strict.approve(["project:guard"])
    assert rm(strict.engine).reason == "v2"


def test_an_edited_on_error_needs_approval_again(world: World) -> None:
    command_guard(world)
    reg = world.registry(accept=True)
    reg.load()
    reg.accept_hooks = False  # later edits happen in an ordinary run
    command_guard(world, on_error="open")  # weaker: failures would let calls through
    result = reg.reload()
    assert result.changed
    assert result.unapproved == ["project:guard"]
    assert result.withheld == ["project:guard"]  # removal of a guard waits for an operator
    out = rm(reg.engine)
    assert out.verdict is Verdict.BLOCK
    assert "fail-closed hook" in (out.reason or "")
    # One operator approval covers the new definition and the weakening.
    assert reg.approve(["project:guard"]) == ["project:guard"]
    assert reg.withheld == []
    assert rm(reg.engine).reason == "v1"


def test_a_removed_fail_closed_hook_needs_an_operator(world: World) -> None:
    world.write(world.home / "guard.py",
                "from interlock import block\n\ndef handle(e):\n    return None\n")
    world.config(world.home, """
        [[hooks]]
        name = "guard"
        events = ["before_tool_call"]
        handler = "guard.py"
        """)
    reg = world.registry()
    reg.load()
    assert rm(reg.engine).verdict is Verdict.NONE
    world.config(world.home, "")
    result = reg.reload()
    assert result.withheld == ["user:guard"]
    out = rm(reg.engine)
    assert out.verdict is Verdict.BLOCK
    assert "user:guard was removed" in str(reg.engine.hooks[-1].executor.message)  # type: ignore[union-attr]
    # A restart does not forget: the baseline is stored with the approvals.
    again = world.registry()
    again.load()
    assert again.withheld == ["user:guard"]
    assert rm(again.engine).verdict is Verdict.BLOCK
    assert again.approve(["user:guard"]) == ["user:guard"]
    assert again.withheld == []
    assert rm(again.engine).verdict is Verdict.NONE


def test_an_operator_reload_may_remove_a_guard(world: World) -> None:
    command_guard(world)
    reg = world.registry(accept=True)
    reg.load()
    world.config(world.project, "")
    assert reg.reload(operator=True).withheld == []
    assert rm(reg.engine).verdict is Verdict.NONE


def test_accept_hooks_env_approves_and_records(world: World, monkeypatch) -> None:
    command_guard(world)
    monkeypatch.setenv("INTERLOCK_ACCEPT_HOOKS", "1")
    reg = world.registry()
    reg.load()
    assert reg.hooks[0].approved
    monkeypatch.delenv("INTERLOCK_ACCEPT_HOOKS")
    later = world.registry()
    later.load()
    assert later.hooks[0].approved
    assert rm(later.engine).reason == "v1"


def test_revoke(world: World) -> None:
    command_guard(world)
    reg = world.registry(accept=True)
    reg.load()
    reg.accept_hooks = False
    assert reg.revoke("guard")
    assert not reg.hooks[0].approved
    assert rm(reg.engine).reason != "v1"


def test_project_python_hooks_are_not_imported_before_approval(world: World) -> None:
    marker = world.root / "imported"
    folder = world.project / "hooks" / "py"
    world.write(folder / "HOOK.yaml", "events: [user_input]\n")
    world.write(folder / "handler.py", f"open({str(marker)!r}, 'w').close()\n"
                                       "def handle(e):\n    return None\n")
    reg = world.registry()
    reg.load()
    assert not marker.exists()
    reg.approve(["py"])
    assert marker.exists()
    # Editing any file in the folder changes the digest.
    old = reg.hooks[0].digest
    world.write(folder / "notes.txt", "x")
    reg.reload()
    assert reg.hooks[0].digest != old
    assert not reg.hooks[0].approved


def _approve_many(state: str, start: int) -> None:
    store = TrustStore(Path(state))
    for i in range(start, start + 25):
        store.approve([(f"k{i}", "d", f"user:h{i}")])


@pytest.mark.slow
def test_concurrent_processes_never_lose_an_approval(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_approve_many, args=(str(tmp_path), n * 25)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(TrustStore(tmp_path).approvals()) == 100
    assert not list(tmp_path.glob("*.tmp"))


def test_approving_one_hook_does_not_release_another_removal(world: World) -> None:
    for name in ("a", "b"):
        world.write(world.home / f"{name}.py", "def handle(e):\n    return None\n")
    world.config(world.home, """
        [[hooks]]
        name = "a"
        events = ["before_tool_call"]
        handler = "a.py"

        [[hooks]]
        name = "b"
        events = ["user_input"]
        handler = "b.py"
        """)
    command_guard(world)
    reg = world.registry()
    reg.load()
    world.config(world.home, "")
    assert sorted(reg.reload().withheld) == ["user:a", "user:b"]
    assert reg.approve(["project:guard"]) == ["project:guard"]
    assert sorted(reg.withheld) == ["user:a", "user:b"]
    assert reg.approve(["user:b"]) == ["user:b"]
    assert reg.withheld == ["user:a"]
    assert fire(reg.engine, "user_input", text="hi").verdict is Verdict.NONE


def test_open_engine_refuses_to_start_without_a_good_revision(world: World) -> None:
    from interlock import ConfigError
    from interlock.config.registry import open_engine

    world.config(world.project, "[[hooks]]\nname = 1\n")
    with pytest.raises(ConfigError) as info:
        open_engine(world.root)
    assert info.value.line == 2
    world.config(world.project, "")
    engine, reg = open_engine(world.root)
    try:
        assert reg.revision == engine.revision >= 1
    finally:
        engine.close()


async def test_a_running_host_applies_an_approval_made_by_the_cli(world: World) -> None:
    import asyncio

    from interlock.config.registry import ReloadResult

    command_guard(world)
    host = world.registry()
    host.load()
    assert not host.hooks[0].approved
    seen: list[tuple[str, bool]] = []
    host.engine.on("config_change", lambda e: seen.append((Path(e.path).name, e.operator)),
                   name="watch-config")
    loop = asyncio.get_running_loop()
    applied = asyncio.Event()

    def note(result: ReloadResult) -> None:
        if result.changed:
            loop.call_soon_threadsafe(applied.set)

    host.add_listener(note)
    stop = asyncio.Event()
    task = asyncio.create_task(host.watch(stop, debounce_ms=50, rescan_ms=200))
    try:
        cli = world.registry()  # another process, in effect: `interlock hooks approve`
        cli.load()
        cli.approve(["guard"])
        await asyncio.wait_for(applied.wait(), 10)
        assert host.hooks[0].approved
        assert ("approvals.json", True) in seen  # an operator's change
        out = await host.engine.emit(__import__("interlock.events", fromlist=["make"]).make(
            "before_tool_call", tool_name="terminal", args={"command": "rm"}))
        assert out.reason == "v1"
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


def test_extension_pins_share_the_consent_store_and_legacy_pins_move_in(tmp_path):
    from interlock.ext.pins import FilePinStore, Pin, TrustPinStore

    legacy = tmp_path / "home" / "extensions"
    FilePinStore(legacy).put("old", Pin(name="old", kind="folder", source="/src/old",
                                       digest="sha256:" + "a" * 64))
    trust = TrustStore(tmp_path / "state")
    pins = TrustPinStore(trust, legacy=legacy)
    pins.put("new", Pin(name="new", kind="git", source="git@x:new.git", commit="c0ffee"))
    # An approval recorded by an earlier version is not lost: it moves in.
    assert sorted(pins.all()) == ["new", "old"]
    assert pins.get("old").digest == "sha256:" + "a" * 64
    # The old file stays for other processes (another state dir) until removed.
    assert [f.name for f in legacy.glob("*.pin.json")] == ["old.pin.json"]
    stored = json.loads((tmp_path / "state" / "extension_pins.json").read_text())["pins"]
    assert stored["new"]["commit"] == "c0ffee"
    # Hook approvals sit beside them, untouched.
    trust.approve([("k", "sha256:1", "code:h")])
    assert pins.get("new").commit == "c0ffee"
    assert trust.approved("k", "sha256:1")
    pins.remove("old")
    assert pins.get("old") is None
    assert sorted(pins.all()) == ["new"]
    assert not list(legacy.glob("*.pin.json"))


def test_a_legacy_pin_still_counts_when_the_consent_store_cannot_be_written(
        tmp_path, monkeypatch):
    from interlock.ext.pins import FilePinStore, Pin, TrustPinStore

    legacy = tmp_path / "extensions"
    FilePinStore(legacy).put("old", Pin(name="old", kind="folder", source="/src/old",
                                       digest="sha256:" + "b" * 64, enabled=False))
    trust = TrustStore(tmp_path / "state")

    def read_only(key, record):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(trust, "put_pin", read_only)
    pins = TrustPinStore(trust, legacy=legacy)
    pin = pins.get("old")  # no OSError reaches the loader, and the pin is not lost
    assert pin is not None
    assert pin.enabled is False
    assert sorted(pins.all()) == ["old"]


def test_a_malformed_extension_pin_is_a_clear_error(tmp_path):
    from interlock.ext.pins import TrustPinStore

    trust = TrustStore(tmp_path)
    trust.put_pin("broken", {"name": "broken", "colour": "red"})
    with pytest.raises(ConfigError, match=r"extension pin 'broken' is malformed") as err:
        TrustPinStore(trust).get("broken")
    assert "extension_pins.json" in str(err.value)
    assert "interlock ext approve" in str(err.value)
