"""Finding the project a command runs in, the way git finds its repository.

Standard library only (``os``): the bridge calls :func:`find_root` on its
fast path, before anything else is imported.

The walk goes up from the starting folder and stops at the first folder that
holds ``.interlock/`` (the project root), or gives up at the filesystem root
or at a repository root (a folder holding ``.git``, a folder or a worktree's
file). So ``interlock run`` in ``project/src/`` applies ``project/``'s hooks,
and a repository cloned inside another project does not inherit that
project's hooks: its own ``.interlock/`` (or none) decides (docs/configuration.md,
Which project).
"""

from __future__ import annotations

import os

PROJECT_DIRNAME = ".interlock"
REPOSITORY_MARKER = ".git"


def find_root(start: str) -> str | None:
    """The nearest folder at or above ``start`` holding ``.interlock/``, resolved;
    None when the walk reaches a repository root or the filesystem root first."""
    here = os.path.realpath(start)
    while True:
        if os.path.isdir(os.path.join(here, PROJECT_DIRNAME)):
            return here
        if os.path.lexists(os.path.join(here, REPOSITORY_MARKER)):
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
