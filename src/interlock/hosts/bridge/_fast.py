"""The bridge's fast path: forward the hook input to the project's server, forward its reply.

Every hook call of an agent starts a Python process, so this path imports
almost nothing: no ``json``, ``signal``, ``re``, ``enum`` or host module
(docs/one-policy.md, Speed). The server answers in the host's own format
(interlock.hosts.bridge._reply), and this process writes the bytes it got.

Which server: :func:`transport` (the one place that chooses locally; a remote
server, ``--server`` or ``$INTERLOCK_SERVER``, goes to the full bridge). A server the
user started (``interlock serve``) first; else the project's own bridge
server, reused until it has been idle for a while. Anything this path cannot
do (no project given, ``--local``, no server up) goes to the full bridge
(interlock.hosts.bridge._core), which evaluates in process; when no server was
up, it then starts the project's own (interlock.hosts.bridge._autostart) for
the calls after it. Any failure after a server was chosen is the host's deny, never a
fall-back to another evaluator, and never an allow.
"""

import _signal  # type: ignore[import-not-found]  # `signal` drags in enum (~2 ms)
import os
import sys
import time

from interlock.hosts.bridge._errors import BridgeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from interlock.hosts.bridge._client import HostReply

HOSTS = ("claude", "codex", "gemini", "cursor", "hermes", "moltis")
PROJECT_ENV = {"claude": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR",
               "cursor": "CURSOR_PROJECT_DIR"}
"""Each host module's ``PROJECT_ENV`` (a test keeps the two in step)."""
DEADLINES = {"moltis": 8.0}
"""Each host module's ``DEFAULT_DEADLINE`` where it is not 20 s (a test keeps them in step)."""
AUTOSTART_ENV = "INTERLOCK_BRIDGE_AUTOSTART"
"""``0``: neither start nor use the bridge's own server; with no ``interlock serve`` up,
the bridge evaluates in process."""
MAX_SUN_PATH = 104
"""The longest socket path every platform binds (``sun_path`` is 104 bytes on macOS)."""
REMOTE_ENV = "INTERLOCK_SERVER"
MAX_INPUT = 8 << 20
GUARDED = 100  # _core.GUARDED


class Expired(BaseException):
    """The deadline passed (raised by the watchdog, on the main thread)."""


class Route:
    """Where one call goes: a Unix socket, and whether this call may start its server."""

    __slots__ = ("autostart", "socket")

    def __init__(self, socket: str, autostart: bool) -> None:
        self.socket = socket
        self.autostart = autostart


def transport(root: str, socket: str | None) -> list[Route]:
    """The servers to try, in order, for the project at ``root``.

    ``--socket`` or ``$INTERLOCK_SOCKET`` name the one server to use (none is
    started). Otherwise the socket ``interlock serve`` binds for this project,
    then the bridge's own server, which the call starts when it is not up.
    """
    from interlock.hosts.server.paths import SOCKET_NAME_ENV, socket_path_for

    if socket:
        return [Route(socket, False)]
    served = socket_path_for(root)
    if os.environ.get(SOCKET_NAME_ENV):
        return [Route(served, False)]
    if os.environ.get(AUTOSTART_ENV, "1") == "0":
        return [Route(served, False)]
    from interlock.hosts.bridge._autostart import auto_socket_path

    auto = auto_socket_path(root)
    if len(auto.encode()) > MAX_SUN_PATH:  # cannot be bound here: evaluate in process
        return [Route(served, False)]
    return [Route(served, False), Route(auto, True)]


class Unstarted:
    """No server listens, and this call may start the one for ``root`` at ``socket``
    once it has answered in process (interlock.hosts.bridge._autostart), with
    ``env``: the environment the socket's name digests, as it was before any hook
    ran here."""

    __slots__ = ("env", "root", "socket")

    def __init__(self, root: str, socket: str, env: dict[str, str]) -> None:
        self.root = root
        self.socket = socket
        self.env = env

    def start(self) -> None:
        from interlock.hosts.bridge._autostart import start

        start(self.root, self.socket, self.env)


def exchange(agent: str, root: str, raw: bytes, socket: str | None,
             deadline: float) -> "HostReply | dict[str, object] | Unstarted | None":
    """The server's reply; :class:`Unstarted` or None when no server is up."""
    from interlock.hosts.bridge._client import NoServer, post_for_host

    path = f"/v1/bridge/{agent}"
    for route in transport(root, socket):
        try:
            return post_for_host(route.socket, path, raw, project=root, deadline=deadline)
        except NoServer:
            if route.autostart:
                return Unstarted(root, route.socket, dict(os.environ))
    return None


def _options(args: list[str]) -> "dict[str, str] | None":
    """--project, --deadline, --socket, --state-dir and --guarded; None for anything else."""
    out: dict[str, str] = {}
    it = iter(args)
    for arg in it:
        key, eq, value = arg.partition("=")
        if key in ("--project", "--deadline", "--socket", "--state-dir"):
            value = value if eq else next(it, "")
            if not value:
                return None
            out[key[2:]] = value
        elif arg == "--guarded":
            out["guarded"] = "1"
        else:
            return None
    return out


def main(argv: list[str]) -> int:
    """``interlock bridge <agent> ...``: the fast path when it applies, else the full bridge."""
    started = time.monotonic()
    opts = _options(argv[1:]) if argv and argv[0] in HOSTS else None
    if opts is None or os.environ.get(REMOTE_ENV):
        # A remote policy server (--server, $INTERLOCK_SERVER: bridge/remote.py) is
        # reached by the full bridge.
        return _full(argv, None, started)
    agent = argv[0]
    if "state-dir" in opts:  # before the server's name is derived from the environment
        os.environ["INTERLOCK_STATE_DIR"] = opts["state-dir"]
    start = opts.get("project") or os.environ.get("INTERLOCK_PROJECT")
    if not start and agent in PROJECT_ENV:
        # The folder the agent was started in, maybe a subfolder: the project is
        # the nearest one at or above it, found by the walk the full bridge and
        # every command use (docs/configuration.md, Which project). None: the
        # full bridge says so and answers.
        start = os.environ.get(PROJECT_ENV[agent])
        if start:
            from interlock.config.project import find_root

            start = find_root(start)
    try:
        seconds = float(opts.get("deadline") or DEADLINES.get(agent, 20.0))
    except ValueError:
        return _full(argv, None, started)
    if not start or not 0 < seconds <= 3600:
        return _full(argv, None, started)
    root = os.path.realpath(start)
    offset = GUARDED if "guarded" in opts else 0

    def expire(signum: int, frame: object) -> None:
        raise Expired

    previous = _signal.signal(_signal.SIGALRM, expire)
    _signal.setitimer(_signal.ITIMER_REAL, seconds)
    raw = b""
    got: HostReply | dict[str, object] | Unstarted | None = None
    failed = ""
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT + 1)
        if len(raw) <= MAX_INPUT:
            got = exchange(agent, root, raw, opts.get("socket"), started + seconds)
    except Expired:
        failed = f"no answer within {seconds:g} s"
    except BridgeError as exc:
        failed = str(exc)
    finally:
        # Disarmed before the deny is written: it must not be cut short itself.
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, previous)
    if failed:
        return _deny(agent, raw, failed) + offset
    if isinstance(got, Unstarted):
        # No server yet: answer in process, then start it for the calls after this one.
        return _full(argv, raw, started, start=got)
    if got is None or isinstance(got, dict):
        # No server (evaluate in process), an answer too large to forward, or an
        # older server's JSON outcome: the full bridge answers from here.
        return _full(argv, raw, started, got)
    out = sys.stdout.buffer
    out.write(got.stdout)
    out.flush()
    if got.stderr:
        sys.stderr.buffer.write(got.stderr)
        sys.stderr.flush()
    return got.code + offset


def _full(argv: list[str], raw: bytes | None, started: float,
          outcome: "dict[str, object] | None" = None,
          start: Unstarted | None = None) -> int:
    from interlock.hosts.bridge._core import main as core_main

    return core_main(argv, raw=raw, started=started, outcome=outcome, start=start)


def _deny(agent: str, raw: bytes, reason: str) -> int:
    """Write the host's deny for this call (nothing on an observe-only event)."""
    import json

    from interlock.hosts.bridge import host
    from interlock.hosts.bridge._core import _Answer, failure

    mod = host(agent)
    host_event = ""
    try:
        payload = json.loads(raw)
        if isinstance(payload, dict):
            host_event = mod.host_event(payload)
    except Exception:  # the deny is written whatever the input was
        pass
    reply = failure(mod, host_event, reason)
    _Answer().write(reply)
    return int(reply.code)
