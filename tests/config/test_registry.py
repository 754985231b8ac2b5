"""The registry: revisions, reloads, config_change, shadowing, toggles, watching."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from helpers.cfg import GUARD, World, world
from interlock import ConfigError, Verdict, block
from interlock.config.registry import ReloadResult
from interlock.testing import fire

__all__ = ["world"]

HOOK = """
[[hooks]]
name = "guard"
events = ["before_tool_call"]
handler = "guard.py"
"""


def rm(engine) -> object:
    return fire(engine, "before_tool_call", tool_name="terminal", args={"command": "rm x"})


def user_guard(world: World, extra: str = "") -> None:
    world.write(world.home / "guard.py", GUARD)
    world.config(world.home, HOOK + extra)


def test_reload_keeps_last_good_revision_on_a_broken_edit(world: World) -> None:
    user_guard(world)
    reg = world.registry()
    first = reg.load()
    assert rm(reg.engine).verdict is Verdict.BLOCK
    world.config(world.home, HOOK + 'timeout = "soon"\n')
    result = reg.reload()
    assert not result.ok
    assert not result.changed
    assert result.error is not None
    assert result.error.file == str(world.home / "config.toml")
    assert result.error.line == 5
    assert result.error.field == "timeout"
    assert result.error.fix
    assert reg.revision == first == reg.engine.revision
    assert rm(reg.engine).verdict is Verdict.BLOCK  # the old guard still runs
    world.config(world.home, HOOK + "timeout = 5\n")
    fixed = reg.reload()
    assert fixed.ok
    assert fixed.changed
    assert fixed.revision > first


def test_a_broken_edit_put_back_as_it_was_clears_the_error(world: World) -> None:
    """Undoing a broken edit (back to the exact bytes that are running) is a config
    that loads: hosts that refuse while ``last_error`` is set must answer again."""
    user_guard(world)
    reg = world.registry()
    first = reg.load()
    world.config(world.home, HOOK + 'timeout = "soon"\n')
    assert not reg.reload().ok
    assert reg.last_error is not None
    world.config(world.home, HOOK)
    back = reg.reload()
    assert back.ok
    assert not back.changed
    assert reg.revision == first
    assert reg.last_error is None


def test_no_good_revision_refuses_to_start_and_gates_block(world: World) -> None:
    world.config(world.home, "[[hooks]]\nname = 'x'\nevents = ['nope']\nhandler = 'x.py'\n")
    reg = world.registry()
    with pytest.raises(ConfigError):
        reg.load()
    out = rm(reg.engine)
    assert out.verdict is Verdict.BLOCK
    assert out.hook is not None
    assert out.hook.name == "no-valid-config"
    world.config(world.home, "")
    assert reg.reload().ok
    assert rm(reg.engine).verdict is Verdict.NONE


def test_unchanged_reload_is_a_no_op(world: World) -> None:
    user_guard(world)
    reg = world.registry()
    rev = reg.load()
    result = reg.reload()
    assert result.ok
    assert not result.changed
    assert result.revision == rev


def test_config_change_fires_and_a_block_keeps_the_old_revision(world: World) -> None:
    user_guard(world)
    reg = world.registry()
    reg.load()
    seen = []

    def freeze(event):
        seen.append((event.path, event.source, event.operator, event.summary))
        if "policy" in event.summary:
            return block("config is frozen")
        return None

    reg.engine.on("config_change", freeze, name="freeze")
    world.config(world.home, HOOK + "priority = 3\n")
    ok = reg.reload()
    assert ok.changed
    assert seen[-1] == (str(world.home / "config.toml"), "user", False, "changed user:guard")
    world.write(world.project / "hooks" / "policy" / "HOOK.yaml", "events: [user_input]\n")
    world.write(world.project / "hooks" / "policy" / "handler.py", "def handle(e):\n    pass\n")
    before = reg.revision
    result = reg.reload()
    assert not result.ok
    assert result.blocked == "config is frozen"
    assert reg.revision == before
    assert "project:policy" not in [e.qualified_name for e in reg.hooks]
    assert any(h.name == "freeze" for h in reg.engine.hooks)  # code hooks survive reloads


def test_project_hook_cannot_shadow_a_user_guard_unless_overridable(world: World) -> None:
    user_guard(world)
    world.write(world.project / "hooks" / "guard" / "HOOK.yaml",
                "events: [before_tool_call]\non_error: open\n")
    world.write(world.project / "hooks" / "guard" / "handler.py", "def handle(e):\n    pass\n")
    reg = world.registry(accept=True)
    reg.load()
    by = {e.qualified_name: e for e in reg.hooks}
    assert by["user:guard"].state == "active"
    assert by["user:guard"].shadowed_by is None
    assert by["project:guard"].shadows is None
    assert rm(reg.engine).verdict is Verdict.BLOCK  # the user guard still runs

    user_guard(world, "overridable = true\n")
    reg2 = world.registry(accept=True)
    reg2.load()
    by = {e.qualified_name: e for e in reg2.hooks}
    assert by["user:guard"].shadowed_by == "project:guard"
    assert by["project:guard"].shadows == "user:guard"
    assert by["user:guard"].hook is None


def test_a_managed_hook_cannot_be_disabled(world: World) -> None:
    world.write(world.managed / "guard.py", GUARD)
    world.config(world.managed, HOOK)
    reg = world.registry()
    reg.load()
    [entry] = reg.hooks
    assert entry.qualified_name == "managed:guard"
    assert entry.approved
    with pytest.raises(ConfigError, match="cannot be disabled"):
        reg.set_enabled("managed:guard", False)
    world.config(world.home, '[[hooks]]\nname = "guard"\nenabled = false\n')
    result = reg.reload()
    assert result.error is not None
    assert "cannot be disabled" in result.error.message
    assert result.error.line == 3
    assert rm(reg.engine).verdict is Verdict.BLOCK
    # Even a toggle written straight into the state file is ignored.
    reg.trust.set_toggle(world.root, "managed:guard", False)
    world.config(world.home, "")
    reg.reload()
    assert rm(reg.engine).verdict is Verdict.BLOCK


def test_a_project_cannot_switch_off_a_user_hook(world: World) -> None:
    user_guard(world)
    world.config(world.project, '[[hooks]]\nname = "user:guard"\nenabled = false\n')
    with pytest.raises(ConfigError, match="project config cannot turn"):
        world.registry().load()


def test_bundled_hooks_are_off_until_enabled(world: World) -> None:
    world.write(world.bundled / "no-rm" / "HOOK.yaml", "events: [before_tool_call]\n")
    world.write(world.bundled / "no-rm" / "handler.py", GUARD)
    reg = world.registry()
    reg.load()
    [entry] = reg.hooks
    assert entry.qualified_name == "bundled:no-rm"
    assert entry.state == "disabled"
    assert rm(reg.engine).verdict is Verdict.NONE
    reg.set_enabled("no-rm", True)
    assert reg.entry("bundled:no-rm").state == "active"
    assert rm(reg.engine).verdict is Verdict.BLOCK
    reg.set_enabled("no-rm", False)
    assert rm(reg.engine).verdict is Verdict.NONE
    world.config(world.project, '[[hooks]]\nname = "no-rm"\nenabled = true\n')
    reg.trust.set_toggle(world.root, "bundled:no-rm", True)
    assert reg.reload().changed
    assert rm(reg.engine).verdict is Verdict.BLOCK


@pytest.mark.slow
async def test_watch_applies_changes_while_running(world: World) -> None:
    world.config(world.home, "")
    reg = world.registry()
    reg.load()
    results: list[ReloadResult] = []
    changed = asyncio.Event()
    loop = asyncio.get_running_loop()

    def note(result: ReloadResult) -> None:
        results.append(result)
        if result.changed:
            loop.call_soon_threadsafe(changed.set)

    reg.add_listener(note)
    stop = asyncio.Event()
    task = asyncio.create_task(reg.watch(stop, debounce_ms=50, rescan_ms=200))
    try:
        user_guard(world)
        await asyncio.wait_for(changed.wait(), 10)
        assert changed.is_set()
        assert (await reg.engine.emit(
            __import__("interlock.events", fromlist=["make"]).make(
                "before_tool_call", tool_name="terminal", args={"command": "rm"}))
                ).verdict is Verdict.BLOCK
        # A folder that did not exist when watching began is picked up too.
        changed.clear()
        world.write(world.project / "hooks" / "p" / "HOOK.yaml", "events: [user_input]\n")
        world.write(world.project / "hooks" / "p" / "handler.py", "def handle(e):\n    pass\n")
        await asyncio.wait_for(changed.wait(), 10)
        assert "project:p" in [e.qualified_name for e in reg.hooks]
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


WORKER = """
import sys
from interlock import block
from interlock.worker import run

def handle(request):
    if "rm" in request["payload"]["args"].get("command", ""):
        return block("worker says no")

run(handle)
"""


def worker_registry(world: World, script: str, event: str, extra: str = "") -> Any:
    """A loaded registry with one user worker hook ``w`` on ``event``, running
    ``script``."""
    import sys

    world.write(world.home / "w.py", script)
    world.config(world.home, f"""
        [[hooks]]
        name = "w"
        kind = "worker"
        events = ["{event}"]
        command = ["{sys.executable}", "./w.py"]
        timeout = 20
        {extra}
        """)
    reg = world.registry(accept=True)
    reg.load()
    return reg


@pytest.mark.slow
def test_worker_hooks_keep_their_process_across_unrelated_reloads(world: World) -> None:
    reg = worker_registry(world, WORKER, "before_tool_call")
    try:
        out = rm(reg.engine)
        assert out.verdict is Verdict.BLOCK
        assert out.reason == "worker says no"
        executor = reg.entry("w").hook.executor.inner  # type: ignore[union-attr]
        world.write(world.home / "other" / "hooks" / "x.txt", "unrelated")
        world.write(world.home / "hooks" / "p" / "HOOK.yaml", "events: [user_input]\n")
        world.write(world.home / "hooks" / "p" / "handler.py", "def handle(e):\n    pass\n")
        assert reg.reload().changed
        assert reg.entry("w").hook.executor.inner is executor  # type: ignore[union-attr]
        assert rm(reg.engine).reason == "worker says no"
        pid = executor.pid  # type: ignore[attr-defined]
        assert pid is not None
    finally:
        reg.close()
    assert executor.pid is None  # type: ignore[attr-defined]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # close() waits until the worker has exited


def test_a_project_cannot_undo_the_users_choice_of_bundled_hooks(world: World) -> None:
    world.write(world.bundled / "no-rm" / "HOOK.yaml", "events: [before_tool_call]\n")
    world.write(world.bundled / "no-rm" / "handler.py", GUARD)
    world.config(world.home, '[[hooks]]\nname = "no-rm"\nenabled = true\n')
    world.config(world.project, '[[hooks]]\nname = "bundled:no-rm"\nenabled = false\n')
    reg = world.registry()
    reg.load()
    assert reg.entry("bundled:no-rm").state == "active"
    assert rm(reg.engine).verdict is Verdict.BLOCK


SLOW_WORKER = """
import time
from interlock.worker import run

def handle(request):
    time.sleep(0.3)
    return None

run(handle)
"""


@pytest.mark.slow
def test_closing_a_host_drains_background_worker_hooks_before_stopping_workers(
        world: World) -> None:
    """A background worker hook still running or queued at shutdown finishes on its
    worker, and no worker process is left behind: closing the workers first had the
    drain start a new one that nothing stopped."""
    from interlock.config.registry import close_engine
    from interlock.events import AgentEnd

    reg = worker_registry(world, SLOW_WORKER, "agent_end", "background = true")
    executor = reg.entry("w").hook.executor.inner  # type: ignore[union-attr]
    for _ in range(3):
        reg.engine.emit_sync(AgentEnd(session_id="s", status="completed"))
    close_engine(reg.engine, reg, timeout=20)
    assert executor.pid is None  # type: ignore[attr-defined]
    assert executor.starts == 1  # type: ignore[attr-defined]
