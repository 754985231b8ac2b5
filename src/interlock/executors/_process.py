"""Process plumbing shared by the command and worker executors (POSIX only).

Every hook process runs in its own session, so it leads its own process
group: on a timeout, or once the hook itself has exited, the whole group is
killed and nothing it started is left behind (docs/wire-contract.md). The
stdin write never blocks the caller (it is buffered by the
transport, and a script that ignores stdin just breaks the pipe), and
stdout/stderr are capped: an answer past the cap is a failure, never a
truncated JSON document.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from interlock.engine.errors import ContractError, HookCrash, HookTimeout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from interlock.executors._collector import Collector

CLEAN_ENV = ("PATH", "HOME", "LANG", "TMPDIR")
"""What a native hook inherits from the host's environment, besides its own ``env``."""

_DRAIN_GRACE = 0.5
"""After a hook exits, how long its pipes may stay open (held by a job it detached)
before what it wrote is taken as its answer."""
_REAP_GRACE = 5.0
"""Seconds to wait for a killed process to be reaped (SIGKILL cannot be ignored)."""


def argv_for(command: str | Sequence[str], *, shell: bool = True) -> list[str]:
    """The argv of a hook command.

    A list runs as is. A string runs through ``sh -c`` (as Claude Code and
    Moltis run theirs), or, with ``shell=False``, is split the way Hermes
    splits it: shlex, no shell, only a leading ``~`` expanded.
    """
    if not isinstance(command, str):
        argv = [str(part) for part in command]
        if not argv:
            raise ValueError("command is an empty list")
        return argv
    if not command.strip():
        raise ValueError("command is empty")
    if shell:
        return ["/bin/sh", "-c", command]
    argv = shlex.split(os.path.expanduser(command))
    if not argv:
        raise ValueError("command is empty")
    return argv


def clean_env(env: Mapping[str, str] | None = None,
              passthrough: Sequence[str] = ()) -> dict[str, str]:
    """A native hook's environment: PATH, HOME, LANG, TMPDIR, the named
    pass-through variables, then the hook's own ``env`` on top."""
    out = {k: os.environ[k] for k in (*CLEAN_ENV, *passthrough) if k in os.environ}
    out.setdefault("PATH", os.defpath)
    if env:
        out.update(env)
    return out


def host_env(extra: Mapping[str, str], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A dialect hook's environment: the user's, the host's variables, the hook's ``env``."""
    out = dict(os.environ)
    out.update(extra)
    if env:
        out.update(env)
    return out


LIVE_GROUPS: set[int] = set()
"""Process groups of hooks running now: a bridge that answers before they are
done (its watchdog fired) kills them on its way out (bridge/_core.py)."""


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid``; gone already is fine."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass(frozen=True, slots=True)
class Completed:
    """What a finished hook process left behind."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    stderr_truncated: bool = False

    def stderr_text(self, limit: int = 2000) -> str:
        text = self.stderr.decode("utf-8", "replace").strip()
        if len(text) > limit:
            text = text[:limit] + "..."
        return text


async def run_once(
    argv: Sequence[str],
    *,
    stdin: bytes,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 - on timeout the group is killed, not just abandoned
    output_cap: int,
    label: str,
) -> Completed:
    """Run one hook process to completion.

    Raises HookTimeout past ``timeout`` (the group is killed first),
    ContractError when stdout passes ``output_cap``, HookCrash when the
    process cannot start. Cancellation kills the group too.
    """
    # Here, not at the top: validating a config imports this module (the
    # dialects' tables), and needs no event loop (docs/one-policy.md, Speed).
    import asyncio

    from interlock.executors._collector import Collector

    loop = asyncio.get_running_loop()
    collector = Collector(loop, output_cap)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: collector, *argv, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd), env=dict(env), start_new_session=True)
    except OSError as exc:
        raise HookCrash(f"hook {label} could not start {argv[0]!r}: "
                        f"{exc.strerror or exc}") from None
    pid = transport.get_pid()
    LIVE_GROUPS.add(pid)
    finished = False
    try:
        stdin_pipe = transport.get_pipe_transport(0)
        if stdin_pipe is not None:
            # Buffered by the transport: never blocks us, and a script that
            # exits without reading just breaks the pipe (reported, ignored).
            stdin_pipe.write(stdin)  # type: ignore[attr-defined]
            stdin_pipe.write_eof()  # type: ignore[attr-defined]
        try:
            async with asyncio.timeout(timeout):
                await asyncio.wait((collector.exited, collector.overflow),
                                   return_when=asyncio.FIRST_COMPLETED)
                _check_cap(collector, label)
                # The hook is done; anything it left running in its group is
                # an orphan by definition (a job that must outlive the hook has
                # to detach itself with setsid). Linux does not hand out a pid
                # that is still some group's id, so this cannot hit a stranger
                # while the group lives; once it is empty, killpg finds nothing.
                kill_group(pid)
                try:
                    await asyncio.wait_for(asyncio.shield(collector.drained), _DRAIN_GRACE)
                except TimeoutError:
                    # A job the hook detached (setsid) outlived the kill and holds
                    # its stdout: what the hook wrote before it exited has arrived.
                    held(collector, transport.get_returncode(), label)
                _check_cap(collector, label)  # the exit can be seen before the last data
        except TimeoutError:
            raise HookTimeout(f"hook {label} timed out after {timeout:g}s; "
                              "its process group was killed") from None
        finished = True
    finally:
        if not finished:
            kill_group(pid)
            if not collector.exited.done():
                # SIGKILL is quick; reap it so no transport outlives the call.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(collector.exited), _REAP_GRACE)
        transport.close()
        LIVE_GROUPS.discard(pid)
    code = transport.get_returncode()
    return Completed(exit_code=-1 if code is None else code, stdout=bytes(collector.out),
                     stderr=bytes(collector.err), stderr_truncated=collector.err_truncated)


def held(collector: Collector, code: int | None, label: str) -> None:
    """The hook exited, but a process it detached still holds its stdout open: the
    answer is what it wrote; an exit 0 that wrote nothing may have its answer still
    to come, so it is a crash, never "no opinion" (docs/wire-contract.md, How the
    process runs)."""
    if code == 0 and not collector.out.strip():
        raise HookCrash(
            f"hook {label} exited with nothing on stdout, and a process it started "
            "still holds its stdout open (fix: redirect a background job's output, "
            "e.g. `job >/dev/null 2>&1 &`)")


def _check_cap(collector: Collector, label: str) -> None:
    if collector.overflow.done():
        raise ContractError(
            f"hook {label} wrote more than {collector.cap} bytes to stdout; an answer "
            "past the cap is refused, not truncated (fix: print only the answer, or "
            "raise output_cap)")
