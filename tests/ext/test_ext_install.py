"""`interlock ext`: install from a folder, a wheel and git; pins; consent; removal."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, distribution

import pytest
from typer.testing import CliRunner

from helpers.wheels import extension_wheel
from interlock import Engine
from interlock.ext.loader import ExtensionSet
from interlock.hosts.cli import build_app
from interlock.testing import fire

MODULE = textwrap.dedent('''
    GUARDS = ["before_tool_call"]
    SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}

    def register(ctx):
        ctx.register_tool("shout", SCHEMA, lambda args, _c: args["text"].upper(),
                          description="Upper-case text")
        ctx.register_command("greet", lambda arguments, _c: f"hi {arguments}")

        @ctx.events.subscribe("notes")
        def remember(message):
            ctx.state.set("last_note", message.data)

        ctx.on("before_tool_call", lambda e: None, name="watch")
    ''')


def _folder(tmp_path, name="shouter", guards=()):
    folder = tmp_path / "src" / name
    folder.mkdir(parents=True)
    (folder / "extension.toml").write_text(
        f'name = "{name}"\nversion = "1.0"\nmodule = "shouter"\n'
        f"guards = {json.dumps(list(guards))}\n")
    (folder / "shouter.py").write_text(MODULE)
    return folder


@pytest.fixture
def cli(tmp_path, monkeypatch):
    home = tmp_path / "interlock-home"
    monkeypatch.setenv("INTERLOCK_HOME", str(home))
    monkeypatch.delenv("INTERLOCK_ASSUME_YES", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    runner = CliRunner()
    app = build_app("ext")  # as `interlock ext ...` builds it: its own command only

    def run(*args: str, ok: bool = True):
        result = runner.invoke(app, list(args))
        if ok:
            assert result.exit_code == 0, result.output
        return result

    run.home = home  # type: ignore[attr-defined]
    run.project = project  # type: ignore[attr-defined]
    return run


def _pins(home):
    """The pins as stored: in the consent store of the user dir's state dir."""
    path = home / "state" / "extension_pins.json"
    return json.loads(path.read_text())["pins"] if path.exists() else {}


def _pin(home, key):
    return _pins(home)[key]


async def _use(home, project=None, *, entry_points=False):
    """Load like a host does and use the tool, the command and the bus listener."""
    engine = Engine()
    exts = ExtensionSet(engine, home=home, project=project, use_entry_points=entry_points)
    try:
        infos = {i.name: i for i in exts.load_all()}
        assert await exts.call_tool("shout", {"text": "abc"}) == "ABC"
        assert await exts.run_command("greet", "bob") == "hi bob"
        exts.bus.publish("notes", "remember the milk")
        assert exts.bus.drain(5)
        return infos
    finally:
        exts.close()
        engine.close()


def _load(home, project=None, *, entry_points=False):
    engine = Engine()
    exts = ExtensionSet(engine, home=home, project=project, use_entry_points=entry_points)
    return engine, exts, {i.name: i for i in exts.load_all()}


async def test_folder_install_use_and_remove(cli, tmp_path):
    src = _folder(tmp_path)
    refused = cli("ext", "install", str(src), ok=False)
    assert refused.exit_code == 2
    assert "without consent" in refused.output

    out = cli("ext", "install", str(src), "--yes")
    assert "installed shouter (folder 1.0, sha256:" in out.output
    installed = cli.home / "extensions" / "shouter"
    assert (installed / "shouter.py").is_file()
    pin = _pin(cli.home, "shouter")
    assert pin["kind"] == "folder"
    assert pin["digest"].startswith("sha256:")

    infos = await _use(cli.home)
    assert infos["shouter"].status == "loaded"
    state = json.loads((cli.home / "state" / "extensions" / "shouter" / "state.json")
                       .read_text())
    assert state == {"last_note": "remember the milk"}

    listed = json.loads(cli("ext", "list", "--json").output)
    assert [(r["name"], r["status"]) for r in listed] == [("shouter", "ok")]

    cli("ext", "remove", "shouter")
    assert not installed.exists()
    engine, exts, infos = _load(cli.home)
    assert infos == {}
    assert exts.tools == {}
    exts.close()
    engine.close()


async def test_a_changed_install_is_refused_until_approved(cli, tmp_path):
    cli("ext", "install", str(_folder(tmp_path, guards=["before_tool_call"])), "--yes")
    module = cli.home / "extensions" / "shouter" / "shouter.py"
    module.write_text(module.read_text() + "\nimport os  # tampered\n")

    engine, exts, infos = _load(cli.home)
    assert infos["shouter"].status == "changed"
    assert "content changed since it was approved" in infos["shouter"].message
    assert "shout" not in exts.tools
    # It declared guards: what it guards blocks while it cannot load.
    assert fire(engine, "before_tool_call", tool_name="terminal", args={}).blocked
    exts.close()
    engine.close()
    listed = json.loads(cli("ext", "list", "--json").output)
    assert listed[0]["status"] == "changed"

    cli("ext", "approve", "shouter", "--yes")
    infos = await _use(cli.home)
    assert infos["shouter"].status == "loaded"


def test_a_change_that_narrows_the_guards_still_blocks_what_was_approved(cli, tmp_path):
    """The edit that un-approves an extension cannot also move its guards elsewhere:
    until approved again, the stand-in blocks what the approved version guarded."""
    cli("ext", "install", str(_folder(tmp_path, guards=["before_tool_call"])), "--yes")
    manifest = cli.home / "extensions" / "shouter" / "extension.toml"
    manifest.write_text(manifest.read_text().replace('"before_tool_call"', '"after_tool_call"'))

    engine, exts, infos = _load(cli.home)
    assert infos["shouter"].status == "changed"
    assert fire(engine, "before_tool_call", tool_name="terminal", args={}).blocked
    assert set(infos["shouter"].guards) == {"before_tool_call", "after_tool_call"}
    exts.close()
    engine.close()


async def test_enable_and_disable(cli, tmp_path):
    cli("ext", "install", str(_folder(tmp_path)), "--yes")
    cli("ext", "disable", "shouter")
    engine, exts, infos = _load(cli.home)
    assert infos["shouter"].status == "disabled"
    assert exts.tools == {}
    exts.close()
    engine.close()
    cli("ext", "enable", "shouter")
    assert (await _use(cli.home))["shouter"].status == "loaded"


async def test_project_extensions_need_approval(cli, tmp_path):
    folder = cli.project / ".interlock" / "extensions" / "shouter"
    shutil.copytree(_folder(tmp_path), folder)
    engine, exts, infos = _load(cli.home, cli.project)
    assert infos["shouter"].status == "unapproved"
    assert "interlock ext approve shouter" in infos["shouter"].message
    exts.close()
    engine.close()
    # The approval lives in the user's home, never in the project.
    cli("ext", "approve", "shouter", "--yes")
    assert not list(cli.project.rglob("*.pin.json"))
    assert not list(cli.project.rglob("extension_pins.json"))
    assert any(key.endswith("-shouter") for key in _pins(cli.home))
    assert (await _use(cli.home, cli.project))["shouter"].status == "loaded"


def _bare_repo(tmp_path):
    work = _folder(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "v1"], check=True)
    bare = tmp_path / "shouter.git"
    subprocess.run([*git, "clone", "-q", "--bare", str(work), str(bare)], check=True)
    commit = subprocess.run(["git", "-C", str(bare), "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    return bare, commit


async def test_git_install_is_pinned_to_its_commit(cli, tmp_path):
    bare, commit = _bare_repo(tmp_path)
    out = cli("ext", "install", str(bare), "--yes")
    assert f"installed shouter (git {commit}" in out.output
    pin = _pin(cli.home, "shouter")
    assert pin["commit"] == commit
    assert pin["kind"] == "git"
    assert not (cli.home / "extensions" / "shouter" / ".git").exists()
    assert (await _use(cli.home))["shouter"].status == "loaded"
    cli("ext", "remove", "shouter")
    assert not (cli.home / "extensions" / "shouter").exists()


WHEEL_DIST = "interlock-testext-shouter"
WHEEL_MODULE = "interlock_testext_shouter"


def _build_wheel(tmp_path):
    return extension_wheel(tmp_path, dist=WHEEL_DIST, module=WHEEL_MODULE, source=MODULE,
                           entry_point="shouter", version="0.3.0")


def _uninstall():
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y", WHEEL_DIST],
                   capture_output=True, check=False)
    sys.modules.pop(WHEEL_MODULE, None)


@pytest.mark.slow
async def test_wheel_install_use_and_remove(cli, tmp_path):
    wheel = _build_wheel(tmp_path)
    try:
        out = cli("ext", "install", str(wheel), "--yes")
        assert "installed shouter (package 0.3.0, sha256:" in out.output
        pin = _pin(cli.home, "shouter")
        assert pin["dist"] == WHEEL_DIST
        assert pin["version"] == "0.3.0"
        assert pin["artifact_sha256"].startswith("sha256:")
        assert pin["guards"] == ["before_tool_call"]
        assert distribution(WHEEL_DIST).version == "0.3.0"

        infos = await _use(cli.home, entry_points=True)
        assert infos["shouter"].status == "loaded"
        assert infos["shouter"].source.label == "package"

        cli("ext", "remove", "shouter")
        with pytest.raises(PackageNotFoundError):
            distribution(WHEEL_DIST)
        assert "shouter" not in _pins(cli.home)
    finally:
        _uninstall()


@pytest.mark.slow
def test_a_package_without_an_entry_point_is_not_kept(cli, tmp_path):
    proj = tmp_path / "plain"
    (proj / "interlock_testext_plain").mkdir(parents=True)
    (proj / "interlock_testext_plain" / "__init__.py").write_text("")
    (proj / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "interlock-testext-plain"\nversion = "1"\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["interlock_testext_plain"]\n')
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "-w", str(tmp_path / "d"), str(proj)],
                   check=True, capture_output=True)
    (wheel,) = (tmp_path / "d").glob("*.whl")
    try:
        result = cli("ext", "install", str(wheel), "--yes", ok=False)
        assert result.exit_code == 2
        assert "declares no `interlock.extensions` entry point" in result.output
        with pytest.raises(PackageNotFoundError):
            distribution("interlock-testext-plain")
    finally:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y",
                        "interlock-testext-plain"], capture_output=True, check=False)


def test_bad_manifests_are_clear_errors(cli, tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "extension.toml").write_text('name = "Bad Name"\n')
    result = cli("ext", "install", str(folder), "--yes", ok=False)
    assert result.exit_code == 2
    assert "extension.toml: name: name 'Bad Name' is not a valid extension name" in result.output
    (folder / "extension.toml").write_text('name = "ok"\nguards = ["before_tool_cal"]\n')
    result = cli("ext", "install", str(folder), "--yes", ok=False)
    assert "unknown event 'before_tool_cal'" in result.output
    assert "did you mean 'before_tool_call'" in result.output


def test_a_broken_folder_is_listed_and_does_not_stop_the_others(cli, tmp_path):
    cli("ext", "install", str(_folder(tmp_path)), "--yes")
    broken = cli.home / "extensions" / "broken"
    broken.mkdir()
    (broken / "extension.toml").write_text("name = [")
    rows = {r["name"]: r for r in json.loads(cli("ext", "list", "--json").output)}
    assert rows["broken"]["status"] == "failed"
    assert "invalid TOML" in rows["broken"]["message"]
    assert rows["shouter"]["status"] == "ok"
    engine, exts, infos = _load(cli.home)
    assert infos["broken"].status == "failed"
    assert infos["shouter"].status == "loaded"
    exts.close()
    engine.close()


def test_enabling_or_disabling_an_unknown_extension_is_an_error_not_a_silent_no_op(
        cli, tmp_path):
    """A typo in `ext disable` would leave the extension running while saying
    `disabled`."""
    cli("ext", "install", str(_folder(tmp_path)), "--yes")
    for verb in ("disable", "enable"):
        result = cli("ext", verb, "shoutr", ok=False)
        assert result.exit_code == 2
        assert "no extension named 'shoutr'" in result.output
        assert "did you mean 'shouter'?" in result.output
    engine, exts, infos = _load(cli.home)
    assert infos["shouter"].status == "loaded"
    assert "shoutr" not in infos
    exts.close()
    engine.close()


def test_installing_from_a_folder_that_does_not_exist_says_so(cli, tmp_path):
    result = cli("ext", "install", str(tmp_path / "nowhere"), "--yes", ok=False)
    assert result.exit_code == 2
    assert f"no folder at {tmp_path / 'nowhere'}" in result.output
    assert "pip install" not in result.output


def test_ext_list_is_a_table_that_fits_the_terminal(cli, tmp_path, monkeypatch):
    cli("ext", "install", str(_folder(tmp_path)), "--yes")
    monkeypatch.setenv("COLUMNS", "80")
    lines = cli("ext", "list").output.splitlines()
    # The origin is a long temporary path: the minor columns make room for it.
    assert lines[0].split() == ["NAME", "STATUS", "ORIGIN"]
    assert lines[1].split()[:2] == ["shouter", "ok"]
    assert max(len(line) for line in lines) <= 80
    wide = cli("ext", "list", "--wide").output.splitlines()
    assert wide[0].split() == ["NAME", "SOURCE", "STATUS", "PIN", "ORIGIN", "MESSAGE"]
    assert len(wide) == 2
