"""`interlock demo` reads as a story at 80 columns: continuation lines stay indented,
the blocked command is shown, results name their tool in call order, reasons whole."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.e2e

STARTS = ("user ", "model ", "  hook ", "  run ", "  result ", "  engine ", "  sandbox ",
          "─", "╭", "│", "╰", "hooks:", "  ", "the engine", "sandbox:", "extensions:")


def test_the_demo_fits_80_columns_as_a_story(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "interlock", "demo"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    for line in lines:  # a wrapped line never restarts at column 0
        assert not line or line.startswith(STARTS), line
    prose = " ".join(" ".join(lines).split())
    assert "rm -rf / --no-preserve-root" in prose  # the blocked command is shown
    assert "deleting / or ~ would destroy the machine" in prose  # the reason, whole
    assert "remove specific paths inside the project" in prose  # and the hint
    # The two calls of one reply: results labelled, in the order of the calls.
    terminal = prose.index("result terminal ok")
    read = prose.index("result read_file ok")
    assert prose.index("run terminal {'command': 'rm -rf build && ls'}") < terminal < read
