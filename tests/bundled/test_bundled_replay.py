"""Bundled hooks with side effects skip them while `interlock replay` runs."""

from __future__ import annotations

import asyncio

from interlock import Engine
from interlock.bundled import load_handler, manifests
from interlock.engine.invoke import replay_mode
from interlock.testing import afire, fire


def _logger(engine: Engine, path: str) -> None:
    _folder, meta = manifests()["command-logger"]
    handler = load_handler("command-logger")
    handler.configure({"path": path})
    engine.on(meta["events"], handler.handle, name="command-logger",
              on_error=meta["on_error"], background=meta.get("background", False))


def test_command_logger_skips_what_a_replay_dispatches(tmp_path, monkeypatch):
    monkeypatch.delenv("INTERLOCK_REPLAY", raising=False)
    log = tmp_path / "c.jsonl"
    engine = Engine()
    try:
        _logger(engine, str(log))
        with replay_mode():
            fire(engine, "command", command="model", session_id="replayed")
        assert engine.drain(5)
        assert not log.exists()
        fire(engine, "command", command="model", session_id="live")
        assert engine.drain(5)
        assert "live" in log.read_text()
        assert "replayed" not in log.read_text()
    finally:
        engine.close()


async def test_command_logger_skips_replays_in_async_hosts(tmp_path, monkeypatch):
    monkeypatch.delenv("INTERLOCK_REPLAY", raising=False)
    log = tmp_path / "c.jsonl"
    engine = Engine()
    try:
        _logger(engine, str(log))
        with replay_mode():
            await afire(engine, "command", command="model", session_id="replayed")
        await afire(engine, "command", command="model", session_id="live")
        assert await asyncio.to_thread(engine.drain, 5)
        assert "replayed" not in log.read_text()
    finally:
        engine.close()
