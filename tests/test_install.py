"""How Interlock is installed: the README's Install section, the demo's runtime-only
venv, the wheel check in CI and the guard's parser as a base dependency."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _install_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Install\n(.*?)^## ", readme, re.S | re.M)
    assert match, "README.md has no '## Install' section"
    return match.group(1)


def test_the_guard_parser_is_a_base_dependency() -> None:
    # The README's config enables destructive-guard: a base install must load it.
    deps = {re.split(r"[<>=\[ ]", d, maxsplit=1)[0].lower()
            for d in _pyproject()["project"]["dependencies"]}
    assert {"tree-sitter", "tree-sitter-bash"} <= deps


def test_install_section_covers_every_way_and_every_extra() -> None:
    section = _install_section()
    for way in ("pip install -e .", "git+", "pipx install", "uv tool install"):
        assert way in section, f"Install section does not show {way!r}"
    for extra in _pyproject()["project"]["optional-dependencies"]:
        assert re.search(rf"^- `{re.escape(extra)}`: \S", section, re.M), (
            f"Install section has no one-line entry for the {extra!r} extra")


def test_no_install_line_pretends_the_package_is_on_pypi() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # `pip install interlock` / `pip install 'interlock[x]'` resolve only on PyPI.
    # A requirement with ` @ git+URL` names where it comes from, so it is fine.
    bad = re.findall(r"(?:pip|pipx|uv tool) install (?:-U )?'?interlock(?:\[[a-z,]+\])?"
                     r"(?!\S|\s*@)", readme)
    assert not bad, bad
    assert "not published on PyPI" in _install_section()


def test_make_demo_installs_runtime_dependencies_only() -> None:
    out = subprocess.run(["make", "-n", "-B", "demo"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    installs = [line for line in out.splitlines() if "pip install" in line]
    assert installs, out
    assert all("[dev]" not in line for line in installs), installs
    assert any(line.rstrip().endswith("-e .") for line in installs), installs
    test = subprocess.run(["make", "-n", "-B", "unit"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout
    assert "-e '.[dev]'" in test


def test_ci_runs_the_wheel_check_after_the_tests() -> None:
    lines = [line.split("#")[0].strip()
             for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "make wheel-check" in lines
    assert lines.index("make test") < lines.index("make wheel-check")
    plan = subprocess.run(["make", "-n", "-B", "wheel-check"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout
    # Build a wheel, install that wheel (not the checkout) in a fresh venv, run the demo.
    assert "-m build" in plan
    assert "--wheel" in plan
    assert re.search(r"-m venv \S*wheel-check/venv", plan)
    assert re.search(r"pip install .*\.whl", plan)
    assert "venv/bin/interlock demo" in plan


def test_version_flag() -> None:
    done = subprocess.run([sys.executable, "-m", "interlock", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"interlock {version('interlock')}"


def test_no_hint_in_the_code_or_docs_installs_the_package_from_pypi() -> None:
    """Fix hints name the extra and point at the README's Install section, through
    one helper; none says `pip install 'interlock[x]'`, which only PyPI resolves."""
    pypi = re.compile(r"""(?:pip|pipx|uv tool) install (?:-U )?['"]?interlock\[[a-z,-]+\]"""
                      r"(?![^\s@]*\s*@)")  # `... @ git+URL` says where it comes from
    bad = [f"{p.relative_to(ROOT)}: {m.group(0)}"
           for p in [*(ROOT / "src").rglob("*.py"), *(ROOT / "docs").rglob("*.md")]
           for m in pypi.finditer(p.read_text(encoding="utf-8"))]
    assert not bad, bad


def test_the_extra_hint_names_the_extra_and_the_install_section() -> None:
    from interlock.engine.errors import install_extra

    hint = install_extra("server")
    assert hint == ("install the server extra: see README.md, Install "
                    "(pip install -e '.[server]' from a checkout)")
    for extra in _pyproject()["project"]["optional-dependencies"]:
        assert f"'.[{extra}]'" in install_extra(extra)
