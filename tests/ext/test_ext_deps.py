"""Manifest dependencies: `requires` orders loading and fails dependents closed,
`interlock` bounds the version, `packages` go into the extension's own folder
at `ext install` (offline: a wheel built here, pip pointed at it)."""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from helpers.wheels import package_wheel
from interlock import ConfigError, Engine, __version__
from interlock.ext.deps import packages_dir
from interlock.ext.install import Installer
from interlock.ext.loader import ExtensionSet
from interlock.ext.pins import read_manifest
from interlock.testing import fire

REGISTER = '''
import pathlib

def register(ctx):
    with open({log!r}, "a") as f:
        f.write(ctx.name + "\\n")
'''


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("INTERLOCK_HOME", str(home))
    monkeypatch.setenv("INTERLOCK_STATE_DIR", str(tmp_path / "state"))
    # activate_packages appends to sys.path: keep that inside the test.
    monkeypatch.setattr(sys, "path", list(sys.path))
    return home


def ext(root: Path, name: str, *, version: str = "1.0", body: str | None = None,
        log: Path | None = None, **fields: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    extra = "".join(f"{k} = {v}\n" for k, v in fields.items())
    (folder / "extension.toml").write_text(f'name = "{name}"\nversion = "{version}"\n'
                                           f'module = "ext"\n{extra}')
    (folder / "ext.py").write_text(body if body is not None else REGISTER.format(log=str(log)))
    return folder


def load(home: Path) -> ExtensionSet:
    exts = ExtensionSet(Engine(), home=home, use_entry_points=False)
    exts.load_all()
    return exts


def test_requires_orders_loading(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "order.log"
    root = home / "extensions"
    ext(root, "a-app", log=log, requires='["b-lib>=1.0", "c-base"]')
    ext(root, "b-lib", version="1.2", log=log, requires='["c-base"]')
    ext(root, "c-base", log=log)
    exts = load(home)
    assert {i.name: i.status for i in exts.infos.values()} == {
        "a-app": "loaded", "b-lib": "loaded", "c-base": "loaded"}
    assert log.read_text().split() == ["c-base", "b-lib", "a-app"]
    exts.close()


def test_missing_wrong_version_cycle_fail_closed_while_the_rest_load(
        home: Path, tmp_path: Path) -> None:
    log = tmp_path / "order.log"
    root = home / "extensions"
    ext(root, "fine", log=log)
    ext(root, "lonely", log=log, requires='["nope>=1"]')
    ext(root, "on-lonely", log=log, requires='["lonely"]', guards='["before_tool_call"]')
    ext(root, "old", version="1.0", log=log)
    ext(root, "wants-new", log=log, requires='["old>=2"]')
    ext(root, "x", log=log, requires='["y"]')
    ext(root, "y", log=log, requires='["x"]')
    exts = load(home)
    infos = exts.infos
    assert infos["fine"].status == "loaded"
    assert infos["old"].status == "loaded"
    assert infos["lonely"].status == "failed"
    assert infos["lonely"].message == "requires 'nope>=1', which is not installed"
    assert infos["on-lonely"].status == "failed"
    assert "requires 'lonely', which did not load" in infos["on-lonely"].message
    assert infos["wants-new"].message == "requires 'old>=2', but 'old' is version 1.0"
    assert infos["x"].message == "dependency cycle: x -> y -> x"
    assert infos["y"].message == "dependency cycle: x -> y -> x"
    # None of the failed ones ran; the guarded one stands in, failing closed.
    assert sorted(log.read_text().split()) == ["fine", "old"]
    outcome = fire(exts.engine, "before_tool_call", tool_name="terminal",
                   args={"command": "ls"})
    assert outcome.verdict == "block"
    assert "on-lonely" in (outcome.reason or "")
    exts.close()


def test_a_dependency_that_crashes_takes_its_dependents_down(home: Path, tmp_path: Path
                                                              ) -> None:
    log = tmp_path / "order.log"
    root = home / "extensions"
    ext(root, "base", body="def register(ctx):\n    raise RuntimeError('boom')\n")
    ext(root, "user", log=log, requires='["base"]')
    exts = load(home)
    assert exts.infos["base"].status == "failed"
    assert exts.infos["user"].status == "failed"
    assert "requires 'base', which did not load (it is failed:" in exts.infos["user"].message
    assert "boom" in exts.infos["user"].message
    assert not log.exists()
    exts.close()


def test_interlock_version_bound(home: Path, tmp_path: Path) -> None:
    root = home / "extensions"
    ext(root, "future", log=tmp_path / "l", interlock='">=99"')
    ext(root, "today", log=tmp_path / "l", interlock=f'">={__version__}"')
    exts = load(home)
    assert exts.infos["future"].message == (
        f"needs Interlock >=99, this is {__version__}; upgrade Interlock or install a "
        "version of the extension made for this one")
    assert exts.infos["today"].status == "loaded"
    exts.close()


@pytest.mark.parametrize(("fields", "field", "text"), [
    ({"requires": '"other"'}, "requires", "must be a list"),
    ({"requires": '["not a name!!"]'}, "requires", "is not a valid requirement"),
    ({"requires": '["me"]'}, "requires", "requires itself"),
    ({"packages": '[3]'}, "packages", "is not a requirement string"),
    ({"interlock": '"soon"'}, "interlock", "is not a version specifier"),
])
def test_bad_manifest_fields_name_file_field_and_fix(tmp_path: Path, fields: dict[str, str],
                                                     field: str, text: str) -> None:
    folder = ext(tmp_path, "me", log=tmp_path / "l", **fields)
    with pytest.raises(ConfigError) as info:
        read_manifest(folder)
    err = info.value
    assert text in str(err)
    assert err.field == field
    assert err.file == str(folder / "extension.toml")


USES_TINYDEP = '''
import tinydep

def register(ctx):
    ctx.register_tool("tiny", {"type": "object"}, lambda args, c: tinydep.VALUE)
'''


@pytest.mark.slow
def test_install_puts_packages_in_the_extensions_own_folder(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PackageNotFoundError):
        distribution("interlock-tinydep")
    wheels = tmp_path / "wheels"
    package_wheel(wheels, dist="interlock-tinydep", module="tinydep", source="VALUE = 42\n",
                  version="1.0")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels / "dist"))
    src = tmp_path / "src"
    first = ext(src, "first", body=USES_TINYDEP, packages='["interlock-tinydep>=1.0"]')
    monkeypatch.delitem(sys.modules, "tinydep", raising=False)

    # Placed by hand, without its package: fails with the fix.
    hand = home / "extensions"
    hand.mkdir(parents=True)
    ext(hand, "first", body=USES_TINYDEP, packages='["interlock-tinydep>=1.0"]')
    exts = load(home)
    assert exts.infos["first"].status == "failed"
    assert exts.infos["first"].message.startswith(
        "needs Python package(s) interlock-tinydep>=1.0; run `interlock ext install")
    exts.close()
    import shutil

    shutil.rmtree(hand / "first")

    installer = Installer(home)
    installer.install(str(first))
    site = packages_dir(home, "first")
    assert (site / "tinydep" / "__init__.py").is_file()
    with pytest.raises(PackageNotFoundError):  # not in Interlock's environment
        distribution("interlock-tinydep")
    exts = load(home)
    assert exts.infos["first"].status == "loaded", exts.infos["first"].message
    assert sys.path[-1] == str(site)  # after Interlock's own environment
    assert exts.tools["tiny"].handler({}, None) == 42
    exts.close()
    monkeypatch.delitem(sys.modules, "tinydep", raising=False)
    importlib.invalidate_caches()

    # The packages are pinned like the extension: a changed one stops it loading.
    original = (site / "tinydep" / "__init__.py").read_text()
    (site / "tinydep" / "__init__.py").write_text("VALUE = 666\n")
    exts = load(home)
    assert exts.infos["first"].status == "changed"
    assert "its Python packages in" in exts.infos["first"].message
    assert "tiny" not in exts.tools
    exts.close()
    (site / "tinydep" / "__init__.py").write_text(original)
    exts = load(home)
    assert exts.infos["first"].status == "loaded", exts.infos["first"].message
    exts.close()
    monkeypatch.delitem(sys.modules, "tinydep", raising=False)

    # A second extension wanting another version of the same package is refused.
    second = ext(src, "second", body=USES_TINYDEP, packages='["interlock-tinydep>=2"]')
    with pytest.raises(ConfigError) as info:
        installer.install(str(second))
    assert "conflicts with interlock-tinydep 1.0 from extension 'first'" in info.value.message
    assert not (home / "extensions" / "second").exists()
    # ... and so is one that disagrees with Interlock's own environment.
    third = ext(src, "third", body=USES_TINYDEP, packages='["msgspec<0.1"]')
    with pytest.raises(ConfigError, match="from Interlock's environment"):
        installer.install(str(third))

    installer.remove("first")
    assert not site.exists()
