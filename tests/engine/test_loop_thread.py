"""The engine's private loop thread: closing it ends what still runs there.

A dispatch that ends early cancels the checks still running after the
ending answer (docs/engine.md, Phases of a gate event). A host that closes
right after, as a bridge call does, must not leave those tasks pending on a
closed loop: asyncio then prints "Task was destroyed but it is pending!" on
stderr, which an agent shows its model as part of the block reason.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from pathlib import Path

import pytest

from interlock.engine import loop_thread
from interlock.engine.loop_thread import LoopThread


def noise(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    """What asyncio said on stderr or through logging (a bridge has no logging
    set up, so its lines reach stderr)."""
    gc.collect()
    return capsys.readouterr().err + "\n".join(r.getMessage() for r in caplog.records)


def test_close_cancels_what_is_still_running_and_waits_for_its_cleanup(
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    thread = LoopThread()
    started = threading.Event()
    cleaned = threading.Event()

    async def still_running() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            cleaned.set()

    thread.submit(still_running())
    assert started.wait(10)
    thread.close()
    assert cleaned.is_set()  # its finally ran before close() returned
    assert "destroyed but it is pending" not in noise(capsys, caplog)


def test_close_does_not_wait_for_ever_on_a_task_that_ignores_cancellation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The bound, not its size, is under test: 2 s of drain would be 2 s of waiting.
    monkeypatch.setattr(loop_thread, "DRAIN_SECONDS", 0.1)
    thread = LoopThread()
    started = threading.Event()
    release = threading.Event()

    async def stubborn() -> None:
        started.set()
        while not release.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                continue  # refuses to end
    thread.submit(stubborn())
    assert started.wait(10)
    done = threading.Event()

    def closer() -> None:
        thread.close()
        done.set()

    threading.Thread(target=closer, daemon=True).start()
    finished = done.wait(30)
    release.set()
    assert finished, "close() must be bounded"
    gc.collect()  # the abandoned task goes here, not in a later test's log


def test_a_subprocess_cut_off_by_an_ending_answer_is_reaped_before_close_returns(
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    thread = LoopThread()
    running = threading.Event()
    reaped: list[int | None] = []

    async def spawn() -> None:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c",
                                                    "import time; time.sleep(30)")
        running.set()
        try:
            await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            reaped.append(proc.returncode)

    thread.submit(spawn())
    assert running.wait(30)
    thread.close()
    assert reaped == [-9]
    err = noise(capsys, caplog)
    assert "destroyed but it is pending" not in err
    assert "is closed" not in err


def test_a_bridge_sends_asyncios_lines_to_its_log_not_to_the_hosts_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Hosts read stderr as the block reason: asyncio's complaint about a task
    that outlived the loop (CPython cannot cancel a subprocess mid-creation
    cleanly) must not become part of it."""
    import logging

    from interlock.hosts.bridge._common import logs_off_stderr

    monkeypatch.setenv("INTERLOCK_HOME", str(tmp_path))
    asyncio_log = logging.getLogger("asyncio")
    saved = (asyncio_log.handlers[:], asyncio_log.propagate)
    try:
        logs_off_stderr()
        asyncio_log.error("Task was destroyed but it is pending!")
    finally:
        for handler in asyncio_log.handlers:
            handler.close()
        asyncio_log.handlers[:], asyncio_log.propagate = saved
    assert "destroyed" not in capsys.readouterr().err
    logs = list(tmp_path.rglob("bridge.log"))
    assert logs
    assert "destroyed but it is pending" in logs[0].read_text()
