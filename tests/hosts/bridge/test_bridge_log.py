"""The in-process bridge sends log lines to the state dir's bridge.log once: a
second call in the same process (a host that evaluates in process, a test) must
not stack a second handler, and each line is written once."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from interlock.hosts.bridge._common import logs_off_stderr

pytestmark = pytest.mark.e2e


def test_the_bridge_log_handler_is_installed_once(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_STATE_DIR", str(tmp_path / "state"))
    logger = logging.getLogger("interlock")
    before = list(logger.handlers)
    propagate = logger.propagate
    try:
        for _ in range(3):
            logs_off_stderr()
        added = [h for h in logger.handlers if h not in before]
        assert len(added) == 1
        logger.warning("one line")
        for h in added:
            h.flush()
        text = (tmp_path / "state" / "bridge.log").read_text()
        assert text.count("one line") == 1
    finally:
        for h in [h for h in logger.handlers if h not in before]:
            logger.removeHandler(h)
            h.close()
        logger.propagate = propagate
