"""Helpers shared by the tests in every folder: ``from helpers.cfg import World``.

``tests/`` is on ``sys.path`` (its conftest.py puts it there), so this package
imports the same way from any test folder.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
"""The tests/ folder (tests/fixtures, tests/data, tests/typecheck)."""
REPO = TESTS.parent
"""The repository's root (docs/, examples/, bench/, pyproject.toml)."""
