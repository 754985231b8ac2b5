"""Small helpers the policies share."""

from __future__ import annotations

import os
from pathlib import Path

REPLAY_ENV = "INTERLOCK_REPLAY"
"""Set to 1 by `interlock replay`: hooks with side effects (checkpoints,
loggers, memory) skip them. Python hooks receive the event only, so the
replay flag of the invocation reaches them through this variable."""


def interlock_home() -> Path:
    """The user folder: :func:`interlock.paths.user_dir` (one definition for everyone)."""
    from interlock.paths import user_dir

    return user_dir()


def is_replay() -> bool:
    return os.environ.get(REPLAY_ENV, "") not in ("", "0", "false")
