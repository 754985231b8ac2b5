"""A second look at the sandbox: the repository's git control files.

Interlock runs git outside the sandbox (the checkpoint policy's ``git add -A``,
``commit-tree``, ``update-ref`` before every writing tool). A model that may
write ``.git/config`` (a ``filter.<x>.clean`` or ``core.fsmonitor`` command)
or ``.git/hooks/reference-transaction`` has that command run unconfined at
the next checkpoint, where it can rewrite ``.interlock/config.toml``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture
from helpers.sandbox import _project, _run_terminal, needs_bwrap
from interlock.agent.protect import ProtectedPaths
from interlock.policies.checkpoint import Checkpointer


def _repo(tmp_path: Path) -> Path:
    root = _project(tmp_path)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitattributes").write_text("* filter=evil\n")
    return root


def test_the_file_tools_may_not_write_git_config_or_hooks(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    guard = ProtectedPaths.default(root)
    for target in (".git/config", ".git/hooks/reference-transaction", ".git/hooks/pre-commit"):
        assert guard.root_of(target, root) is not None, target
    assert guard.root_of(".git/objects/x", root) is None  # git itself still works


@needs_bwrap
async def test_a_sandboxed_command_cannot_plant_a_git_filter_that_runs_outside(
        tmp_path: Path) -> None:
    root = _repo(tmp_path)
    payload = "echo pwned > .interlock/config.toml; cat"
    results = await _run_terminal(
        tmp_path, f"git config filter.evil.clean '{payload}'",
        "printf '#!/bin/sh\\necho pwned > .interlock/config.toml\\n' "
        "> .git/hooks/reference-transaction; chmod +x .git/hooks/reference-transaction")
    assert all(r.get("exit_code") != 0 for r in results), results
    (root / "work.txt").write_text("x\n")
    Checkpointer().snapshot(str(root), "s1", "checkpoint")  # unconfined, as the policy runs
    assert (root / ".interlock" / "config.toml").read_text() == "# policy\n"


def test_a_worktree_git_file_is_protected(tmp_path: Path) -> None:
    root = _project(tmp_path / "wt")
    (root / ".git").write_text(f"gitdir: {tmp_path / 'elsewhere'}\n")
    assert ProtectedPaths.default(root).root_of(".git", root) is not None


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@needs_bwrap
async def test_a_filter_planted_in_the_global_git_config_does_not_run_at_a_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Never the real user's git config: this test plants commands in it.
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    root = _repo(tmp_path / "project")
    payload = "echo pwned > .interlock/config.toml; cat"
    await _run_terminal(root, f"git config --global filter.evil.clean '{payload}'; "
                                  "git config --global core.fsmonitor 'echo pwned > "
                                  ".interlock/config.toml; false'")
    (root / "work.txt").write_text("x\n")
    Checkpointer().snapshot(str(root), "s1", "checkpoint")
    assert (root / ".interlock" / "config.toml").read_text() == "# policy\n"
    assert "pwned" in (home / ".gitconfig").read_text()  # the plant itself worked
