from __future__ import annotations

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``make test-fast`` skips ``slow`` and ``e2e``. A test is ``e2e`` when its module
    says so (``pytestmark = pytest.mark.e2e``), its file is named ``*_e2e.py``, or it
    lives in one of E2E_FOLDERS; a test is ``slow`` when it lives in one of
    SLOW_FOLDERS, or its module, slow but not end to end, sets
    ``pytestmark = pytest.mark.slow``."""
    for item in items:
        path = Path(str(item.path))
        try:
            parts = path.relative_to(TESTS).parts
        except ValueError:
            continue
        if parts[0] in E2E_FOLDERS or path.stem.endswith("_e2e"):
            item.add_marker(pytest.mark.e2e)
        if any(parts[:len(f)] == f for f in SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)


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
