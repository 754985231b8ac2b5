"""The OS sandbox of the agent's process-running tools (docs/agent.md, The sandbox).

The argument scan of :mod:`interlock.agent.protect` reads a command's words; a
shell builds paths at run time (``p=.inter; p=${p}lock``), and ``cp -r
stage/. .``, ``git apply`` or ``python -c`` never name the policy at all. So
the terminal (and any extension tool that asks, :meth:`Sandbox.wrap`) runs
under bubblewrap: the whole file system as it is, except that

- every protected path (the project's ``.interlock/``, the user, managed and
  state dirs, the stores, every file pinned by an approval, Interlock's own
  package when it lives outside the project) is bound read-only over itself;
- the state dir (tokens, approvals, stores) is hidden behind an empty,
  read-only folder: the agent's commands can neither change nor read it;
- each folder above a protected path is bound over itself, so it becomes a
  mount point that cannot be renamed away (``mv project old; mkdir project``
  would otherwise leave the read-only binding behind under the old name);
- a protected folder that does not exist yet gets an empty read-only
  stand-in for the run (removed afterwards), so it cannot be created;
- the command runs with no capabilities (a root shell cannot unmount the
  bindings), in its own PID namespace (``/proc/<agent>/root`` would reach the
  real file system) and, with ``network = False``, with no network.

Where bubblewrap is missing or cannot run (macOS, no user namespaces) the
tools run unconfined; :func:`status` says why, hosts print it, and the option
``sandbox = "required"`` refuses to start instead.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from interlock.engine.errors import ConfigError

MODES = ("auto", "required", "off")
"""``auto``: sandbox when bubblewrap works, else run unconfined (and say so);
``required``: refuse to start without it; ``off``: never (embedding code only,
not a config value)."""

READ_ONLY_ERRORS = ("Read-only file system", "Device or resource busy")
"""What a denied write looks like in a command's output."""


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    available: bool
    detail: str
    """The bubblewrap binary in use, or why there is no sandbox."""

    def line(self) -> str:
        if self.available:
            return f"sandbox: bubblewrap ({self.detail}); policy and state are read-only"
        return (f"sandbox: NONE ({self.detail}); the agent's commands run unconfined, "
                "only the argument scan protects policy and state")


def bwrap_binary() -> str | None:
    """``$INTERLOCK_BWRAP`` (a path; empty to disable), else ``bwrap`` on PATH."""
    env = os.environ.get("INTERLOCK_BWRAP")
    if env is not None:
        return env if env and os.access(env, os.X_OK) else None
    return shutil.which("bwrap")


_BASE = ("--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
         "--die-with-parent", "--cap-drop", "ALL")


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> str | None:
    """None when ``bwrap`` runs a command here, else why not (cached per binary)."""
    try:
        done = subprocess.run([bwrap, *_BASE, "--", "true"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} cannot run: {exc}"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"{bwrap} cannot run here: {why}"
    return None


def status() -> SandboxStatus:
    """Whether the agent's commands can be sandboxed on this machine."""
    bwrap = bwrap_binary()
    if bwrap is None:
        return SandboxStatus(False, "bubblewrap (bwrap) is not installed; on Debian/Ubuntu: "
                                    "apt-get install bubblewrap")
    problem = _probe(bwrap)
    return SandboxStatus(True, bwrap) if problem is None else SandboxStatus(False, problem)


# -- stand-ins for protected folders that do not exist yet ------------------------
_standins_lock = threading.Lock()
_standins: dict[Path, tuple[int, list[Path]]] = {}
"""Missing protected folder -> (sandboxes using its stand-in, the folders bwrap creates)."""


def _hold_standin(path: Path) -> None:
    with _standins_lock:
        count, created = _standins.get(path, (0, []))
        if count == 0:
            created = []
            level = path
            while not level.exists() and level != level.parent:
                created.append(level)
                level = level.parent
        _standins[path] = (count + 1, created)


def _release_standin(path: Path) -> None:
    with _standins_lock:
        count, created = _standins[path]
        if count > 1:
            _standins[path] = (count - 1, created)
            return
        del _standins[path]
        for level in created:  # deepest first; a folder someone filled stays
            with contextlib.suppress(OSError):
                level.rmdir()


def _inside(path: Path, others: Iterable[Path]) -> bool:
    return any(path != o and path.is_relative_to(o) for o in others)


class Sandbox:
    """How one agent's commands are confined.

    ``protected()`` and ``hidden()`` are read at every command, so files a
    config reload pins are covered from the next command on.
    """

    def __init__(self, protected: Callable[[], Iterable[Path]],
                 hidden: Callable[[], Iterable[Path]] = tuple, *, network: bool = True,
                 mode: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.protected = protected
        self.hidden = hidden
        self.network = network
        self.mode = mode
        self.status = (SandboxStatus(False, "turned off by the embedding code")
                       if mode == "off" else status())
        if mode == "required" and not self.status.available:
            raise ConfigError(f"the agent cannot start: sandbox = \"required\" but "
                              f"{self.status.detail}", field="sandbox",
                              fix="install bubblewrap where user namespaces work, or set "
                                  "sandbox = \"auto\" to run commands unconfined")

    @property
    def active(self) -> bool:
        return self.status.available

    def _plan(self) -> tuple[list[str], list[Path]]:
        """bwrap's mount arguments, and the stand-ins they need."""
        hidden = sorted({Path(os.path.realpath(p)) for p in self.hidden()},
                        key=lambda p: len(p.parts))
        ro = sorted({Path(os.path.realpath(p)) for p in self.protected()} - set(hidden),
                    key=lambda p: len(p.parts))
        ro = [p for p in ro if not _inside(p, [*ro, *hidden])]
        # A hidden folder inside a read-only one is masked too (its secrets), unless
        # it is missing: then the read-only parent already stops its creation.
        hidden = [h for h in hidden if not _inside(h, hidden)
                  and (h.exists() or not _inside(h, ro))]
        ancestors: set[Path] = set()
        for p in [*ro, *hidden]:
            ancestors.update(a for a in p.parents if a != a.parent and a.is_dir())
        args: list[str] = []
        for a in sorted(ancestors, key=lambda p: len(p.parts)):
            args += ["--bind", str(a), str(a)]
        standins: list[Path] = []
        for p in sorted([*ro, *hidden], key=lambda p: len(p.parts)):
            if p.is_file():
                source = "/dev/null" if p in hidden else str(p)
                args += ["--ro-bind", source, str(p)]
            elif p.is_dir() and p not in hidden:
                args += ["--ro-bind", str(p), str(p)]
            elif p.is_dir() or not (p.suffix or p.name.endswith(_JOURNALS)):
                if not p.exists():
                    standins.append(p)
                args += ["--tmpfs", str(p), "--remount-ro", str(p)]
            # A missing file (a pinned file, a store's journal): nothing to bind, a
            # stand-in would be left behind as a file (docs/agent.md, The sandbox).
        return args, standins

    @contextlib.contextmanager
    def wrap(self, argv: list[str], cwd: str | Path) -> Iterator[list[str]]:
        """``argv`` as it must be run to be confined (``argv`` itself when no sandbox
        is active). Run the process inside the ``with`` block: stand-ins for missing
        protected folders live until it ends."""
        if not self.active:
            yield list(argv)
            return
        bwrap = bwrap_binary()
        assert bwrap is not None
        mounts, standins = self._plan()
        for path in standins:
            _hold_standin(path)
        try:
            net = [] if self.network else ["--unshare-net"]
            yield [bwrap, *_BASE, *net, *mounts, "--chdir", str(cwd), "--", *argv]
        finally:
            for path in standins:
                _release_standin(path)


_JOURNALS = ("-wal", "-shm", "-journal")
_QUOTED = re.compile(r"""['"‘’`]([^'"‘’`]+)['"‘’`]""")


def denied_paths(output: str) -> list[str]:
    """Paths that lines reporting a read-only file system name (quoted, or before
    a colon as in ``bash: PATH: Read-only file system``)."""
    found: list[str] = []
    for line in output.splitlines():
        if not any(marker in line for marker in READ_ONLY_ERRORS):
            continue
        found += _QUOTED.findall(line)
        found += [part.strip() for part in line.split(":") if part.strip()
                  and " " not in part.strip()]
    return list(dict.fromkeys(found))
