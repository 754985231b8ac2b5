"""The terminal's OS sandbox, shared by tests/agent and tests/adversarial: a
policy project, a run of terminal commands, and the skip without bubblewrap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.agent import call, make_agent, tool_messages
from interlock import Engine
from interlock.agent.sandbox import status

needs_bwrap = pytest.mark.skipif(not status().available,
                                 reason=f"no usable bubblewrap here: {status().detail}")

BUILD = "p=.inter; p=${p}lock"
"""A path built at run time: the argument scan cannot see it."""


def _project(tmp_path: Path) -> Path:
    (tmp_path / ".interlock").mkdir(parents=True)
    (tmp_path / ".interlock" / "config.toml").write_text("# policy\n")
    return tmp_path


async def _run_terminal(tmp_path: Path, *commands: str, **options: object
                        ) -> list[dict[str, object]]:
    eng = Engine()
    steps = [{"tool_calls": [call("terminal", command=c) for c in commands]}, {"text": "done"}]
    agent, model = make_agent(eng, steps, tmp_path, **options)
    try:
        await agent.run("go")
    finally:
        eng.close()
    return [json.loads(m["content"]) for m in tool_messages(model, 1)]
