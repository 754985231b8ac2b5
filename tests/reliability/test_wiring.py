"""The registry's hooks run behind the reliability wrappers, and a host records.

In one long-lived registry (what `interlock serve` holds): an always-crashing
fail-closed command hook opens its breaker after 3 failed dispatches, after
which the script no longer runs and the call is still blocked; the breaker
survives a reload that keeps the definition and starts fresh for an edited one.
Plus: the agent's grep tool, and the server's token store is out of the
agent's reach.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.agent import call, make_agent, tool_messages
from helpers.cfg import World, world
from interlock import Engine, Verdict
from interlock.reliability import BreakerKey, BreakerState
from interlock.store import open_store
from interlock.testing import fire

__all__ = ["world"]

CRASH = """\
#!/bin/sh
cat > /dev/null
echo x >> "{count}"
echo "policy server down" >&2
exit 3
"""

CONFIG = """\
[[hooks]]
name = "crasher"
events = ["before_tool_call"]
command = "{script}"
on_error = "closed"
timeout = {timeout}
"""

OTHER = """
[[hooks]]
name = "other"
events = ["after_tool_call"]
command = "true"
"""


def _rm(engine: Engine) -> object:
    return fire(engine, "before_tool_call", tool_name="terminal", args={"command": "rm x"})


def _runs(count: Path) -> int:
    return len(count.read_text().split()) if count.exists() else 0


@pytest.mark.slow
def test_breaker_opens_across_dispatches_blocks_and_survives_reload(
        world: World, tmp_path: Path) -> None:
    count = tmp_path / "count"
    script = world.write(world.home / "crash.sh", CRASH.format(count=count), mode=0o755)
    world.config(world.home, CONFIG.format(script=script, timeout=10))
    reg = world.registry(accept=True)
    reg.load()
    reg.record(str(tmp_path / "store.db"))
    try:
        for n in range(1, 4):
            assert _rm(reg.engine).verdict is Verdict.BLOCK  # type: ignore[attr-defined]
            assert _runs(count) == n
        (entry,) = [e for e in reg.hooks if e.definition.name == "crasher"]
        assert entry.hook is not None
        key = BreakerKey.of(entry.hook)
        assert reg.breakers.state(key) is BreakerState.OPEN
        # Open: the script is not run, and the fail-closed hook still blocks.
        outcome = _rm(reg.engine)
        assert outcome.verdict is Verdict.BLOCK  # type: ignore[attr-defined]
        assert _runs(count) == 3
        status = reg.status()
        assert status["revision"] == reg.revision
        assert [b["state"] for b in status["breakers"]] == ["open"]
        assert status["hooks"]["user:crasher"]["breaker_opens"] == 1

        # A reload that keeps the definition keeps the breaker open.
        world.config(world.home, CONFIG.format(script=script, timeout=10) + OTHER)
        assert reg.reload().changed
        assert _rm(reg.engine).verdict is Verdict.BLOCK  # type: ignore[attr-defined]
        assert _runs(count) == 3
        # An edited definition is a new hook, with a fresh breaker.
        world.config(world.home, CONFIG.format(script=script, timeout=9) + OTHER)
        assert reg.reload().changed
        assert _rm(reg.engine).verdict is Verdict.BLOCK  # type: ignore[attr-defined]
        assert _runs(count) == 4
        assert reg.breakers.state(key) is BreakerState.CLOSED  # forgotten: not loaded
    finally:
        reg.close()
        reg.engine.close(timeout=2)
        assert reg.close_recording()
    assert reg.recording is None
    with open_store(str(tmp_path / "store.db")) as store:
        modes = [d.mode for d in store.dead_letters(limit=0)]
        assert sorted(modes) == ["breaker_open"] * 2 + ["crash"] * 4
        assert all(d.fail_closed for d in store.dead_letters(limit=0))
        assert len(store.audit()) == 6
        (breaker,) = [b for b in store.breakers() if b.state == "open"]
        assert breaker.hook == "user:crasher"


def test_hooks_without_reliability_settings_get_design_defaults(world: World) -> None:
    world.config(world.home, CONFIG.format(script="true", timeout=7))
    reg = world.registry(accept=True)
    reg.load()
    (entry,) = reg.hooks
    assert entry.hook is not None
    policy = entry.hook.executor.policy  # type: ignore[union-attr]
    assert (policy.timeout, policy.retries, policy.breaker_threshold,
            policy.breaker_cooldown) == (7, 0, 3, 60)
    world.config(world.home, CONFIG.format(script="true", timeout=7)
                 + "retries = 2\nretry_budget = 20\nbreaker_threshold = 5\n"
                   "breaker_cooldown = 10\n")
    assert reg.reload().changed
    (entry,) = reg.hooks
    assert entry.hook is not None
    policy = entry.hook.executor.policy  # type: ignore[union-attr]
    assert (policy.retries, policy.budget, policy.breaker_threshold,
            policy.breaker_cooldown) == (2, 20, 5, 10)
    assert entry.hook.timeout == 21  # the budget plus the grace second


async def test_the_main_agent_has_grep(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("INTERLOCK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("INTERLOCK_STATE_DIR", raising=False)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\nDEPLOY_TARGET = 'prod'\n")
    engine = Engine()
    try:
        agent, model = make_agent(engine, [
            {"tool_calls": [call("grep", pattern="DEPLOY_TARGET")]},
            {"text": "found it"}], tmp_path)
        assert "grep" in agent.tools.names()
        assert agent.tools.get("grep").read_only
        await agent.run("where is the target?")
        result = json.loads(tool_messages(model, 1)[0]["content"])
        assert "app.py" in json.dumps(result)
        assert "DEPLOY_TARGET = 'prod'" in json.dumps(result)
    finally:
        engine.close()


async def test_the_agent_cannot_write_the_server_token_store(tmp_path: Path,
                                                              monkeypatch) -> None:
    from interlock.hosts.server.auth import TOKENS_FILE
    from interlock.hosts.server.paths import state_dir
    from interlock.store.paths import protected_paths

    monkeypatch.setenv("INTERLOCK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("INTERLOCK_STATE_DIR", raising=False)
    tokens = state_dir(tmp_path) / TOKENS_FILE
    assert tokens == tmp_path / "home" / "state" / TOKENS_FILE
    assert any(tokens.resolve().is_relative_to(p) for p in protected_paths(tmp_path))
    engine = Engine()
    try:
        agent, model = make_agent(engine, [
            {"tool_calls": [call("write_file", path=str(tokens), content='{"tokens": []}')]},
            {"text": "ok"}], tmp_path, store=False)
        await agent.run("go")
        error = json.loads(tool_messages(model, 1)[0]["content"])
        assert error["error"] == "tool call blocked"
        assert "protected" in error["reason"]
        assert not tokens.exists()
    finally:
        engine.close()


def test_hosts_do_not_import_opentelemetry_unless_a_provider_is_set() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from interlock.reliability.tracing import tracing_sink\n"
        "assert tracing_sink() is None\n"
        "assert 'opentelemetry' not in sys.modules\n"  # ~5 ms saved per bridge call
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "trace.set_tracer_provider(TracerProvider())\n"
        "assert tracing_sink() is not None\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr


async def test_a_store_moved_out_of_the_state_dir_is_protected_too(tmp_path: Path,
                                                                   monkeypatch) -> None:
    db = tmp_path / "audit" / "interlock.db"
    monkeypatch.setenv("INTERLOCK_STORE", str(db))
    engine = Engine()
    try:
        agent, model = make_agent(engine, [
            {"tool_calls": [call("write_file", path=str(db) + "-wal", content="x")]},
            {"text": "ok"}], tmp_path, store=False)
        await agent.run("go")
        error = json.loads(tool_messages(model, 1)[0]["content"])
        assert error["error"] == "tool call blocked"
        assert "protected" in error["reason"]
        assert not db.parent.exists()
    finally:
        engine.close()
    monkeypatch.setenv("INTERLOCK_STORE", "postgresql://u@db/x")
    from interlock.store.paths import protected_paths

    assert not any("postgresql" in str(p) for p in protected_paths(tmp_path))


FLAKY = """\
#!/bin/sh
cat > /dev/null
echo x >> "{count}"
[ "$(wc -l < "{count}")" -le 2 ] && exit 1
exit 0
"""


def test_retries_are_counted_and_a_recovered_failure_is_no_dead_letter(
        world: World, tmp_path: Path) -> None:
    count = tmp_path / "count"
    script = world.write(world.home / "flaky.sh", FLAKY.format(count=count), mode=0o755)
    world.config(world.home, CONFIG.format(script=script, timeout=10) + "retries = 2\n")
    reg = world.registry(accept=True)
    reg.load()
    reg.record(str(tmp_path / "store.db"))
    try:
        assert _rm(reg.engine).verdict is Verdict.NONE  # type: ignore[attr-defined]
        assert _runs(count) == 3
        stats = reg.status()["hooks"]["user:crasher"]
        assert (stats["retries"], stats["failures"], stats["executions"]) == (2, 0, 1)
    finally:
        reg.close()
        reg.engine.close(timeout=2)
        reg.close_recording()
    with open_store(str(tmp_path / "store.db")) as store:
        assert store.dead_letters(limit=0) == []
        assert [a.verdict for a in store.audit()] == ["none"]
