"""The bridge's run: read, evaluate (socket or in process), answer; deny on any failure.

A watchdog owns the deadline: SIGALRM fires at the deadline, and its handler
writes the host's deny and ends the process, whatever the bridge is waiting
on (a hung server, a hook that never returns: waits on sockets and locks are
interrupted by the signal). A signal rather than a timer thread: importing
threading is start-up time the bridge does not have.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import time

from interlock.hosts.bridge import HOSTS, host
from interlock.hosts.bridge._common import BridgeError, Reply, Result

# Start-up time is the bridge's budget: no typing, dataclasses or pathlib here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    from interlock.events import Event
    from interlock.hosts.assembly import Host
    from interlock.hosts.bridge._fast import Unstarted

USAGE = (f"usage: interlock bridge {{{','.join(HOSTS)}}} [--project DIR] [--deadline SECONDS] "
         "[--socket PATH] [--state-dir DIR] [--local] [--guarded]\n"
         "       [--server URL --token-file FILE [--pin sha256:HEX] [--ca FILE] "
         "[--fallback local]]\n"
         "       [--server env [--servers FILE] [--fallback local]]\n"
         "Reads the agent's hook input on stdin and answers on stdout, as the agent expects.\n")
MAX_INPUT = 8 << 20
STRICT_AUDIT_S = 5.0
"""How long an in-process answer waits for its audit record to commit (the server's
``Store.settled`` waits as long)."""


BACKSTOP_S = 1.0
"""How long after its deadline a bridge whose watchdog could not run is ended anyway.

SIGALRM's handler runs only when the main thread is back in Python: one stuck
inside C (SQLite waiting out a lock held elsewhere, a hook's C call) would answer
only when that returns, after the agent gave up on the hook (Claude Code then
runs the tool). faulthandler's watchdog is a thread of its own in C: at the
deadline plus this it ends the process with exit 1, which the installed
line's guard answers with the deny (docs/one-policy.md, When the bridge fails)."""


GUARDED = 100
"""With ``--guarded`` the bridge exits ``GUARDED`` + its answer's code, so the
install line's guard can tell an answer from an exit nobody chose (a hook's
``os._exit(0)``), which it turns into a deny (docs/one-policy.md)."""


class Options:
    __slots__ = ("ca", "deadline", "fallback", "guarded", "local", "pin", "project", "server",
                 "servers", "socket", "token_file")

    def __init__(self) -> None:
        self.project: str | None = None
        self.deadline: float | None = None
        self.socket: str | None = None
        self.local = False
        """Never use a server; evaluate in process."""
        self.guarded = False
        self.server: str | None = None
        """A remote policy server (bridge/remote.py); else $INTERLOCK_SERVER."""
        self.servers: str | None = None
        """The user's servers file: which servers ``--server env`` may use (bridge/remote.py)."""
        self.token_file: str | None = None
        self.pin: str | None = None
        self.ca: str | None = None
        self.fallback: str | None = None
        """``local``: when the remote server is unreachable, the in-process policy answers."""


def parse(args: list[str]) -> Options:
    opts = Options()
    it = iter(args)
    for arg in it:
        key, eq, value = arg.partition("=")
        if key in ("--project", "--deadline", "--socket", "--state-dir", "--server",
                   "--token-file", "--pin", "--ca", "--fallback", "--servers"):
            if not eq:
                value = next(it, "")
            if not value:
                raise BridgeError(f"{key} needs a value")
            if key == "--deadline":
                try:
                    opts.deadline = float(value)
                except ValueError:
                    raise BridgeError(f"--deadline {value!r} is not a number") from None
                if not 0 < opts.deadline <= 3600:
                    raise BridgeError("--deadline must be between 0 and 3600 seconds")
            elif key == "--state-dir":
                # Approvals and toggles live there (interlock.store.paths.state_dir).
                os.environ["INTERLOCK_STATE_DIR"] = value
            elif key == "--fallback" and value != "local":
                raise BridgeError(f"--fallback {value!r}: the only fallback is 'local'")
            else:
                setattr(opts, key[2:].replace("-", "_"), value)
        elif arg == "--local":
            opts.local = True
        elif arg == "--guarded":
            opts.guarded = True
        else:
            raise BridgeError(f"unknown option {arg!r}")
    return opts


class _Answer:
    """Writes exactly one reply: the bridge's, or the watchdog's deny.

    Both run on the main thread (the watchdog is a signal handler), so a flag
    set before writing is enough: a handler that interrupts a write returns.
    """

    def __init__(self) -> None:
        self._done = False

    def write(self, reply: Reply) -> bool:
        if self._done:
            return False
        self._done = True
        if reply.stdout:
            sys.stdout.write(reply.stdout if reply.stdout.endswith("\n")
                             else reply.stdout + "\n")
        sys.stdout.flush()
        if reply.stderr:
            sys.stderr.write(reply.stderr)
        sys.stderr.flush()
        return True


def kill_hook_groups() -> None:
    """SIGKILL the process groups of hooks still running in this process's engine.

    The bridge is about to answer without them and exit; a hook it gave up on
    must not go on acting. Safe in a signal handler: no import, no allocation
    worth mentioning. With a server up no hook runs here, and the module was
    never imported.
    """
    process = sys.modules.get("interlock.executors._process")
    groups = getattr(process, "LIVE_GROUPS", None) if process is not None else None
    for pgid in tuple(groups or ()):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass


def failure(mod: ModuleType, host_event: str, reason: str, *, scrub: bool = True) -> Reply:
    """The deny a failing bridge answers (no effect where the catalog says so).

    ``scrub``: redact the reason (an error may quote a secret); the watchdog
    passes False, since a signal handler must not import.
    """
    if scrub:
        try:
            from interlock.engine.redact import redact

            reason = redact(reason)
        except Exception:
            reason = "an error (its text could not be redacted)"
    if host_event in mod.NO_EFFECT:
        return Reply("", f"interlock bridge: {reason} (no effect on {host_event})\n", 0)
    reply: Reply = mod.deny(host_event, f"Interlock bridge failed closed: {reason}")
    return reply


def project_root(opts: Options, mod: ModuleType, payload: dict[str, Any]) -> str:
    """The project's resolved root: --project or $INTERLOCK_PROJECT as given, else
    the nearest folder at or above the host's project variable (the folder the
    agent was started in, maybe a subfolder), or else the call's cwd, holding
    `.interlock/`, up to the repository root (as every command finds it:
    interlock.config.project), else that folder, with a warning on stderr."""
    start = opts.project or os.environ.get("INTERLOCK_PROJECT")
    if start:
        return os.path.realpath(start)
    cwd = os.environ.get(mod.PROJECT_ENV) if mod.PROJECT_ENV else None
    if not cwd:
        cwd = payload.get("cwd")
    roots = payload.get("workspace_roots")
    if not (isinstance(cwd, str) and cwd) and isinstance(roots, list) and roots:
        cwd = roots[0]
    base = os.path.realpath(cwd if isinstance(cwd, str) and cwd else os.getcwd())
    from interlock.config.project import find_root

    found = find_root(base)
    if found is None:
        sys.stderr.write(f"interlock bridge: no .interlock/ in {base} or above; "
                         "only user and managed hooks apply\n")
        return base
    return found


def evaluate(system: str, raw: bytes, payload: dict[str, Any], root: str, opts: Options,
             deadline: float, host_event: str = "", *, server_follows: bool = False
             ) -> dict[str, Any]:
    """The outcome as a dict: from the server when one is up, else in process.
    ``server_follows``: this call starts the project's server once it has answered."""
    if not opts.local and (opts.server or os.environ.get("INTERLOCK_SERVER")):
        from interlock.hosts.bridge import remote

        if remote.wanted(opts):
            found = remote.evaluate_for(opts, system, raw, host_event, deadline)
            return found if found is not None else evaluate_local(system, payload, root)
    if not opts.local:
        from interlock.hosts.bridge._client import NoServer, post
        from interlock.hosts.server.paths import socket_path_for

        sock = opts.socket or socket_path_for(root)
        try:
            return post(sock, f"/v1/bridge/{system}", raw, project=root, deadline=deadline)
        except NoServer:
            pass
    return evaluate_local(system, payload, root,
                          check_up_to=IN_PROCESS_CHECK_BYTES if server_follows else None)


IN_PROCESS_CHECK_BYTES = 16 << 20
"""A call that loads the hooks itself and then starts the project's server
reads the store whole (about 40 ms here) only up to this size: the server
reads it whole, and damage found then is refused here too (docs/reliability.md,
Damaged stores). A call that starts no server reads it whole."""


def evaluate_local(system: str, payload: dict[str, Any], root: str, *,
                   check_up_to: int | None = None) -> dict[str, Any]:
    from interlock.hosts import bridge
    from interlock.hosts.bridge._common import logs_off_stderr

    logs_off_stderr()  # hosts read stderr as the block reason
    if not bridge.PROCESS_ENDS_WITH_ANSWER:
        return _answer(*_load(system, payload, root), root, check_up_to)
    # The bridge's own process: loading keeps what it makes (modules, classes,
    # hooks), so the collector's ~35 passes over it find nothing to free, for
    # about a tenth of the call. It is off while loading, and what loading made is
    # set aside (gc.freeze) for the rest of the process, which ends with the
    # answer; it is back on before any hook is called (docs/one-policy.md, Speed).
    collecting = gc.isenabled()
    gc.disable()
    try:
        host, event = _load(system, payload, root)
        if collecting:
            gc.freeze()
    finally:
        if collecting:
            gc.enable()
    return _answer(host, event, root, check_up_to)


def _load(system: str, payload: dict[str, Any], root: str) -> tuple[Host, Event]:
    try:
        from interlock.hosts.assembly import Host
    except ImportError as exc:
        raise BridgeError("no server is running and hooks cannot be loaded in process "
                          f"({exc}); start `interlock serve`") from None
    from interlock.hosts.bridge._events import build_event

    event = build_event(system, payload)
    # The host every command assembles (interlock.hosts.assembly); the extension machinery is
    # imported only when there are extensions to load.
    from pathlib import Path

    return Host.open(Path(root), record=False, extensions=None), event


def _answer(host: Host, event: Event, root: str, check_up_to: int | None) -> dict[str, Any]:
    from interlock.hosts.bridge._decide import decided, unguarded

    try:
        if unguarded(host.engine.hooks, host.rules):
            # A bridge never runs with no policy: a host agent calling it expects
            # one, and an empty one would mean "allow everything".
            raise BridgeError(f"no server is running and no hooks are configured for {root} "
                              "(nor a deny or ask rule); configure .interlock/config.toml or "
                              "start `interlock serve`")
        # Recorded like any host, but only once there is something to record: the
        # store's rows are written in one transaction when the bridge exits.
        host.registry.record(check_up_to=check_up_to)
        outcome = host.engine.emit_sync(event)
        out = decided(outcome, event, host.rules, engine=host.engine)
    except BaseException:
        host.close()
        raise
    # Strict audit, as the bridge's server: the answer leaves once its record has
    # committed (the server waits as long for it).
    if not host.close(record_timeout=STRICT_AUDIT_S):
        raise BridgeError("the audit store is not committing, so this decision was not "
                          "recorded; see `interlock status`")
    return out


def run(mod: ModuleType, opts: Options, raw: bytes, state: dict[str, str],
        deadline: float, outcome: dict[str, Any] | None = None, *,
        server_follows: bool = False) -> Reply:
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise BridgeError(f"the hook input is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise BridgeError("the hook input is not a JSON object")
    state["host_event"] = mod.host_event(payload)
    remote = not opts.local and (opts.server or (
        opts.project is None and os.environ.get("INTERLOCK_SERVER")))
    may_fall_back = opts.fallback  # the environment can only narrow it (bridge/remote.py)
    # A remote server answers for its own policy; the local project matters only to a
    # fallback (bridge/remote.py).
    root = project_root(opts, mod, payload) if not remote or may_fall_back else ""
    if outcome is None:
        outcome = evaluate(mod.SYSTEM, raw, payload, root, opts, deadline, state["host_event"],
                           server_follows=server_follows)
    result = Result.from_dict(outcome)
    reply: Reply = mod.answer(state["host_event"], payload, result)
    return reply


def main(argv: list[str], *, raw: bytes | None = None, started: float | None = None,
         outcome: dict[str, Any] | None = None,
         start: Unstarted | None = None) -> int:
    """The full bridge. From the fast path (interlock.hosts.bridge._fast): the input it
    already read (``raw``), when it started (the deadline counts from there), the
    outcome an older server answered with as JSON, and ``start``: the bridge server
    to start once this call has answered in process."""
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    try:
        mod = host(argv[0])
    except ValueError as exc:
        sys.stderr.write(f"interlock bridge: {exc}\n{USAGE}")
        return 2
    out = _Answer()
    state = {"host_event": ""}
    try:
        opts = parse(argv[1:])
    except BridgeError as exc:
        reply = failure(mod, "", str(exc))
        out.write(reply)
        return reply.code
    seconds = opts.deadline or float(mod.DEFAULT_DEADLINE)
    offset = GUARDED if opts.guarded else 0
    budget = seconds
    if started is not None:
        seconds = max(0.001, seconds - (time.monotonic() - started))
    deadline = time.monotonic() + seconds

    later = _starter(start)

    def expire(signum: int, frame: object) -> None:
        reply = failure(mod, state["host_event"], f"no answer within {budget:g} s", scrub=False)
        if out.write(reply):
            kill_hook_groups()
            later()  # hooks slower to load than the deadline: the server has the time
            os._exit(reply.code + offset)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    backstop = _backstop(seconds)
    try:
        if raw is None:
            raw = sys.stdin.buffer.read(MAX_INPUT + 1)
        if len(raw) > MAX_INPUT:
            raise BridgeError("the hook input is larger than 8 MiB")
        reply = run(mod, opts, raw, state, deadline, outcome, server_follows=start is not None)
    except BaseException as exc:  # any failure at all is a deny
        start = None  # the server would fail the same way; the next call tries again
        # BaseException too: a hook (in process) raising SystemExit or
        # KeyboardInterrupt must not end the bridge with exit 0 and no answer,
        # which the host reads as "allow" (docs/one-policy.md, When the bridge
        # fails). The watchdog never gets here: it leaves through os._exit.
        kill_hook_groups()
        reason = str(exc) if isinstance(exc, BridgeError) else f"{type(exc).__name__}: {exc}"
        reply = failure(mod, state["host_event"], reason)
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)
    out.write(reply)
    backstop()  # answered: starting the server below must not end in exit 1
    if start is not None:
        later()
    return reply.code + offset


def _backstop(seconds: float) -> Callable[[], None]:
    """Arm the backstop (``BACKSTOP_S``) in the bridge's own process, and return what
    disarms it. Elsewhere (``interlock bridge`` from the CLI, tests) nothing is armed:
    faulthandler's timer is one per process, and the process goes on after answering."""
    from interlock.hosts import bridge

    if not bridge.PROCESS_ENDS_WITH_ANSWER:
        return lambda: None
    import faulthandler

    # The traceback goes nowhere: the agent reads stderr as the block reason.
    sink = os.open(os.devnull, os.O_WRONLY)
    faulthandler.dump_traceback_later(seconds + BACKSTOP_S, exit=True, file=sink)
    return faulthandler.cancel_dump_traceback_later


def _starter(start: Unstarted | None) -> Callable[[], None]:
    """What starts the bridge's server once this call has answered (nothing when
    ``start`` is None). Imported now: the watchdog may call it mid-import."""
    if start is None:
        return lambda: None
    import interlock.hosts.bridge._autostart  # noqa: F401

    def later() -> None:
        # Answered already: nothing here may change the exit code (the next call tries again).
        with contextlib.suppress(BaseException):
            start.start()

    return later
