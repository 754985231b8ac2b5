"""`interlock status`, `deadletter list|resolve` and `audit` against a real store."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from interlock import Engine, HookFailure, block
from interlock.engine.hooks import Hook
from interlock.hosts.cli import build_app
from interlock.reliability import BreakerBook, Policy, wrap
from interlock.reliability.sinks import attach
from interlock.testing import fire

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "interlock.db"
    engine = Engine()

    @engine.on("before_tool_call", name="guard")
    def guard(event):
        if "rm" in event.args.get("command", ""):
            return block("no deleting; password=hunter2hunter2")
        return None

    @engine.on("before_tool_call", name="notes", on_error="open")
    def notes(event):
        raise RuntimeError("notes service down")

    async def down(inv):
        raise HookFailure("remote down")

    book = BreakerBook()
    engine.register(Hook(name="remote", events=("before_llm_call",), digest="d",
                         executor=wrap(down, Policy(), breakers=book)))
    attached = attach(engine, url=str(path), breakers=book, tracing=False)
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"},
         session_id="alpha")
    fire(engine, "before_tool_call", tool_name="terminal", args={"command": "rm -r x"},
         session_id="beta")
    for _ in range(3):
        fire(engine, "before_llm_call", messages=[], model="m", session_id="gamma")
    attached.close()
    engine.close()
    return str(path)


def run(*args: str):
    return CliRunner().invoke(build_app(), list(args), catch_exceptions=False)


def test_audit_filters_and_json(store_path):
    res = run("audit", "--store", store_path, "--verdict", "block")
    assert res.exit_code == 0, res.output
    assert "code:guard" in res.output
    assert "beta" in res.output
    assert "hunter2hunter2" not in res.output
    assert "[REDACTED]" in res.output
    res = run("audit", "--store", store_path, "--session", "alpha", "--json")
    rows = json.loads(res.output)
    assert {r["hook"] for r in rows} == {"code:guard", "code:notes"}
    assert all(r["session_id"] == "alpha" for r in rows)
    res = run("audit", "--store", store_path, "--hook", "remote", "--since", "1h", "--json")
    assert len(json.loads(res.output)) == 3
    res = run("audit", "--store", store_path, "--until", "2000-01-01T00:00", "--json")
    assert json.loads(res.output) == []


def test_audit_mistakes_are_one_line(store_path):
    res = run("audit", "--store", store_path, "--verdict", "blok")
    assert res.exit_code == 2
    assert "unknown verdict 'blok'" in res.output
    assert "Traceback" not in res.output
    res = run("audit", "--store", store_path, "--since", "yesterday")
    assert res.exit_code == 2
    assert "--since" in res.output
    assert "30m" in res.output
    res = run("audit", "--store", store_path, "--event", "before_tool_cal")
    assert res.exit_code == 2
    assert "before_tool_call" in res.output


def test_deadletter_list_and_resolve(store_path, tmp_path):
    import shutil

    path = str(tmp_path / "copy.db")
    shutil.copy(store_path, path)
    res = run("deadletter", "list", "--store", path, "--json")
    letters = json.loads(res.output)
    assert [(d["hook"], d["mode"]) for d in letters] == [
        ("code:notes", "crash"), ("code:remote", "crash"), ("code:remote", "crash"),
        ("code:remote", "crash")]
    first = letters[0]["id"]
    res = run("deadletter", "resolve", str(first), "--store", path, "--note", "restarted",
              "--by", "ops")
    assert res.exit_code == 0
    assert f"dead letter {first} resolved" in res.output
    res = run("deadletter", "resolve", str(first), "--store", path)
    assert res.exit_code == 0
    assert "already resolved" in res.output
    res = run("deadletter", "resolve", "424242", "--store", path)
    assert res.exit_code == 2
    assert "no dead letter with ID 424242" in res.output
    res = run("deadletter", "list", "--store", path, "--unresolved")
    assert res.exit_code == 0
    assert "code:notes" not in res.output
    assert res.output.count("code:remote") == 3
    res = run("deadletter", "list", "--store", path, "--json")
    kept = json.loads(res.output)[0]
    assert (kept["id"], kept["resolved_by"], kept["note"]) == (first, "ops", "restarted")


def test_status_summarises(store_path):
    res = run("status", "--store", store_path)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "4 unresolved of 4" in out
    assert "breakers not closed" in out
    assert "code:remote" in out
    assert "open" in out
    assert "code:guard" in out
    data = json.loads(run("status", "--store", store_path, "--json").output)
    assert data["counts"] == {"dead_letters": 4, "unresolved": 4, "audit": 6}
    assert data["hooks"]["code:guard"]["verdicts"] == {"block": 1, "none": 1}
    assert data["breakers"][0]["state"] == "open"


def test_commands_without_a_store(tmp_path):
    missing = str(tmp_path / "none" / "interlock.db")
    for args in (["status"], ["audit"], ["deadletter", "list"]):
        res = run(*args, "--store", missing)
        assert res.exit_code == 0
        assert "no store yet" in res.output
    assert not (tmp_path / "none").exists()  # reading never creates a store
    res = run("deadletter", "resolve", "1", "--store", missing)
    assert res.exit_code == 2
