"""Small helpers the policies share."""

from __future__ import annotations

import os
from pathlib import Path

REPLAY_ENV = "INTERLOCK_REPLAY"
"""An extra signal: set to 1, hooks with side effects skip them as in a replay
(for a host replaying events through its own loop)."""


def interlock_home() -> Path:
    """The user folder: :func:`interlock.store.paths.user_dir` (one definition for everyone)."""
    from interlock.store.paths import user_dir

    return user_dir()


def is_replay() -> bool:
    """True during `interlock replay` (the core's flag) or with $INTERLOCK_REPLAY set.

    Hooks with side effects (checkpoints, loggers, memory) skip them then:
    a replay re-judges a recorded session, it does not redo it.
    """
    from interlock.engine.invoke import is_replay as replaying

    return replaying() or os.environ.get(REPLAY_ENV, "") not in ("", "0", "false")
