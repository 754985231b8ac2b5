"""Configured command hooks end to end: HOOK.md folders with dialects, and imports that run."""

from __future__ import annotations

import json

from helpers.cfg import World, run, world
from interlock import Verdict
from interlock.testing import fire

__all__ = ["world"]


def test_a_moltis_hook_md_folder_runs_in_its_own_folder(world: World) -> None:
    folder = world.project / "hooks" / "audit"
    world.write(folder / "HOOK.md", """
        +++
        name = "audit"
        events = ["BeforeToolCall"]
        command = "./handler.sh"
        timeout = 5
        dialect = "moltis"
        [requires]
        os = ["linux", "darwin"]
        bins = ["sh"]
        +++
        Writes where it ran, and blocks rm (exit 1, Moltis style).
        """)
    world.write(folder / "handler.sh", """
        #!/bin/sh
        payload=$(cat)
        pwd > ran-in.txt
        case "$payload" in
          *'"event":"BeforeToolCall"'*'rm -rf'*) echo "Blocked dangerous rm command" >&2; exit 1;;
        esac
        exit 0
        """, mode=0o755)
    reg = world.registry(accept=True)
    reg.load()
    [entry] = reg.hooks
    assert entry.declared.events == ("before_tool_call",)
    out = fire(reg.engine, "before_tool_call", tool_name="terminal",
               args={"command": "rm -rf /"})
    assert out.verdict is Verdict.BLOCK
    assert out.reason == "Blocked dangerous rm command"
    assert (folder / "ran-in.txt").read_text().strip() == str(folder)
    ok = fire(reg.engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
    assert ok.verdict is Verdict.NONE


def test_an_imported_hermes_config_runs_after_approval(world: World) -> None:
    script = world.write(world.root / "hermes" / "block.sh", """
        #!/bin/sh
        input=$(cat)
        case "$input" in
          *'rm -rf'*) printf '{"decision": "block", "reason": "hermes says no"}\\n';;
          *) printf '{}\\n';;
        esac
        """, mode=0o755)
    cfg = world.write(world.root / "hermes" / "config.yaml", f"""
        hooks:
          pre_tool_call:
            - matcher: terminal
              command: "{script}"
              timeout: 5
              fail_closed: true
        """)
    code, _, err = run(world, "import", "--from", "hermes", str(cfg), "-o",
                       str(world.project / "config.toml"))
    assert code == 0, err
    payload = world.write(world.root / "p.json", '{"args": {"command": "rm -rf /"}}')
    code, out, _ = run(world, "test", "before_tool_call", "--payload-file", str(payload),
                       "--json")
    assert json.loads(out)["hooks"][0]["failure"] == "unapproved"
    assert run(world, "approve", "--all")[0] == 0
    code, out, _ = run(world, "test", "before_tool_call", "--payload-file", str(payload),
                       "--json")
    data = json.loads(out)
    assert data["decision"] == "block"
    assert data["reason"] == "hermes says no"
    assert data["hook"] == "project:block"
