"""`interlock run --config PATH`, end to end in real processes: a command hook
(a real sh script) blocks `rm -rf`, the config's `[[permissions]]` deny a tool,
and the transcript shows both blocks. An invalid config refuses to start with
one clear line (exit 2) and no tool runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture

GUARD = textwrap.dedent("""\
    #!/bin/sh
    # Native wire contract: the invocation on stdin, the answer on stdout.
    payload=$(cat)
    case "$payload" in
      *'rm -rf'*) echo '{"decision":"block","reason":"rm -rf is not allowed here"}' ;;
    esac
    exit 0
    """)

CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "no-rm-rf"
    events = ["before_tool_call"]
    matcher = "terminal"
    command = "./guard.sh"
    on_error = "closed"
    timeout = 10

    [[permissions]]
    tool = "write_file"
    action = "deny"

    [[permissions]]
    tool = "terminal"
    pattern = "curl *"
    action = "deny"
    """)

SCRIPT = textwrap.dedent("""\
    - text: clearing the data folder
      tool_calls:
        - {name: terminal, args: {command: "rm -rf ./data"}}
    - match: rm -rf is not allowed here
      tool_calls:
        - {name: write_file, args: {path: notes.txt, content: "gone"}}
    - match: denied by a permission rule
      tool_calls:
        - {name: terminal, args: {command: "curl -s http://127.0.0.1:9/x"}}
    - match: denied by a permission rule
      tool_calls:
        - {name: terminal, args: {command: "echo checked > ran.txt"}}
    - match: exit_code
      text: left the data alone
    """)


def interlock(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "interlock", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def _project(tmp_path: Path, config: str) -> Path:
    project = tmp_path / "project"
    (project / ".interlock").mkdir(parents=True)
    (project / "data").mkdir()
    (project / "data" / "keep.txt").write_text("precious\n")
    guard = project / ".interlock" / "guard.sh"
    guard.write_text(GUARD)
    guard.chmod(0o755)
    (project / ".interlock" / "config.toml").write_text(config)
    (tmp_path / "script.yaml").write_text(SCRIPT)
    return project


def _tool_results(export: Path) -> list[str]:
    records = [json.loads(line) for line in export.read_text().splitlines()]
    return [str(r.get("content")) for r in records if r.get("role") == "tool"]


def test_run_with_config_blocks_by_hook_and_by_permission_rule(tmp_path):
    project = _project(tmp_path, CONFIG)
    proc = interlock("run", "--model", f"scripted:{tmp_path / 'script.yaml'}",
                     "--config", ".interlock/config.toml", "--accept-hooks",
                     "--export", "t.jsonl", "-v", "clean up", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("left the data alone\n")
    rm, write, curl, echo = _tool_results(project / "t.jsonl")
    assert "rm -rf is not allowed here" in rm
    assert "project:no-rm-rf" in rm
    assert "denied by a permission rule" in write
    assert "denied by a permission rule" in curl
    assert '"exit_code": 0' in echo
    assert (project / "data" / "keep.txt").read_text() == "precious\n"
    assert not (project / "notes.txt").exists()
    assert (project / "ran.txt").read_text() == "checked\n"  # allowed tools do run


def test_unapproved_project_hooks_fail_closed_without_accept_hooks(tmp_path):
    project = _project(tmp_path, CONFIG)
    (tmp_path / "script.yaml").write_text(textwrap.dedent("""\
        - tool_calls:
            - {name: terminal, args: {command: "echo hi > ran.txt"}}
        - match: did not answer \\(unapproved\\)
          text: cannot run it
        """))
    proc = interlock("run", "--model", f"scripted:{tmp_path / 'script.yaml'}",
                     "--config", ".interlock/config.toml", "--export", "t.jsonl",
                     "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    (result,) = _tool_results(project / "t.jsonl")
    assert "fail-closed hook 'project:no-rm-rf' did not answer (unapproved)" in result
    assert not (project / "ran.txt").exists()
    assert "interlock hooks approve project:no-rm-rf" in proc.stderr


def test_an_invalid_config_refuses_to_start_with_one_clear_line(tmp_path):
    project = _project(tmp_path, CONFIG.replace('"before_tool_call"', '"before_tool_cal"'))
    (tmp_path / "script.yaml").write_text(
        "- tool_calls:\n    - {name: terminal, args: {command: 'echo ran > ran.txt'}}\n"
        "- text: done\n")
    proc = interlock("run", "--model", f"scripted:{tmp_path / 'script.yaml'}",
                     "--config", ".interlock/config.toml", "--accept-hooks", "go",
                     cwd=project)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "config.toml" in lines[0]
    assert "did you mean 'before_tool_call'" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (project / "ran.txt").exists()  # no tool ran without its hooks
    assert proc.stdout == ""


def test_a_missing_config_file_is_a_clear_error(tmp_path):
    project = _project(tmp_path, CONFIG)
    proc = interlock("run", "--model", f"scripted:{tmp_path / 'script.yaml'}",
                     "--config", "nowhere.toml", "go", cwd=project)
    assert proc.returncode == 2
    assert "nowhere.toml" in proc.stderr
    assert "Traceback" not in proc.stderr
