"""A second look at the terminal's sandbox (held): hard links, symlinks made in an
earlier command, a rename of the folder above a protected one, /proc/self/fd."""

from __future__ import annotations

from pathlib import Path

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture
from helpers.sandbox import BUILD, _project, _run_terminal, needs_bwrap


@needs_bwrap
async def test_links_renames_and_fds_do_not_reach_a_protected_file(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    results = await _run_terminal(
        root,
        f"{BUILD}; ln $p/config.toml hard && echo pwned >> hard",
        f"{BUILD}; ln -s $p/config.toml soft",
        "echo pwned > soft",
        f"{BUILD}; mv $p moved && mkdir $p && echo pwned > $p/config.toml",
        f"{BUILD}; exec 3<>$p/config.toml; echo pwned >&3",
        f"{BUILD}; exec 3<$p/config.toml; echo pwned > /proc/self/fd/3",
    )
    assert (root / ".interlock" / "config.toml").read_text() == "# policy\n"
    assert not (root / "hard").exists()
    if (root / "soft").is_symlink():  # the write through it was refused
        assert results[2].get("exit_code") != 0, results[1:3]
    for i, r in enumerate(results[3:], 3):
        assert r.get("exit_code") != 0, (i, r)
