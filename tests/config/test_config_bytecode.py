"""In-process Python hooks and extensions run the source that was approved, never a
cached ``.pyc`` (docs/security.md, "Consent: what runs is what was approved").

Python trusts a ``__pycache__/*.pyc`` whose header repeats the source's mtime (in
whole seconds) and size. So an edit of the same size within the same second
would keep running the old code, and a planted ``.pyc`` with a copied header
would run in place of an approved, unchanged script.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib._bootstrap_external import _code_to_timestamp_pyc  # type: ignore[attr-defined]
from pathlib import Path

import pytest

from helpers.cfg import World, world
from interlock import Verdict
from interlock.ext.install import Installer
from interlock.hosts.assembly import Host
from interlock.store.paths import user_dir
from interlock.testing import fire

__all__ = ["world"]

HANDLER = """\
from interlock import block

def handle(event):
    return block({reason!r})
"""


@pytest.fixture(autouse=True)
def bytecode_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python as most people run it: it writes and reads ``__pycache__``."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def plant_pyc(source: Path, evil: str) -> None:
    """A .pyc of ``evil`` whose header matches ``source`` as it is on disk now."""
    st = source.stat()
    code = compile(evil, str(source), "exec")
    cache = Path(importlib.util.cache_from_source(str(source)))
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(bytes(_code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size)))


def reason(reg) -> str | None:  # type: ignore[no-untyped-def]
    out = fire(reg.engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
    assert out.verdict is Verdict.BLOCK
    return out.reason


def python_hook(world: World) -> Path:
    folder = world.project / "hooks" / "py"
    world.write(folder / "HOOK.yaml", "events: [before_tool_call]\n")
    return world.write(folder / "handler.py", HANDLER.format(reason="v1"))


def test_an_edit_of_the_same_size_in_the_same_second_runs_the_new_code(world: World) -> None:
    handler = python_hook(world)
    reg = world.registry(accept=True)
    reg.load()
    assert reason(reg) == "v1"
    st = handler.stat()
    handler.write_text(HANDLER.format(reason="v2"))
    os.utime(handler, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same second
    reg.reload()
    assert reason(reg) == "v2"


def test_a_planted_pyc_never_stands_in_for_an_approved_handler(world: World) -> None:
    handler = python_hook(world)
    plant_pyc(handler, HANDLER.format(reason="ev"))
    reg = world.registry(accept=True)
    reg.load()
    assert reason(reg) == "v1"


def hook_with_helper(world: World, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = world.project / "hooks" / "py"
    world.write(folder / "HOOK.yaml", "events: [before_tool_call]\n")
    world.write(folder / "handler.py", "from interlock import block\n"
                                       "from pyc_words import WORD\n\n"
                                       "def handle(event):\n    return block(WORD)\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "pyc_words", raising=False)
    return world.write(folder / "pyc_words.py", 'WORD = "v1"\n')


def test_a_planted_pyc_never_stands_in_for_a_module_the_handler_imports(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    helper = hook_with_helper(world, monkeypatch)
    plant_pyc(helper, 'WORD = "ev"\n')
    reg = world.registry(accept=True)
    reg.load()
    assert reason(reg) == "v1"


def test_an_approved_edit_of_an_imported_helper_runs_the_new_helper(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    helper = hook_with_helper(world, monkeypatch)
    reg = world.registry(accept=True)
    reg.load()
    assert reason(reg) == "v1"
    helper.write_text('WORD = "a new word"\n')
    reg.reload()  # the handler pins its helper: a new digest, approved again
    assert reason(reg) == "a new word"


EXT = """\
def register(ctx):
    from interlock import block

    def guard(event):
        return block({reason!r})

    ctx.on("before_tool_call", guard, name="guard")
"""


def test_a_planted_pyc_never_stands_in_for_an_approved_extension(world: World) -> None:
    folder = world.project / "extensions" / "theirs"
    folder.mkdir(parents=True)
    (folder / "extension.toml").write_text('name = "theirs"\n')
    module = folder / "extension.py"
    module.write_text(EXT.format(reason="v1"))
    Installer(user_dir()).approve("theirs", project=world.root)
    plant_pyc(module, EXT.format(reason="ev"))
    host = Host.open(world.root, use_entry_points=False, record=False)
    try:
        out = fire(host.engine, "before_tool_call", tool_name="terminal",
                   args={"command": "ls"})
        assert (out.verdict, out.reason) == (Verdict.BLOCK, "v1")
    finally:
        host.close()


def test_the_interpreters_own_folders_keep_their_bytecode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project's .venv is the host's environment, not hook code: importing from it
    stays as fast as Python makes it, even with the project covered."""
    import sysconfig

    from interlock.config import source

    venv = tmp_path / ".venv"
    monkeypatch.setattr(source, "_roots", (str(tmp_path.resolve()),))
    monkeypatch.setattr(source, "_env", (str(venv.resolve()),))
    assert source.covered(str(tmp_path / "hooks" / "rules.py"))
    assert not source.covered(str(venv / "lib" / "site.py"))
    assert not source.covered(str(tmp_path.parent / "elsewhere.py"))
    env = source._environment()
    assert os.path.realpath(sysconfig.get_path("purelib")) in env
    assert os.path.realpath(sys.prefix) in env
