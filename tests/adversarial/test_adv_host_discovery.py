"""Which project a command runs in: from a subfolder every command and the bridge
still find (and apply) the project's blocking hook; outside any project they say
so; and a repository nested inside another project's folder does not inherit it."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from _host_world import World

CLAUDE_RM = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": "rm -rf ./data"}, "tool_use_id": "t1"}


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = World(tmp_path)
    w.pinned_outside()
    w.ok("hooks", "approve", "--all")
    (w.root / "src" / "data").mkdir()
    (w.root / "src" / "data" / "keep.txt").write_text("precious\n")
    return w


def _script(tmp: Path, command: str) -> Path:
    path = tmp / "script.yaml"
    path.write_text(textwrap.dedent(f"""\
        - tool_calls:
            - {{name: terminal, args: {{command: "{command}"}}}}
        - text: finished
        """))
    return path


def test_run_from_a_subfolder_applies_the_projects_blocking_hook(world: World) -> None:
    src = world.root / "src"
    done = world.cli("run", "--model", f"scripted:{_script(world.tmp, 'rm -rf ./data')}",
                     "--export", str(world.tmp / "t.jsonl"), "-v", "clean up", cwd=src)
    assert done.returncode == 0, done.stderr
    assert f"project root: {world.root.resolve()}" in done.stderr
    tool = [json.loads(line) for line in (world.tmp / "t.jsonl").read_text().splitlines()
            if json.loads(line).get("role") == "tool"]
    assert "v1: no rm -rf" in str(tool[0]["content"])
    assert (src / "data" / "keep.txt").read_text() == "precious\n"
    assert "warning" not in done.stderr


def test_hooks_test_from_a_subfolder_applies_the_projects_blocking_hook(world: World) -> None:
    payload = world.write(world.tmp / "p.json", '{"args": {"command": "rm -rf ./data"}}')
    src = world.root / "src"
    done = world.cli("hooks", "test", "before_tool_call", "--tool", "terminal",
                     "--payload-file", str(payload), "--json", cwd=src)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["decision"], out["hook"]) == ("block", "project:guard")
    assert out["project_root"] == str(world.root.resolve())
    listed = world.cli("hooks", "list", cwd=src / "data")
    assert listed.stdout.splitlines()[0] == f"project root: {world.root.resolve()}"
    assert "project:guard" in listed.stdout


def test_the_bridge_from_a_subfolder_applies_the_projects_blocking_hook(
        world: World) -> None:
    src = world.root / "src"
    done = world.cli("bridge", "claude", cwd=src,
                     stdin=json.dumps({**CLAUDE_RM, "cwd": str(src)}))
    assert done.returncode == 2, (done.stdout, done.stderr)
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "v1: no rm -rf" in answer["permissionDecisionReason"]


def test_serve_from_a_subfolder_serves_the_project_and_says_which(world: World) -> None:
    with world.serve(cwd=world.root / "src") as server:
        assert f"project root: {world.root.resolve()}" in server.startup
        assert server.status()["project_root"] == str(world.root.resolve())
        assert server.decide("rm -rf ./data")[0] == "block"


def test_outside_any_project_commands_warn_and_validate_fails(tmp_path: Path) -> None:
    w = World(tmp_path)  # a repository with no .interlock/, no user or managed hooks
    listed = w.cli("hooks", "list", "--json", cwd=w.root / "src")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert (data["project_root"], data["project_found"]) == (str((w.root / "src").resolve()),
                                                             False)
    warnings = [line for line in listed.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert "no .interlock/ found" in warnings[0]
    validated = w.cli("hooks", "validate", cwd=w.root / "src")
    assert validated.returncode != 0
    assert "no project" in validated.stderr
    ran = w.cli("run", "--model", f"scripted:{_script(tmp_path, 'true')}", "go",
                cwd=w.root / "src")
    assert "interlock: warning: no .interlock/ found" in ran.stderr
    # With a user hook, the same place is guarded: no warning, validate passes.
    w.write(w.home / "config.toml", '[[hooks]]\nname = "g"\nevents = ["user_input"]\n'
                                    f'command = ["{sys.executable}", "-c", "print(1)"]\n'
                                    'on_error = "open"\n')
    validated = w.cli("hooks", "validate", cwd=w.root / "src")
    assert validated.returncode == 0, validated.stderr
    assert "warning" not in validated.stderr


def test_a_nested_repository_does_not_inherit_a_parent_folders_project(
        tmp_path: Path) -> None:
    outer = World(tmp_path)
    outer.pinned_outside()
    outer.ok("hooks", "approve", "--all")
    inner = outer.root / "vendor" / "lib"
    (inner / ".git").mkdir(parents=True)
    payload = outer.write(tmp_path / "p.json", '{"args": {"command": "rm -rf ./data"}}')
    # A plain subfolder of the outer project: the outer guard applies.
    plain = outer.cli("hooks", "test", "before_tool_call", "--tool", "terminal",
                      "--payload-file", str(payload), "--json", cwd=outer.root / "vendor")
    assert json.loads(plain.stdout)["decision"] == "block"
    # The nested repository: the walk stops at its .git; the outer project is not its.
    nested = outer.cli("hooks", "test", "before_tool_call", "--tool", "terminal",
                       "--payload-file", str(payload), "--json", cwd=inner)
    out = json.loads(nested.stdout)
    assert out["project_root"] == str(inner.resolve())
    assert out["decision"] != "block"
    assert "no .interlock/ found" in nested.stderr
    listed = json.loads(outer.ok("hooks", "list", "--json", cwd=inner))
    assert listed["project_found"] is False
    assert "project:guard" not in [h["name"] for h in listed["hooks"]]


def test_bridge_install_from_a_subfolder_pins_the_project_root(world: World) -> None:
    out = world.ok("bridge", "install", "claude", cwd=world.root / "src")
    assert out.splitlines()[0] == f"project root: {world.root.resolve()}"
    settings = (world.root / ".claude" / "settings.json").read_text()
    assert f"--project {world.root.resolve()}" in settings.replace('\\"', "")
    assert not (world.root / "src" / ".claude").exists()
