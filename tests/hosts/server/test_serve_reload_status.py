"""A live edit that cannot be applied keeps the last good revision, and the
running server's `/v1/status` says so until the files are fixed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers.serve import GUARD_CONFIG, NO_RM, Serve, wait_for

pytestmark = pytest.mark.e2e

CONFIG = GUARD_CONFIG
GUARD = NO_RM
RM = {"tool_name": "terminal", "args": {"command": "rm -rf /"}, "session_id": "s1"}


def test_a_refused_live_edit_is_named_in_status_and_the_last_good_revision_serves(
        tmp_path: Path) -> None:
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}).start()
    try:
        def status() -> dict[str, Any]:
            code, body = serve.request("GET", "/v1/status")
            assert code == 200, body
            assert isinstance(body, dict)
            return body

        good = status()
        assert good["config_error"] is None
        config = serve.project / ".interlock" / "config.toml"
        config.write_text(CONFIG.replace('events = ["before_tool_call"]',
                                         'events = ["before_tool_cal"]'))
        broken = wait_for(lambda: status()["config_error"], what="the refused edit in status")
        assert "config.toml" in broken
        assert "before_tool_cal" in broken
        assert status()["revision"] == good["revision"]
        assert serve.event(RM)["decision"] == "block"  # the last good revision answers
        config.write_text(CONFIG)
        wait_for(lambda: status()["config_error"] is None, what="the error to clear")
    finally:
        serve.stop()
