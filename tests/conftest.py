from __future__ import annotations

import pytest

from interlock import Engine
from interlock.testing import RecordingSink


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def engine(sink: RecordingSink):
    eng = Engine(sinks=[sink])
    yield eng
    eng.close()
