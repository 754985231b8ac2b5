"""Tables that fit 80 and 120 columns, `--wide`, `deadletter show ID` and
`audit --follow` against a real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from typer.testing import CliRunner

from helpers.stores import BACKENDS, fresh_url
from interlock import Engine, block
from interlock.hosts.cli import build_app
from interlock.hosts.cli._table import render
from interlock.reliability.sinks import attach
from interlock.testing import fire

pytestmark = pytest.mark.e2e

REASON = ("the command deletes files under the repository root; name the paths to "
          "remove one by one, or move them to a scratch folder first")
HEADERS = ["AT", "SESSION", "EVENT", "HOOK", "VERDICT", "REASON"]
ROWS = [["2026-01-01 12:00:00", "0b6f6a3e-3c53-4d5e-9d4c-6f0c1f1d2a11", "before_tool_call",
         "project:destructive-guard", "block", REASON],
        ["2026-01-01 12:00:01", "s2", "after_tool_call", "user:notes", "none", "-"]]


def _words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("columns", [80, 120])
def test_a_table_fits_and_keeps_every_word_whole(columns: int) -> None:
    out = render(HEADERS, ROWS, wrap=("REASON",), drop=("SESSION", "AT"), columns=columns)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert len(lines) > 3  # the reason wrapped
    for word in _words(REASON):
        assert word in _words(out)  # no word cut in two
    reason_column = lines[0].index("REASON")
    for line in lines[2:]:  # continuation lines stay in the reason's column
        if line.startswith(" "):
            assert line[:reason_column].strip() == ""


def test_wide_prints_every_column_in_full_on_one_line() -> None:
    out = render(HEADERS, ROWS, wrap=("REASON",), drop=("SESSION",), wide=True, columns=80)
    lines = out.splitlines()
    assert len(lines) == 3
    assert REASON in lines[1]
    assert ROWS[0][1] in lines[1]


def test_an_empty_column_goes_before_a_useful_one() -> None:
    rows = [["a" * 30, "", REASON]]
    out = render(["NAME", "SHADOWS", "REASON"], rows, wrap=("REASON",), columns=50)
    assert "SHADOWS" not in out
    assert max(len(line) for line in out.splitlines()) <= 50


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("tables") / "interlock.db"
    engine = Engine()

    @engine.on("before_tool_call", name="notes", on_error="open")
    def notes(event):
        raise RuntimeError("notes service down: " + REASON)

    attached = attach(engine, url=str(path), tracing=False)
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
    attached.close()
    engine.close()
    return str(path)


def run(*args: str, columns: int | None = None):
    env = {"COLUMNS": str(columns)} if columns else {}
    return CliRunner().invoke(build_app(), list(args), env=env)  # type: ignore[arg-type]


@pytest.mark.parametrize("columns", [80, 120])
def test_deadletter_list_and_audit_fit(store: str, columns: int) -> None:
    for args in (["deadletter", "list"], ["audit"]):
        res = run(*args, "--store", store, columns=columns)
        assert res.exit_code == 0, res.output
        assert max(len(line) for line in res.stdout.splitlines()) <= columns, res.stdout
        assert "scratch" in _words(res.stdout)


def test_deadletter_show_prints_one_in_full(store: str) -> None:
    listed = json.loads(run("deadletter", "list", "--store", store, "--json").stdout)
    ident = str(listed[0]["id"])
    res = run("deadletter", "show", ident, "--store", store, columns=80)
    assert res.exit_code == 0, res.output
    assert "code:notes" in res.stdout
    assert "crash" in res.stdout
    assert "scratch folder first" in " ".join(res.stdout.split())
    shown = json.loads(run("deadletter", "show", ident, "--store", store, "--json").stdout)
    assert shown == listed[0]
    missing = run("deadletter", "show", "999", "--store", store)
    assert missing.exit_code == 2
    assert "no dead letter with ID 999" in missing.stderr


@pytest.mark.parametrize("kind", BACKENDS)
def test_audit_follow_prints_decisions_as_they_are_written(kind: str, tmp_path) -> None:
    with fresh_url(kind, tmp_path) as url:
        _follow(url)


def _follow(path: str) -> None:
    engine = Engine()

    @engine.on("before_tool_call", name="guard")
    def guard(event):
        return block("no " + event.args["command"])

    attached = attach(engine, url=str(path), tracing=False)
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "first"})
    attached.store.flush(5)
    proc = subprocess.Popen([sys.executable, "-m", "interlock", "audit", "--follow", "--json",
                             "--store", str(path)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "100"})
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["reason"] == "no first"
        fire(engine, "before_tool_call", tool_name="terminal", args={"command": "second"})
        attached.store.flush(5)
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()))
        reader.start()
        reader.join(30)  # bounded: the follower polls every half second
        assert got, "audit --follow printed nothing new"
        assert json.loads(got[0])["reason"] == "no second"
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
        attached.close()
        engine.close()


def test_rows_that_arrive_later_line_up_under_the_header_printed_first() -> None:
    """`audit --follow` lays its columns out once: a later record with a longer
    hook name wraps in its column instead of shifting the others, and a longer
    reason has the room left on the line."""
    from interlock.hosts.cli._table import fit, more_rows

    layout = fit(HEADERS, ROWS[1:], wrap=("REASON",), drop=("SESSION", "AT"), columns=80,
                 fill=True)
    first = more_rows(HEADERS, ROWS[1:], layout, header=True).splitlines()
    name = "project:a-much-longer-hook-name-than-before"
    later = more_rows(HEADERS, [["2026-01-01 12:00:02", "s3", "before_tool_call", name,
                                 "block", REASON]], layout).splitlines()
    header = first[0]
    assert max(len(line) for line in first + later) <= 80
    assert later[0][header.index("VERDICT"):].startswith("block")
    hook_at, verdict_at = header.index("HOOK"), header.index("VERDICT")
    assert "".join(line[hook_at:verdict_at].strip() for line in later) == name
    reason_at = header.index("REASON")
    assert " ".join(line[reason_at:].strip() for line in later).split() == REASON.split()
