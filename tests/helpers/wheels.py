"""Build a real wheel of a tiny extension package in a test's tmp dir."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def extension_wheel(tmp_path: Path, *, dist: str, module: str, source: str,
                    entry_point: str, version: str = "0.1.0") -> Path:
    """A wheel of package ``module`` (holding ``source``) registering ``entry_point``
    in the ``interlock.extensions`` group, built offline with hatchling."""
    return package_wheel(tmp_path, dist=dist, module=module, source=source, version=version,
                         entry_points=f'\n[project.entry-points."interlock.extensions"]\n'
                                      f'{entry_point} = "{module}"\n')


def package_wheel(tmp_path: Path, *, dist: str, module: str, source: str,
                  version: str = "0.1.0", entry_points: str = "") -> Path:
    """A wheel of a plain package ``module`` holding ``source``, built offline;
    written to ``tmp_path/dist`` (a folder pip can use with --find-links)."""
    proj = tmp_path / f"wheelproj-{dist}-{version}"
    pkg = proj / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(source)
    (proj / "pyproject.toml").write_text(textwrap.dedent(f'''
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "{dist}"
        version = "{version}"

        [tool.hatch.build.targets.wheel]
        packages = ["{module}"]
        ''') + entry_points)
    out = tmp_path / "dist"
    before = set(out.glob("*.whl")) if out.is_dir() else set()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "-w", str(out), str(proj)],
                   check=True, capture_output=True)
    (wheel,) = set(out.glob("*.whl")) - before
    return wheel
