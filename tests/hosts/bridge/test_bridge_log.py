"""The in-process bridge sends log lines to the state dir's bridge.log once: a
second call in the same process (a host that evaluates in process, a test) must
not stack a second handler, and each line is written once."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
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


def test_a_line_logged_after_logging_is_first_imported_still_goes_to_the_file(
        tmp_path: Path) -> None:
    """A bridge call that logs nothing imports no logging; the handler goes on
    when logging is imported, so the first line logged after that (Interlock's or
    asyncio's) is in bridge.log and never on stderr, where a host would read it
    as the reason."""
    code = (
        "import sys\n"
        "from interlock.hosts.bridge._common import logs_off_stderr\n"
        "logs_off_stderr()\n"
        "print('logging' in sys.modules)\n"
        "from interlock.engine.logs import logger\n"
        "logger('interlock').warning('first line, key sk-ant-api03-abcdefghijklmnopqrstuvwx')\n"
        "import asyncio\n"
        "asyncio.log.logger.warning('an asyncio line')\n")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                          env={**os.environ, "INTERLOCK_STATE_DIR": str(tmp_path / "state")},
                          timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "False\n", "")
    text = (tmp_path / "state" / "bridge.log").read_text()
    assert "first line, key [REDACTED]" in text
    assert "an asyncio line" in text


def test_every_line_the_bridge_log_takes_is_redacted(tmp_path: Path) -> None:
    """The file takes asyncio's lines and those of any child of "interlock",
    including one made with plain ``logging.getLogger`` by a hook's library:
    records propagated up from a child skip the parent logger's filters, so
    the redaction sits on the file's handler."""
    code = (
        "from interlock.hosts.bridge._common import logs_off_stderr\n"
        "logs_off_stderr()\n"
        "import logging, asyncio\n"
        "logging.getLogger('interlock.hooklib').warning("
        "'child key sk-ant-api03-abcdefghijklmnopqrstuvwx')\n"
        "asyncio.log.logger.error('task failed: sk-ant-api03-zyxwvutsrqponmlkjihgfedc')\n")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                          env={**os.environ, "INTERLOCK_STATE_DIR": str(tmp_path / "state")},
                          timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    text = (tmp_path / "state" / "bridge.log").read_text()
    assert "child key [REDACTED]" in text
    assert "task failed: [REDACTED]" in text
    assert "sk-ant" not in text
