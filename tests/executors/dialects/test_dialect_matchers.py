"""Matchers in a host's tool names work on dialect hooks; matchers no tool can
match are configuration errors with a did-you-mean."""

from __future__ import annotations

import pytest

from helpers.cfg import World, world
from interlock import ConfigError, Verdict
from interlock.executors.dialects._matchers import check, for_dialect
from interlock.testing import fire

__all__ = ["world"]

# A Claude guard as real scripts are written: it reads Claude's argument names.
GUARD = """
    #!/bin/sh
    input=$(cat)
    case "$input" in
      *'"tool_name":"Bash"'*'rm -rf'*) echo "no rm" >&2; exit 2;;
      *'"tool_name":"Edit"'*'"file_path":"/etc/'*) echo "not /etc" >&2; exit 2;;
    esac
    exit 0
    """


def _hook(world: World, matcher: str, dialect: str = "claude") -> None:
    world.write(world.project / "guard.sh", GUARD, mode=0o755)
    world.config(world.project, f"""
        [[hooks]]
        name = "guard"
        events = ["before_tool_call"]
        matcher = "{matcher}"
        command = "./guard.sh"
        dialect = "{dialect}"
        """)


def test_a_claude_hook_matching_bash_fires_on_terminal(world: World) -> None:
    _hook(world, "Bash")
    reg = world.registry(accept=True)
    reg.load()
    out = fire(reg.engine, "before_tool_call", tool_name="terminal",
               args={"command": "rm -rf /"})
    assert out.verdict is Verdict.BLOCK
    assert out.reason == "no rm"
    # ... and only there.
    other = fire(reg.engine, "before_tool_call", tool_name="read_file", args={"path": "x"})
    assert other.verdict is Verdict.NONE


def test_a_claude_edit_guard_reads_file_path(world: World) -> None:
    _hook(world, "Edit|Write")
    reg = world.registry(accept=True)
    reg.load()
    out = fire(reg.engine, "before_tool_call", tool_name="edit_file",
               args={"path": "/etc/passwd", "old": "a", "new": "b"})
    assert out.verdict is Verdict.BLOCK
    assert out.reason == "not /etc"


def test_host_names_widen_only_dialect_matchers() -> None:
    assert for_dialect(None, "Bash") == "Bash"
    widened = for_dialect("claude", "Bash")
    assert widened == "(?:Bash)|terminal"
    assert for_dialect("claude", "terminal") == "terminal"
    assert "edit_file" in for_dialect("claude", "Notebook.*")
    assert "edit_file" in for_dialect("codex", "apply_patch")
    assert "write_file" in for_dialect("codex", "apply_patch")  # Codex edits are all patches
    assert for_dialect("claude", {"subject": "Bash"}) == {"subject": "(?:Bash)|terminal"}


@pytest.mark.parametrize(("dialect", "matcher", "needle"), [
    (None, "Bash", "matcher = 'terminal', or dialect = 'claude'"),
    (None, "termnal", "did you mean 'terminal'?"),
    ("claude", "Bsh", "did you mean 'Bash'?"),
    ("claude", "run_shell_command", "dialect = 'gemini'"),
])
def test_a_matcher_no_tool_can_match_is_refused(dialect: str | None, matcher: str,
                                                  needle: str) -> None:
    found = check(dialect, matcher, ("before_tool_call",))
    assert found is not None
    assert needle in found[1]


@pytest.mark.parametrize(("dialect", "matcher"), [
    (None, "terminal"), (None, "terminal|shell|bash"), (None, "my_custom_tool"),
    (None, "mcp__github__.*"), ("claude", "Bash"), ("claude", "mcp__github__create"),
    ("gemini", "run_shell_command"), ("hermes", "execute_code")])
def test_matchers_that_can_match_pass(dialect: str | None, matcher: str) -> None:
    assert check(dialect, matcher, ("before_tool_call",)) is None


def test_validate_names_the_file_and_the_fix(world: World) -> None:
    world.config(world.project, """
        [[hooks]]
        name = "guard"
        events = ["before_tool_call"]
        matcher = "Bash"
        command = "true"
        """)
    reg = world.registry(accept=True)
    with pytest.raises(ConfigError) as err:
        reg.load()
    text = str(err.value)
    assert "config.toml" in text
    assert "matcher = 'terminal'" in text
