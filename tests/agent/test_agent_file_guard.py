"""The file tools resolve real paths: writes to any protected path (managed dir,
pinned files, through symlinks) and reads of the state dir's secrets or a
process environment are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.agent import (
    call,
    isolated_home,  # noqa: F401 - autouse fixture
    make_agent,
    tool_messages,
)
from interlock import Engine
from interlock.store.paths import managed_dir, state_dir


async def _results(tmp_path: Path, *calls: dict, **options: object) -> list[dict]:
    eng = Engine()
    agent, model = make_agent(eng, [{"tool_calls": list(calls)}, {"text": "done"}], tmp_path,
                              **options)
    try:
        await agent.run("go")
    finally:
        eng.close()
    return [json.loads(m["content"]) for m in tool_messages(model, 1)]


@pytest.mark.parametrize("path", ["{state}/server-tokens.json", "{state}/approvals.json",
                                  "/proc/self/environ", "/proc/1/environ"])
async def test_reads_of_secrets_are_refused(tmp_path, path):
    state = state_dir()
    state.mkdir(parents=True)
    (state / "server-tokens.json").write_text('{"t": "il_secret_token_value"}')
    (state / "approvals.json").write_text('{"project:x": "digest"}')
    [result] = await _results(tmp_path, call("read_file", path=path.format(state=state)))
    assert "refused by the engine" in result["error"]
    assert "il_secret" not in json.dumps(result)


async def test_list_dir_and_grep_of_the_state_dir_are_refused(tmp_path):
    state = state_dir()
    state.mkdir(parents=True)
    (state / "server-tokens.json").write_text('{"t": "il_secret_token_value"}')
    listing, grep = await _results(tmp_path, call("list_dir", path=str(state)),
                                   call("grep", pattern="il_secret", path=str(state)))
    assert "tokens" in listing["error"]
    assert "refused" in grep["error"]


async def test_the_managed_dir_cannot_be_written_even_when_missing(tmp_path):
    target = managed_dir() / "hooks" / "own" / "handler.py"
    [result] = await _results(tmp_path, call("write_file", path=str(target), content="x"))
    assert "protected" in result["reason"]
    assert not managed_dir().exists()


async def test_pinned_files_cannot_be_written_or_edited_directly_or_through_a_symlink(
        tmp_path):
    script = tmp_path / "hooks" / "guard.sh"
    script.parent.mkdir()
    script.write_text("exit 0\n")
    (tmp_path / "alias.sh").symlink_to(script)
    results = await _results(
        tmp_path, call("write_file", path="hooks/guard.sh", content="exit 1\n"),
        call("edit_file", path="hooks/guard.sh", old="exit 0", new="exit 1"),
        call("write_file", path="alias.sh", content="exit 1\n"),
        pinned=lambda: [script])
    assert script.read_text() == "exit 0\n"
    assert all("protected" in r["reason"] for r in results)


async def test_ordinary_writes_and_edits_still_work(tmp_path):
    (tmp_path / "a.txt").write_text("one two\n")
    write, edit = await _results(tmp_path, call("write_file", path="new/b.txt", content="hi"),
                                 call("edit_file", path="a.txt", old="two", new="three"))
    assert write == {"path": "new/b.txt", "bytes": 2, "created": True}
    assert edit == {"path": "a.txt", "replaced": 1}
    assert (tmp_path / "new" / "b.txt").read_text() == "hi"
    assert (tmp_path / "a.txt").read_text() == "one three\n"
