"""The command executor and the native wire contract v1, with real sh and
Python scripts (tests/fixtures/native_hook.*)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from fixtures.helpers import (
    HERE,
    PY,
    alive,
    invocation,
    kill_quietly,
    read_pid,
    wait_gone,
    wait_group_gone,
)
from interlock import Engine, Hook, OnError, Verdict
from interlock.engine.errors import ConfigError, ContractError, HookCrash, HookTimeout
from interlock.executors import CommandExecutor
from interlock.testing import RecordingSink, fire

SH = HERE / "native_hook.sh"
PYHOOK = HERE / "native_hook.py"


def command(lang: str, mode: str, arg: str = "") -> str | list[str]:
    if lang == "sh":
        return f"sh {SH} {mode} {arg}".strip()  # a string: runs through sh -c
    return [PY, str(PYHOOK), mode, *([arg] if arg else [])]  # a list: argv


def executor(lang: str, mode: str, arg: str = "", **kw) -> CommandExecutor:
    kw.setdefault("timeout", 10.0)
    return CommandExecutor(command(lang, mode, arg), hook_name="h", cwd=HERE, **kw)


LANGS = ["sh", "py"]


@pytest.mark.parametrize("lang", LANGS)
async def test_block_by_stdout(lang):
    run = executor(lang, "guard")
    decision = await run(invocation(args={"command": "rm -rf /"}))
    assert decision is not None
    assert decision.verdict is Verdict.BLOCK
    assert decision.reason == "no rm -rf here"
    assert decision.hint == "delete files one by one"
    assert await run(invocation(args={"command": "ls"})) is None  # empty stdout: no opinion


@pytest.mark.parametrize("lang", LANGS)
async def test_block_by_exit_2_uses_stderr(lang):
    decision = await executor(lang, "block-exit")(invocation())
    assert decision is not None
    assert decision.verdict is Verdict.BLOCK
    assert decision.reason == "refused by policy"


@pytest.mark.parametrize("lang", LANGS)
async def test_modify_and_context(lang):
    changed = await executor(lang, "modify")(invocation(modifies=True))
    assert changed is not None
    assert changed.verdict is Verdict.MODIFY
    assert changed.changes == {"args": {"command": "ls -la"}}
    ctx = await executor(lang, "context")(invocation())
    assert ctx is not None
    assert ctx.verdict is Verdict.NONE
    assert ctx.context == "remember to run the tests"


@pytest.mark.parametrize("lang", LANGS)
async def test_garbage_output_is_a_contract_error(lang):
    with pytest.raises(ContractError, match="not a JSON answer"):
        await executor(lang, "garbage")(invocation())


@pytest.mark.parametrize("lang", LANGS)
async def test_huge_output_is_a_failure_not_truncated_json(lang):
    with pytest.raises(ContractError, match="more than 65536 bytes"):
        await executor(lang, "huge", output_cap=65536)(invocation())


async def test_a_small_answer_just_past_the_cap_is_refused_too():
    # fits in the pipe buffer, so the exit may be seen before the data
    run = CommandExecutor("printf '%05000d' 0", hook_name="h", cwd=HERE, output_cap=1000)
    for _ in range(5):
        with pytest.raises(ContractError, match="more than 1000 bytes"):
            await run(invocation())


@pytest.mark.parametrize("lang", LANGS)
async def test_other_exit_codes_are_crashes(lang):
    with pytest.raises(HookCrash, match="exited with code 1: boom: something broke"):
        await executor(lang, "crash")(invocation())


@pytest.mark.parametrize("lang", LANGS)
async def test_a_higher_contract_version_is_a_failure(lang):
    with pytest.raises(ContractError, match="contract_version 2"):
        await executor(lang, "future")(invocation())


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.slow
async def test_hang_past_timeout_kills_the_whole_group(lang, tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    run = executor(lang, "hang", str(pidfile), timeout=0.5)
    with pytest.raises(HookTimeout, match=r"timed out after 0\.5s"):
        await run(invocation())
    grandchild = read_pid(pidfile)
    try:
        assert wait_gone(grandchild), "the hook's grandchild `sleep` outlived the timeout"
        if lang == "py":  # it also wrote its process group: nothing in it lives on
            pgid = read_pid(tmp_path / "grandchild.pid.pgid")
            assert pgid != os.getpgid(0)  # its own group, not ours
            assert wait_group_gone(pgid)
    finally:
        kill_quietly(grandchild)


@pytest.mark.parametrize("lang", LANGS)
async def test_a_script_that_ignores_stdin_still_works(lang):
    # 4 MB of payload: far past any pipe buffer, and the script never reads it.
    inv = invocation(args={"command": "x" * 4_000_000})
    assert await executor(lang, "ignore-stdin")(inv) is None


@pytest.mark.parametrize("lang", LANGS)
async def test_stdin_is_the_wire_body_on_one_line(lang, tmp_path):
    out = tmp_path / "stdin.json"
    await executor(lang, "echo", str(out))(invocation(args={"command": "ls\nrm"}))
    raw = out.read_text()
    assert raw.endswith("\n")
    assert raw.count("\n") == 1  # compact: scripts may read one line
    body = json.loads(raw)
    assert body == {
        "contract_version": 1, "invocation_id": "inv-1", "event": "before_tool_call",
        "hook": "h", "session_id": "sess-1", "cwd": str(HERE), "replay": False,
        "payload": body["payload"]}
    assert body["payload"]["args"] == {"command": "ls\nrm"}
    assert body["payload"]["tool_name"] == "terminal"


async def test_native_hooks_get_a_clean_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "s3cr3t")
    monkeypatch.setenv("WANTED", "yes")
    out = tmp_path / "env.txt"
    run = executor("sh", "env", str(out), env={"MINE": "1"}, env_passthrough=["WANTED"],
                   project_dir=tmp_path)
    await run(invocation())
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert "SECRET_TOKEN" not in env
    assert env["WANTED"] == "yes"
    assert env["MINE"] == "1"
    assert env["PATH"] == os.environ["PATH"]
    assert env["INTERLOCK_PROJECT_DIR"] == str(tmp_path)


async def test_the_process_runs_in_cwd(tmp_path):
    out = tmp_path / "pwd.txt"
    run = CommandExecutor(f"pwd > {out}", hook_name="h", cwd=tmp_path)
    assert await run(invocation()) is None
    assert out.read_text().strip() == str(tmp_path.resolve())


async def test_a_missing_program_is_a_crash():
    run = CommandExecutor(["/nonexistent/hook"], hook_name="h", cwd=HERE)
    with pytest.raises(HookCrash, match="could not start"):
        await run(invocation())


async def test_processes_left_behind_by_a_finished_hook_are_killed(tmp_path):
    pidfile = tmp_path / "bg.pid"
    # The background job keeps the hook's stdout open: without the group kill
    # the executor would wait for it until the timeout.
    run = CommandExecutor(f"sleep 300 & echo $! > {pidfile}; echo '{{}}'",
                          hook_name="h", cwd=tmp_path, timeout=30)
    t0 = asyncio.get_running_loop().time()
    assert await run(invocation()) is None
    assert asyncio.get_running_loop().time() - t0 < 20  # generous; it did not wait for sleep
    orphan = read_pid(pidfile)
    try:
        assert wait_gone(orphan)
    finally:
        kill_quietly(orphan)


DETACH = ("setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & "
          "while [ ! -s {pidfile} ]; do sleep 0.01; done")
"""A job detached into a session of its own (its pid written once it has), that
keeps the hook's stdout open."""


async def test_a_detached_job_holding_stdout_does_not_swallow_the_answer(tmp_path):
    """A job the hook detached with setsid outlives the group kill and keeps stdout
    open. The hook's own answer, written before it exited, is its answer; the
    executor does not wait for the job until the timeout (which on a fail-open
    hook would let the call through)."""
    pidfile = tmp_path / "bg.pid"
    run = CommandExecutor(
        f"{DETACH.format(pidfile=pidfile)}; "
        """echo '{"decision": "block", "reason": "no"}'""",
        hook_name="h", cwd=tmp_path, timeout=30)
    try:
        decision = await asyncio.wait_for(run(invocation()), 15)
        assert decision is not None
        assert decision.verdict is Verdict.BLOCK
    finally:
        kill_quietly(read_pid(pidfile))


async def test_a_detached_job_holding_stdout_after_a_silent_exit_is_a_crash(tmp_path):
    """Exit 0 with nothing written while a job still holds stdout: the answer may be
    still to come, so it is not read as "no opinion"."""
    pidfile = tmp_path / "bg.pid"
    run = CommandExecutor(DETACH.format(pidfile=pidfile), hook_name="h", cwd=tmp_path,
                          timeout=30)
    try:
        with pytest.raises(HookCrash, match="holds its stdout open"):
            await asyncio.wait_for(run(invocation()), 15)
    finally:
        kill_quietly(read_pid(pidfile))


async def test_cancellation_kills_the_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    run = executor("sh", "hang", str(pidfile), timeout=30)
    task = asyncio.ensure_future(run(invocation()))
    grandchild = await asyncio.to_thread(read_pid, pidfile)
    assert alive(grandchild)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    try:
        assert wait_gone(grandchild)
    finally:
        kill_quietly(grandchild)


def test_bad_definitions_are_config_errors():
    with pytest.raises(ConfigError, match="command is empty"):
        CommandExecutor("  ", hook_name="h", cwd=HERE)
    with pytest.raises(ConfigError, match="timeout"):
        CommandExecutor("true", hook_name="h", cwd=HERE, timeout=0)


# -- end to end through the engine ------------------------------------------------

def engine_with(executor: CommandExecutor, *, on_error=None, modifies=False,
                timeout: float = 10.0) -> tuple[Engine, RecordingSink]:
    sink = RecordingSink()
    eng = Engine(sinks=[sink])
    eng.register(Hook(name="guard", events=("before_tool_call",), executor=executor,
                      on_error=on_error, modifies=modifies, kind="command", timeout=timeout))
    return eng, sink


def test_engine_blocks_with_a_command_hook():
    eng, _ = engine_with(executor("sh", "guard"))
    try:
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "rm -rf /"})
        assert out.blocked
        assert out.reason == "no rm -rf here"
        assert out.tool_block_error()["hook"] == "code:guard"
        assert not fire(eng, "before_tool_call", tool_name="terminal",
                        args={"command": "ls"}).blocked
    finally:
        eng.close()


def test_engine_applies_a_command_modifier():
    eng, _ = engine_with(executor("py", "modify"), modifies=True)
    try:
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "ls"})
        assert out.final().args == {"command": "ls -la"}
    finally:
        eng.close()


@pytest.mark.parametrize("mode", ["garbage", "crash", "hang"])
@pytest.mark.slow
def test_engine_fail_closed_failures_block_with_a_fixed_message(mode, tmp_path):
    eng, sink = engine_with(executor("sh", mode, str(tmp_path / "pid"), timeout=0.5),
                            on_error=OnError.CLOSED)
    try:
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "ls"})
        assert out.blocked
        assert "fail-closed hook 'code:guard' did not answer" in (out.reason or "")
        assert "not json" not in (out.reason or "")  # never the hook's raw output
        assert len(sink.failures) == 1
    finally:
        eng.close()
        if (tmp_path / "pid").exists():
            kill_quietly(read_pid(tmp_path / "pid"))


def test_engine_fail_open_failures_pass_and_are_recorded():
    eng, sink = engine_with(executor("sh", "crash"), on_error=OnError.OPEN)
    try:
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "ls"})
        assert not out.blocked
        assert sink.failures[0].mode.value == "crash"
    finally:
        eng.close()


def test_engine_a_check_that_modifies_is_told_to_declare_modifies():
    eng, sink = engine_with(executor("sh", "modify"), on_error=OnError.OPEN)
    try:
        fire(eng, "before_tool_call", tool_name="terminal", args={"command": "ls"})
        assert "modifies = true" in sink.failures[0].error
    finally:
        eng.close()


def test_engine_shadow_command_hook_is_audited_not_applied():
    sink = RecordingSink()
    eng = Engine(sinks=[sink])
    eng.register(Hook(name="trial", events=("before_tool_call",), kind="command",
                      executor=executor("sh", "block-exit"), shadow=True))
    try:
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "ls"})
        assert not out.blocked
        [record] = out.hooks
        assert (record.verdict, record.status.value) == ("block", "shadow")
    finally:
        eng.close()


@pytest.mark.slow
def test_engine_background_command_hook_does_not_hold_the_host(tmp_path):
    import time

    sink = RecordingSink()
    eng = Engine(sinks=[sink])
    done = tmp_path / "done"
    slow = CommandExecutor(f"sleep 1; touch {done}; exit 1", hook_name="slow", cwd=tmp_path)
    eng.register(Hook(name="slow", events=("before_tool_call",), kind="command",
                      executor=slow, background=True))
    try:
        t0 = time.monotonic()
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "ls"})
        assert time.monotonic() - t0 < 0.9  # generous: the hook itself takes >= 1 s
        assert not out.blocked
        assert not done.exists()
        assert eng.drain(timeout=10)
        assert done.exists()
        assert [f.mode.value for f in sink.failures] == ["crash"]  # still dead-lettered
    finally:
        eng.close()
