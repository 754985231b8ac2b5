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
    proj = tmp_path / "wheelproj"
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

        [project.entry-points."interlock.extensions"]
        {entry_point} = "{module}"

        [tool.hatch.build.targets.wheel]
        packages = ["{module}"]
        '''))
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "-w", str(out), str(proj)],
                   check=True, capture_output=True)
    (wheel,) = out.glob("*.whl")
    return wheel
