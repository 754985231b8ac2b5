"""A second look at the protected set: what the engine runs from.

Protecting only the ``interlock/`` package leaves its site-packages open: a
``.pth`` file there (``import os; ...``) runs at the start of every later
``interlock`` process, unconfined; so does a changed dependency, or a venv's
``pyvenv.cfg`` pointing ``home`` at another Python.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from interlock.agent.protect import ProtectedPaths, engine_install


def test_an_engine_in_a_venv_protects_the_whole_venv(tmp_path: Path) -> None:
    venv = tmp_path / "project" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "interlock").mkdir()
    base = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sys; print(sys.base_prefix)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    guard = ProtectedPaths([engine_install(site / "interlock", venv, Path(base))])
    for planted in (site / "evil.pth", site / "sitecustomize.py", site / "yaml" / "__init__.py",
                    venv / "pyvenv.cfg", venv / "bin" / "interlock"):
        assert guard.root_of(str(planted), tmp_path) is not None, planted


def test_a_system_install_protects_its_site_packages(tmp_path: Path) -> None:
    site = tmp_path / "usr" / "lib" / "python3" / "dist-packages"
    got = engine_install(site / "interlock", tmp_path / "usr", tmp_path / "usr")
    assert got == site.resolve()


def test_an_editable_install_protects_its_source_package(tmp_path: Path) -> None:
    package = tmp_path / "src" / "interlock"
    assert engine_install(package, tmp_path / "venv", tmp_path / "base") == package
