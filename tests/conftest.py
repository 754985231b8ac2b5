from __future__ import annotations

import pytest

from interlock import Engine
from interlock.testing import RecordingSink


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
