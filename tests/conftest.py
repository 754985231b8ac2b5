from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import old_names
from interlock import Engine
from interlock.testing import RecordingSink

old_names.install()

TESTS = Path(__file__).resolve().parent

E2E_FOLDERS = ("adversarial", "console", "realclients")
"""Folders whose every test runs real servers, agents or browsers: marked ``e2e``."""
SLOW_FOLDERS = (("adapters", "frameworks"),)
"""Folders whose every module imports a heavy library (an agent framework: seconds
each): marked ``slow``; `make test-fast` does not even collect them."""


MODULE_MARK = re.compile(r"^pytestmark = pytest\.mark\.(\w+)\b", re.MULTILINE)
"""A module's own mark for all its tests, on one line of its own (a list of marks
is left to pytest)."""


def path_marks(path: Path) -> set[str]:
    """The marks its folder and its name give every test under ``path`` (a module or
    a folder)."""
    try:
        parts = path.relative_to(TESTS).parts
    except ValueError:
        return set()
    marks: set[str] = set()
    if parts and (parts[0] in E2E_FOLDERS or path.stem.endswith("_e2e")):
        marks.add("e2e")
    if any(parts[:len(f)] == f for f in SLOW_FOLDERS):
        marks.add("slow")
    return marks


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``make test-fast`` skips ``slow`` and ``e2e``. A test is ``e2e`` when its module
    says so (``pytestmark = pytest.mark.e2e``), its file is named ``*_e2e.py``, or it
    lives in one of E2E_FOLDERS; a test is ``slow`` when it lives in one of
    SLOW_FOLDERS, or its module, slow but not end to end, sets
    ``pytestmark = pytest.mark.slow``."""
    for item in items:
        for mark in sorted(path_marks(Path(str(item.path)))):
            item.add_marker(getattr(pytest.mark, mark))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A folder or module whose every test ``-m`` deselects is not even imported:
    under ``make test-fast``, the end-to-end and slow modules' imports (an MCP
    client, a framework) took seconds of each worker's collection."""
    expression = config.option.markexpr
    if not expression:
        return None
    marks = path_marks(collection_path)
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        try:
            marks |= set(MODULE_MARK.findall(collection_path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            return None
    return True if marks and deselects_all(expression, marks) else None


def deselects_all(expression: str, marks: set[str]) -> bool:
    """Whether ``-m expression`` deselects every test carrying ``marks``, whatever
    other marks each test has: false for every choice of the other names the
    expression holds. Anything unexpected (marks with arguments, a changed
    pytest) says no, and the tests are collected and deselected as usual."""
    try:
        from _pytest.mark.expression import Expression

        compiled = Expression.compile(expression)
        free = sorted(compiled.idents() - marks)
        if len(free) > 8:
            return False
        return not any(compiled.evaluate(_matcher(marks | set(extra)))
                       for n in range(len(free) + 1)
                       for extra in itertools.combinations(free, n))
    except Exception:
        return False


def _matcher(marks: set[str]) -> Callable[..., bool]:
    def matches(name: str, /, **kwargs: object) -> bool:
        if kwargs:
            raise ValueError(f"-m {name}(...): not judged before collection")
        return name in marks

    return matches


@pytest.fixture(autouse=True)
def _private_store(tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Hosts record into the default store: keep it out of the real state dir."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("INTERLOCK_STORE", str(base / "interlock.db"))
    # Consent and state follow each test's own home, never the developer's: a test
    # that names no home of its own gets this run's, not ~/.config/interlock.
    monkeypatch.setenv("INTERLOCK_HOME", str(base / "interlock-home"))
    monkeypatch.delenv("INTERLOCK_STATE_DIR", raising=False)
    # A bridge with no server evaluates in process, as it did before it could start
    # its own (tests of that server, tests/hosts/bridge/test_bridge_autostart.py, turn it back on).
    monkeypatch.setenv("INTERLOCK_BRIDGE_AUTOSTART", "0")
    # Output goes to pipes, at full width, under pytest-xdist too (its workers set COLUMNS).
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def engine(sink: RecordingSink):
    eng = Engine(sinks=[sink])
    yield eng
    eng.close()


@pytest.fixture
def eng():
    """An engine with no sinks (hooks untimed), as a host without an audit log has."""
    eng = Engine()
    yield eng
    eng.close()
