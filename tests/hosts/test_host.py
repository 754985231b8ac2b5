"""interlock.hosts.assembly: one assembly for every host, kept live from a background thread
(sync hosts), extensions reloaded with the rest, and git-like project discovery."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture
from interlock.events import make
from interlock.ext.install import Installer
from interlock.hosts.assembly import RESERVED_COMMANDS, RESERVED_TOOLS, Host, Project
from interlock.store.paths import user_dir


def _decide(host: Host, command: str) -> tuple[str, str]:
    out = host.engine.emit_sync(make("before_tool_call", tool_name="terminal",
                                     args={"command": command})).to_dict(None)
    return out["decision"], out.get("reason") or ""


def _until(check: Callable[[], object], deadline: float = 15.0) -> None:
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < deadline, "no change in time"
        time.sleep(0.02)


def _handler(word: str, reason: str) -> str:
    return ("from interlock import block\n\ndef handle(event):\n"
            f"    if {word!r} in event.args.get('command', ''):\n"
            f"        return block({reason!r})\n")


def test_reserved_names_are_the_agents_builtins() -> None:
    from interlock.hosts.terminal.runner import builtin_names

    assert builtin_names() == (RESERVED_TOOLS, RESERVED_COMMANDS)


def test_host_adapters_do_not_import_the_reference_agent() -> None:
    code = ("import sys, interlock.hosts.assembly, interlock.hosts.cli.serve, "
            "interlock.hosts.cli.hooks, "
            "interlock.hosts.bridge._core, interlock.hosts.server.app\n"
            "print(sorted(m for m in sys.modules if m.startswith('interlock.agent')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_a_sync_host_applies_an_edit_from_its_background_thread(tmp_path: Path) -> None:
    handler = tmp_path / ".interlock" / "guard.py"
    handler.parent.mkdir()
    handler.write_text(_handler("rm", "v1"))
    (tmp_path / ".interlock" / "config.toml").write_text(
        '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\nhandler = "guard.py"\n')
    host = Host.open(tmp_path, accept_hooks=True, use_entry_points=False, record=False)
    try:
        host.start_live()
        assert _decide(host, "rm x") == ("block", "v1")
        assert _decide(host, "ls")[0] != "block"
        handler.write_text(_handler("ls", "v2"))
        _until(lambda: _decide(host, "ls") == ("block", "v2"))
        assert _decide(host, "rm x")[0] != "block"
    finally:
        host.close()
    assert host._thread is None  # the watcher stopped with the host


EXT = """\
def register(ctx):
    from interlock import block

    def guard(event):
        if {word!r} in event.args.get("command", ""):
            return block({reason!r})

    ctx.on("before_tool_call", guard, name="guard")
"""


@pytest.mark.slow
def test_extensions_reload_live_and_a_changed_approved_one_fails_closed(
        tmp_path: Path) -> None:
    user_ext = user_dir() / "extensions" / "mine"
    user_ext.mkdir(parents=True)
    (user_ext / "extension.toml").write_text('name = "mine"\n')
    (user_ext / "extension.py").write_text(EXT.format(word="rm", reason="mine v1"))
    (tmp_path / ".interlock").mkdir()
    project_ext = tmp_path / ".interlock" / "extensions" / "theirs"
    project_ext.mkdir(parents=True)
    (project_ext / "extension.toml").write_text('name = "theirs"\n'
                                                'guards = ["before_tool_call"]\n')
    (project_ext / "extension.py").write_text(EXT.format(word="curl", reason="theirs v1"))
    Installer(user_dir()).approve("theirs", project=tmp_path)
    host = Host.open(tmp_path, use_entry_points=False, record=False)
    try:
        host.start_live()
        assert _decide(host, "rm x") == ("block", "mine v1")
        assert _decide(host, "curl x") == ("block", "theirs v1")
        # A hand-placed user extension has no pin: its new code loads.
        (user_ext / "extension.py").write_text(EXT.format(word="ls", reason="mine v2"))
        _until(lambda: _decide(host, "ls") == ("block", "mine v2"))
        # An approved project extension edited after approval: it stops loading, and
        # the events it guards block until it is approved again.
        (project_ext / "extension.py").write_text(EXT.format(word="nothing", reason="x"))
        _until(lambda: host.extensions is not None
               and getattr(host.extensions.infos.get("theirs"), "status", None) == "changed")
        decision, reason = _decide(host, "echo hi")
        assert decision == "block"
        assert "theirs" in reason
        # Gone from disk: unloaded, as a restart would have it.
        shutil.rmtree(user_ext)
        _until(lambda: "mine" not in host.extensions.infos)  # type: ignore[union-attr]
        assert "mine.guard" not in {h.name for h in host.engine.hooks}
    finally:
        host.close()


def test_discovery_walks_up_to_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / ".interlock").mkdir()
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    found = Project.discover(cwd=deep)
    assert (found.root, found.found) == (tmp_path.resolve(), True)
    (tmp_path / "a" / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git file
    stopped = Project.discover(cwd=deep)
    assert (stopped.root, stopped.found) == (deep.resolve(), False)
    explicit = Project.discover(tmp_path / "a")
    assert (explicit.root, explicit.found) == ((tmp_path / "a").resolve(), False)
    assert os.fspath(found.root) in found.describe()
