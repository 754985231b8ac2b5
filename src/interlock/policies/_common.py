"""Small helpers the policies share."""

from __future__ import annotations

from pathlib import Path

from interlock.engine.invoke import REPLAY_ENV as REPLAY_ENV
from interlock.engine.invoke import is_replay as is_replay


def interlock_home() -> Path:
    """The user folder: :func:`interlock.store.paths.user_dir` (one definition for everyone)."""
    from interlock.store.paths import user_dir

    return user_dir()
