"""The branch checked out in a directory, read from ``.git/HEAD`` (no ``git`` process).

The guard asks it for every ``git push`` with no branch named; spawning
``git symbolic-ref`` each time cost milliseconds. The answer is cached per
directory and re-read only when the HEAD file changes (a checkout rewrites it).
"""

from __future__ import annotations

import os
import threading

_MAX_UP = 64
_lock = threading.Lock()
_heads: dict[str, str | None] = {}
"""cwd -> the HEAD file found for it (None: not in a repository)."""
_branches: dict[str, tuple[int, int, str | None]] = {}
"""HEAD file -> (mtime_ns, size, branch)."""
_MAX_CACHED = 1024


def current_branch(cwd: str) -> str | None:
    """The branch checked out in ``cwd``; None when unknown (detached, not a repository)."""
    if not cwd:
        return None
    head = _head_file(cwd)
    if head is None:
        return None
    try:
        st = os.stat(head)
    except OSError:
        return None
    cached = _branches.get(head)
    if cached is not None and cached[:2] == (st.st_mtime_ns, st.st_size):
        return cached[2]
    try:
        with open(head, encoding="utf-8", errors="replace") as fh:
            text = fh.read(4096).strip()
    except OSError:
        return None
    branch = text[len("ref: refs/heads/"):] if text.startswith("ref: refs/heads/") else None
    with _lock:
        if len(_branches) > _MAX_CACHED:
            _branches.clear()
        _branches[head] = (st.st_mtime_ns, st.st_size, branch)
    return branch


def _head_file(cwd: str) -> str | None:
    if cwd in _heads:
        return _heads[cwd]
    found = None
    path = os.path.abspath(cwd)
    for _ in range(_MAX_UP):
        dotgit = os.path.join(path, ".git")
        if os.path.isdir(dotgit):
            found = os.path.join(dotgit, "HEAD")
            break
        if os.path.isfile(dotgit):  # a worktree or submodule: "gitdir: PATH"
            try:
                with open(dotgit, encoding="utf-8", errors="replace") as fh:
                    line = fh.read(4096).strip()
            except OSError:
                break
            if line.startswith("gitdir:"):
                gitdir = line[len("gitdir:"):].strip()
                found = os.path.join(os.path.join(path, gitdir) if not os.path.isabs(gitdir)
                                     else gitdir, "HEAD")
            break
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    with _lock:
        if len(_heads) > _MAX_CACHED:
            _heads.clear()
        _heads[cwd] = found
    return found
