"""Tiny executors for reliability tests: real subprocesses that answer, fail,
hang or die, and a manual clock. Independent of the command executor (docs/reliability.md)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path

from interlock.engine.decisions import Decision, block, decode_wire
from interlock.engine.errors import ContractError, HookCrash
from interlock.engine.hooks import Hook, Invocation, OnError

SCRIPTS = {
    "allow": "cat >/dev/null; echo '{}'",
    "block": """cat >/dev/null; echo '{"decision": "block", "reason": "not allowed"}'""",
    "garbage": "cat >/dev/null; echo 'this is not json'",
    "exit1": "cat >/dev/null; echo 'it broke' >&2; exit 1",
    "die": "cat >/dev/null; kill -9 $$",
    "hang": "cat >/dev/null; exec sleep 30",
}


class ShellExecutor:
    """Spawns ``sh -c SCRIPT`` per call with the wire request on stdin.

    Exit 0: stdout is the answer ({} is no opinion); exit 2: block with stderr;
    anything else (or a signal) is a crash. Killed, with its process group,
    when the caller gives up (timeout or cancellation).
    """

    def __init__(self, script: str, env: dict[str, str] | None = None) -> None:
        self.script = SCRIPTS.get(script, script)
        self.env = env
        self.calls = 0
        self.attempts: list[tuple[str, int]] = []

    async def __call__(self, inv: Invocation) -> Decision | None:
        self.calls += 1
        self.attempts.append((inv.invocation_id, inv.attempt))
        # Shielded: cancelling asyncio's spawn half-way leaks its pipes (its
        # pipe-connecting task outlives the cancel), so finish it, then kill.
        spawn = asyncio.ensure_future(asyncio.create_subprocess_exec(
            "/bin/sh", "-c", self.script, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, env={**os.environ, **(self.env or {})}))
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            await _kill(await spawn)
            raise
        try:
            out, err = await proc.communicate(json.dumps(inv.wire()).encode())
        except BaseException:
            await _kill(proc)
            raise
        if proc.returncode == 2:
            return block(err.decode().strip())
        if proc.returncode != 0:
            raise HookCrash(f"hook {inv.hook.qualified_name} exited with {proc.returncode}: "
                            f"{err.decode().strip()}")
        text = out.decode().strip()
        if not text:
            return None
        try:
            return decode_wire(json.loads(text))
        except ValueError as exc:
            raise ContractError(f"hook {inv.hook.qualified_name} answered garbage: {exc}"
                                ) from None


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill the hook's process group and close its pipes on this loop."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()
    if proc.stdin is not None:
        proc.stdin.close()
    proc._transport.close()  # type: ignore[attr-defined]


def flaky_script(counter: Path, failures: int, answer: str = "{}") -> str:
    """Fails (exit 1) the first ``failures`` calls, then prints ``answer``."""
    return (f"cat >/dev/null; n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); "
            f"echo $n > {counter}; if [ $n -le {failures} ]; then echo fail $n >&2; exit 1; "
            f"fi; echo '{answer}'")


class ManualClock:
    """A clock that moves only when told; ``sleep`` records and advances at once."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds
        await asyncio.sleep(0)


def exec_hook(name: str, executor: object, *, event: str = "before_tool_call",
              on_error: OnError | None = None, digest: str = "d1",
              timeout: float | None = 30.0) -> Hook:
    return Hook(name=name, events=(event,), executor=executor,  # type: ignore[arg-type]
                on_error=on_error, digest=digest, timeout=timeout, kind="command")


def settle(engine: object, timeout: float = 10.0) -> None:
    """Let hook tasks the engine cancelled finish their cleanup (killing their
    processes) before the engine's loop closes."""

    async def rest() -> None:
        current = asyncio.current_task()
        others = [t for t in asyncio.all_tasks() if t is not current]
        if others:
            await asyncio.wait(others, timeout=timeout)
        for _ in range(5):  # pipe transports close a few callbacks later
            await asyncio.sleep(0)

    engine._loop.run(rest())  # type: ignore[attr-defined]
