"""The worker executor: one long-lived process per hook, speaking JSON lines.

Each request is one line, ``{"id": N, <the wire contract v1 body>}``, and
each answer is one line, ``{"id": N, <the wire contract v1 answer>}`` (or
``{"id": N, "error": "..."}`` when the handler failed). Requests may be in
flight together; answers are matched by id, in whatever order they come.

- The worker starts on first use, in its own process group, with the same
  clean environment as a native command hook.
- When it dies, every request in flight fails (HookCrash) and the next call
  starts a new one.
- A request past its timeout fails (HookTimeout) and the worker is killed
  and restarted: it may be wedged, and its other requests with it.
- A line that is not an answer (a stray ``print``) breaks the protocol: the
  requests in flight fail (ContractError) and the worker is restarted.
- An answer line past ``output_cap`` is a failure, never truncated JSON.
- Every worker's pipes live on one private event loop thread, so a worker
  serves the sync facade and any async host loop alike.

``interlock.worker.run(handler)`` turns a Python script into a worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from interlock.engine.decisions import Decision, decode_wire
from interlock.engine.errors import ConfigError, ContractError, HookCrash, HookFailure, HookTimeout
from interlock.engine.hooks import Executor
from interlock.engine.loop_thread import LoopThread
from interlock.engine.strictjson import AmbiguousJSON
from interlock.engine.strictjson import loads as strict_loads
from interlock.executors._process import LIVE_GROUPS, argv_for, clean_env, kill_group
from interlock.executors.command import DEFAULT_OUTPUT_CAP

if TYPE_CHECKING:
    from interlock.engine.hooks import Invocation

_STDERR_TAIL = 4096
"""Bytes of the worker's stderr kept to explain why it died."""

_IO = LoopThread()
"""The private loop every worker process's pipes live on."""


class _Worker(asyncio.SubprocessProtocol):
    """One running worker process: routes answer lines to waiting requests."""

    def __init__(self, loop: asyncio.AbstractEventLoop, label: str, cap: int) -> None:
        self.loop = loop
        self.label = label
        self.cap = cap
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.buffer = bytearray()
        self.stderr = bytearray()
        self.transport: asyncio.SubprocessTransport | None = None
        self.stdin: asyncio.WriteTransport | None = None
        self.dead = False
        self.exited = loop.create_future()

    # -- protocol callbacks --------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2:
            self.stderr += data
            del self.stderr[:-_STDERR_TAIL]
            return
        buf = self.buffer
        buf += data
        while True:
            end = buf.find(b"\n")
            if end < 0 or end > self.cap:
                break
            line = bytes(buf[:end])
            del buf[:end + 1]
            if line.strip():
                self._answer(line)
            if self.dead:
                return
        if len(buf) > self.cap:  # the first line in buf is longer than the cap
            self.fail(ContractError(
                f"worker {self.label} wrote an answer line longer than {self.cap} bytes; "
                "it is refused, not truncated (fix: answer less, or raise output_cap)"))

    def _answer(self, line: bytes) -> None:
        problem = ""
        try:
            answer = strict_loads(line)
            rid = answer["id"] if isinstance(answer, dict) else None
        except AmbiguousJSON as exc:
            rid, problem = None, f" ({exc}: which value counts is ambiguous)"
        except (ValueError, KeyError):
            rid = None
        if rid.__class__ is not int:  # JSON true is no id, though True == 1
            text = line.decode("utf-8", "replace")
            self.fail(ContractError(
                f"worker {self.label} wrote a line that is not an answer{problem}: "
                f"{text[:120]!r} (fix: stdout is the protocol; print logs to stderr)"))
            return
        future = self.pending.pop(rid, None)
        if future is not None and not future.done():  # else: a request we gave up on
            future.set_result(answer)

    def process_exited(self) -> None:
        code = self.transport.get_returncode() if self.transport is not None else None
        what = (f"was killed by signal {-code}" if code is not None and code < 0
                else f"exited with code {code}")
        tail = self.stderr.decode("utf-8", "replace").strip().splitlines()
        self.fail(HookCrash(f"worker {self.label} {what}" + (f": {tail[-1]}" if tail else "")))
        if not self.exited.done():
            self.exited.set_result(None)

    # -- control -------------------------------------------------------------------
    def fail(self, error: HookFailure) -> None:
        """Fail every request in flight and kill the process; the next call restarts."""
        self.dead = True
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(error)
        self.kill()

    def kill(self) -> None:
        self.dead = True
        if self.transport is not None:
            kill_group(self.transport.get_pid())
            LIVE_GROUPS.discard(self.transport.get_pid())
            self.transport.close()


class WorkerExecutor(Executor):
    """Runs a hook in one long-lived process per hook (satisfies ``Executor``).

    Same keyword arguments as ``CommandExecutor`` minus ``dialect``: workers
    speak only the native contract.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        hook_name: str,
        cwd: str | Path,
        env: Mapping[str, str] | None = None,
        env_passthrough: Sequence[str] = (),
        timeout: float = 60.0,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        project_dir: str | Path | None = None,
        plugin_root: str | Path | None = None,
    ) -> None:
        self.hook_name = hook_name
        try:
            self.argv = argv_for(command, shell=True)
        except ValueError as exc:
            raise ConfigError(str(exc), field="command",
                              fix=f"give worker hook {hook_name!r} a command to run") from None
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive, got {timeout!r}", field="timeout")
        self.cwd = str(cwd)
        self.timeout = float(timeout)
        self.output_cap = int(output_cap)
        self.project_dir = str(project_dir if project_dir is not None else cwd)
        self.env = clean_env({"INTERLOCK_PROJECT_DIR": self.project_dir, **(env or {})},
                             env_passthrough)
        del plugin_root  # accepted for a uniform signature; workers have no plugin variables
        self._worker: _Worker | None = None
        self._starting: asyncio.Future[_Worker] | None = None
        self._ids = itertools.count(1)
        self.starts = 0
        """How many processes this executor has started (restarts included)."""

    def __repr__(self) -> str:
        return f"WorkerExecutor({self.argv!r})"

    @property
    def pid(self) -> int | None:
        """The running worker's pid, if one runs."""
        w = self._worker
        if w is None or w.dead or w.transport is None:
            return None
        return w.transport.get_pid()

    async def __call__(self, invocation: Invocation) -> Decision | None:
        io = _IO.loop
        if asyncio.get_running_loop() is io:
            return await self._call(invocation)
        # Worker processes live on one private loop, whatever loop the host
        # emits from (the sync facade's, an async host's, a fresh asyncio.run):
        # their transports never outlive the loop they belong to.
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._call(invocation), io))

    async def _call(self, invocation: Invocation) -> Decision | None:
        label = repr(invocation.hook.qualified_name)
        worker = await self._ensure(label)
        rid = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = worker.loop.create_future()
        worker.pending[rid] = future
        assert worker.stdin is not None
        worker.stdin.write(msgspec.json.encode({"id": rid, **invocation.wire()}) + b"\n")
        deadline = worker.loop.time() + self.timeout
        try:
            async with asyncio.timeout_at(deadline):
                answer = await future
        except TimeoutError:
            worker.pending.pop(rid, None)
            worker.fail(HookCrash(f"worker {label} was restarted: another request "
                                  "timed out"))
            raise HookTimeout(f"hook {label} timed out after {self.timeout:g}s; its worker "
                              "was killed and will restart") from None
        except asyncio.CancelledError:
            # The caller gave up (its own timer, or a block elsewhere ended the
            # event). A late answer is discarded by id; no answer at all by our
            # deadline means the worker is wedged, so it is restarted then.
            worker.loop.call_at(deadline, self._expire, worker, rid, label)
            raise
        return decode_answer(answer, label)

    def _expire(self, worker: _Worker, rid: int, label: str) -> None:
        if rid in worker.pending and not worker.dead:
            worker.fail(HookCrash(f"worker {label} was restarted: a request got no answer "
                                  f"within {self.timeout:g}s"))

    async def _ensure(self, label: str) -> _Worker:
        worker = self._worker
        if worker is not None and not worker.dead:
            return worker
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._spawn(label))
        starting = self._starting
        try:
            worker = await asyncio.shield(starting)
        finally:
            if starting.done() and self._starting is starting:
                self._starting = None
        self._worker = worker
        return worker

    async def _spawn(self, label: str) -> _Worker:
        loop = asyncio.get_running_loop()
        worker = _Worker(loop, label, self.output_cap)
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: worker, *self.argv, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd, env=self.env, start_new_session=True)
        except OSError as exc:
            raise HookCrash(f"worker {label} could not start {self.argv[0]!r}: "
                            f"{exc.strerror or exc}") from None
        LIVE_GROUPS.add(transport.get_pid())
        worker.stdin = transport.get_pipe_transport(0)  # type: ignore[assignment]
        self.starts += 1
        return worker

    async def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        worker.fail(HookCrash(f"worker {worker.label} was closed"))
        if not worker.exited.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(worker.exited), 5.0)

    async def aclose(self) -> None:
        """Stop the worker (if one runs) and wait until it has exited."""
        if self._worker is None:
            return
        io = _IO.loop
        if asyncio.get_running_loop() is io:
            await self._stop()
        else:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._stop(), io))

    def close(self) -> None:
        """Stop the worker from sync code (not from a coroutine on the workers' loop)."""
        if self._worker is None:
            return
        if _IO.in_thread():
            raise RuntimeError("close() would deadlock on the workers' loop; await aclose()")
        asyncio.run_coroutine_threadsafe(self._stop(), _IO.loop).result(10)


def decode_answer(answer: dict[str, Any], label: str) -> Decision | None:
    """A worker's answer line (minus its id) under the wire contract v1."""
    answer = dict(answer)
    answer.pop("id", None)
    if "error" in answer:
        raise HookCrash(f"worker {label} failed: {answer['error']}")
    try:
        return decode_wire(answer)
    except ValueError as exc:
        raise ContractError(f"worker {label} answered {answer!r:.160}: {exc}") from None
