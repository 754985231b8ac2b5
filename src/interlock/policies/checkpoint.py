"""Git checkpoints: before a tool writes files, the working tree (tracked
and untracked files, ignored ones excepted) is committed to a shadow ref,
``refs/interlock/checkpoints/<session>``, without touching HEAD, the index,
the stash or the files. Each checkpoint's parent is the previous one, so
``git log refs/interlock/checkpoints/<session>`` lists them and
``git checkout <commit> -- <path>`` (or ``git restore --source``) brings a
file back.

A snapshot identical to the previous checkpoint is not committed again.
Nothing happens outside a git repository or during a replay.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

from interlock.events import Event
from interlock.policies._common import is_replay

REF_PREFIX = "refs/interlock/checkpoints/"
WRITING_TOOLS = ("write_file", "edit_file", "patch", "apply_patch", "str_replace",
                 "multi_edit", "create_file", "delete_file", "move_file")


class CheckpointError(RuntimeError):
    """git failed while taking a checkpoint."""


def _git(cwd: str, *args: str, env: dict[str, str] | None = None) -> str:
    # This git runs outside the agent's sandbox, and the agent can write the
    # user's and the system's git config (docs/agent.md, Protected paths): no
    # config but the repository's own (protected), no fsmonitor, no hooks.
    run_env = {**os.environ, **(env or {}), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": os.devnull}
    hardened = ["-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}"]
    for folder in _safe_directories():
        hardened += ["-c", f"safe.directory={folder}"]
    run_env.setdefault("GIT_AUTHOR_NAME", "interlock")
    run_env.setdefault("GIT_AUTHOR_EMAIL", "interlock@localhost")
    run_env.setdefault("GIT_COMMITTER_NAME", "interlock")
    run_env.setdefault("GIT_COMMITTER_EMAIL", "interlock@localhost")
    proc = subprocess.run(["git", *hardened, *args], cwd=cwd, env=run_env,
                          capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        raise CheckpointError(f"git {args[0]} failed: {proc.stderr.strip()[:500]}")
    return proc.stdout.strip()


def _safe_directories() -> list[str]:
    """The user's ``safe.directory`` entries (kept: the global config is not read).

    Reading config runs nothing; only these values are taken from it."""
    try:
        proc = subprocess.run(["git", "config", "--global", "--get-all", "safe.directory"],
                              capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return []
    return [d for d in proc.stdout.splitlines() if d]


def repo_root(cwd: str) -> str | None:
    try:
        return _git(cwd, "rev-parse", "--show-toplevel")
    except (CheckpointError, OSError):
        return None


@dataclass
class Checkpointer:
    tools: tuple[str, ...] = WRITING_TOOLS

    def ref(self, session_id: str) -> str:
        return REF_PREFIX + (re.sub(r"[^A-Za-z0-9_.-]", "_", session_id) or "default")

    def snapshot(self, cwd: str, session_id: str, message: str) -> str | None:
        """Commit the working tree of the repo at ``cwd``; the commit id, or None."""
        root = repo_root(cwd or os.getcwd())
        if root is None:
            return None
        ref = self.ref(session_id)
        with tempfile.TemporaryDirectory(prefix="interlock-ckpt-") as tmp:
            env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            head = self._rev(root, "HEAD")
            if head:
                _git(root, "read-tree", "HEAD", env=env)
            _git(root, "add", "-A", "--", ".", env=env)
            tree = _git(root, "write-tree", env=env)
        previous = self._rev(root, ref)
        if previous and _git(root, "rev-parse", f"{previous}^{{tree}}") == tree:
            return previous
        parents = ["-p", previous] if previous else (["-p", head] if head else [])
        commit = _git(root, "commit-tree", tree, *parents, "-m", message)
        _git(root, "update-ref", ref, commit)
        return commit

    @staticmethod
    def _rev(root: str, name: str) -> str | None:
        try:
            return _git(root, "rev-parse", "--verify", "--quiet", name + "^{commit}")
        except CheckpointError:
            return None

    def check(self, event: Event) -> None:
        if event.name != "before_tool_call" or is_replay():
            return
        tool = event.tool_name  # type: ignore[attr-defined]
        if tool not in self.tools:
            return
        self.snapshot(event.cwd, event.session_id,
                      f"interlock checkpoint before {tool} ({event.tool_call_id or 'call'})")  # type: ignore[attr-defined]
