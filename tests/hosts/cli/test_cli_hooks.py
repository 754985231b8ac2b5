"""`interlock hooks`: list, info, test, doctor, validate, approve, revoke, enable, disable."""

from __future__ import annotations

import json

import pytest

from helpers.cfg import GUARD, World, run, world

__all__ = ["world"]


SLOW = """
[[hooks]]
name = "slow"
events = ["before_tool_call"]
command = "sleep 30"
timeout = 0.3
"""


@pytest.mark.slow
def test_test_prints_the_outcome_even_when_the_hook_times_out(world: World) -> None:
    world.config(world.project, SLOW)
    code, out, _ = run(world, "approve", "--all")
    assert code == 0
    assert "project:slow" in out
    code, out, _ = run(world, "test", "before_tool_call", "--tool", "terminal", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["decision"] == "block"
    assert data["hook"] == "project:slow"
    assert data["hooks"][0]["failure"] == "timeout"
    assert set(data) >= {"event", "decision", "reason", "changes", "context", "hooks",
                         "revision"}
    code, out, _ = run(world, "test", "before_tool_call")
    assert out.startswith("before_tool_call: block by project:slow")


def test_test_prints_an_outcome_when_the_config_is_broken(world: World) -> None:
    world.config(world.project, "[[hooks]]\nname = 'x'\nevents = ['before_tool_cal']\n")
    code, out, err = run(world, "test", "before_tool_call", "--json")
    assert code == 2
    assert json.loads(out)["decision"] == "block"
    assert "config.toml:3" in err
    assert "did you mean 'before_tool_call'" in err


def test_test_reads_a_payload_file(world: World) -> None:
    world.write(world.home / "guard.py", GUARD)
    world.config(world.home, '[[hooks]]\nname = "g"\nevents = ["before_tool_call"]\n'
                             'handler = "guard.py"\n')
    payload = world.write(world.root / "p.json", '{"args": {"command": "rm -rf /"}}')
    code, out, _ = run(world, "test", "before_tool_call", "--payload-file", str(payload))
    assert code == 0
    assert "block by user:g: no rm" in out
    bad = world.write(world.root / "bad.json", "[1]")
    code, _, err = run(world, "test", "before_tool_call", "--payload-file", str(bad))
    assert code == 2
    assert "JSON object" in err
    assert "Traceback" not in err


def test_list_shows_source_state_consent_and_shadows(world: World) -> None:
    world.write(world.home / "guard.py", GUARD)
    world.config(world.home, '[[hooks]]\nname = "g"\nevents = ["before_tool_call"]\n'
                             'handler = "guard.py"\noverridable = true\n')
    world.config(world.project, SLOW + '\n[[hooks]]\nname = "g"\nevents = ["user_input"]\n'
                                       'command = "true"\non_error = "open"\n')
    code, out, _ = run(world, "list")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "shadowed by project:g" in lines["user:g"]
    assert lines["project:g"].rstrip().endswith("user:g")
    assert "unapproved" in lines["project:slow"]
    code, out, _ = run(world, "list", "--json")
    data = json.loads(out)
    by = {h["name"]: h for h in data["hooks"]}
    assert by["project:g"]["shadows"] == "user:g"
    assert by["project:slow"]["approved"] is False
    assert by["user:g"]["source"] == "user"


def test_list_eligible_and_info(world: World) -> None:
    world.config(world.home, '[[hooks]]\nname = "win"\nevents = ["user_input"]\n'
                             'command = "true"\non_error = "open"\n'
                             'requires = { os = ["windows"] }\n')
    world.write(world.project / "hooks" / "doc" / "HOOK.md",
                '+++\nevents = ["user_input"]\ncommand = "true"\n+++\nThe docs.\n')
    code, out, _ = run(world, "list", "--eligible", "--json")
    names = [h["name"] for h in json.loads(out)["hooks"]]
    assert names == ["project:doc"]
    code, out, _ = run(world, "info", "doc")
    assert code == 0
    assert "project:doc" in out
    assert "The docs." in out
    code, _, err = run(world, "info", "dco")
    assert code == 2
    assert "did you mean" in err


def test_validate_reports_file_line_field_fix(world: World) -> None:
    path = world.config(world.project, '[[hooks]]\nname = "g"\nevents = ["user_input"]\n'
                                       'command = "true"\npriority = "high"\n')
    code, _, err = run(world, "validate")
    assert code == 2
    assert f"{path}:5: priority:" in err
    assert "fix:" in err
    world.config(world.project, '[[hooks]]\nname = "g"\nevents = ["user_input"]\n'
                                'command = "true"\n')
    code, out, _ = run(world, "validate")
    assert code == 0
    assert out.startswith("ok: 1 hook(s)")
    assert "not approved: project:g" in out


def test_managed_hook_cannot_be_disabled_from_the_cli(world: World) -> None:
    world.write(world.managed / "guard.py", GUARD)
    world.config(world.managed, '[[hooks]]\nname = "g"\nevents = ["before_tool_call"]\n'
                                'handler = "guard.py"\n')
    code, _, err = run(world, "disable", "managed:g")
    assert code == 2
    assert "managed hook and cannot be disabled" in err


def test_enable_disable_bundled_and_approve_revoke(world: World) -> None:
    world.write(world.bundled / "b" / "HOOK.yaml", "events: [before_tool_call]\n")
    world.write(world.bundled / "b" / "handler.py", GUARD)
    code, out, _ = run(world, "enable", "b")
    assert (code, out.strip()) == (0, "bundled:b: active")
    code, out, _ = run(world, "test", "before_tool_call", "--payload-file", str(
        world.write(world.root / "p.json", '{"args": {"command": "rm"}}')))
    assert "block by bundled:b" in out
    code, out, _ = run(world, "disable", "bundled:b")
    assert (code, out.strip()) == (0, "bundled:b: disabled")
    world.config(world.project, SLOW)
    assert run(world, "approve", "slow")[1].strip() == "approved: project:slow"
    assert run(world, "approve", "slow")[1].strip() == "nothing to approve"
    assert run(world, "revoke", "slow")[1].strip() == "revoked: project:slow"
    code, _, err = run(world, "approve")
    assert code == 2
    assert "--all" in err


def test_doctor_finds_exec_bits_consent_drift_and_fail_open_gates(world: World) -> None:
    world.write(world.project / "check.sh", "#!/bin/sh\nexit 0\n", mode=0o644)
    world.config(world.project, '[[hooks]]\nname = "c"\nevents = ["before_tool_call"]\n'
                                'command = "./check.sh"\non_error = "open"\n')
    code, out, _ = run(world, "doctor")
    assert code == 1
    assert "not executable" in out
    assert "not approved" in out
    assert "fails open on gate event before_tool_call" in out
    assert "fail 3 times in a row turns it off for 60s" in out
    (world.project / "check.sh").chmod(0o755)
    run(world, "approve", "c")
    code, out, _ = run(world, "doctor")
    assert "smoke: answered no opinion in" in out
    world.write(world.project / "check.sh", "#!/bin/sh\nexit 0 # edited\n", mode=0o755)
    code, out, _ = run(world, "doctor")
    assert code == 1
    assert "changed since it was approved (drift)" in out


@pytest.mark.parametrize("system", ["claude", "codex"])
def test_import_claude_settings_and_plugin(world: World, system: str) -> None:
    settings = world.write(world.root / f".{system}" / "settings.json", json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "Bash|Write", "hooks": [
            {"type": "command", "command": "${CLAUDE_PROJECT_DIR}/hooks/check.sh",
             "timeout": 30}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "prompt", "prompt": "x"},
                                        {"type": "command", "command": "echo hi"}]}],
        "Setup": [{"hooks": [{"type": "command", "command": "true"}]}]}}))
    out_file = world.project / "config.toml"
    code, out, err = run(world, "import", "--from", system, str(settings), "-o", str(out_file))
    assert code == 0, err
    text = out_file.read_text()
    assert 'on_error = "open"' in text
    assert f'dialect = "{system}"' in text
    assert "skipped: Setup" in text
    assert "'prompt' hook cannot be imported" in text
    code, out, _ = run(world, "list", "--json")
    hooks = {h["name"]: h for h in json.loads(out)["hooks"]}
    check = hooks["project:check"]
    assert check["events"] == ["before_tool_call"]
    assert check["matcher"] == "terminal|write_file"  # Codex's matchers know Write too
    assert check["timeout"] == 30
    assert hooks["project:user_input"]["on_error"] == "open"
    assert hooks["project:user_input"]["timeout"] == 600  # their default, written out


def test_import_plugin_hooks_json_resolves_the_plugin_root(world: World) -> None:
    plugin = world.root / "plugin"
    hooks_json = world.write(plugin / "hooks" / "hooks.json", json.dumps({
        "description": "p", "hooks": {"PostToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/fmt.sh"}]}]}}))
    code, out, _ = run(world, "import", "--from", "claude", str(hooks_json))
    assert code == 0
    assert f"{plugin}/scripts/fmt.sh" in out
    assert "matcher" not in out


def test_import_hermes_and_moltis(world: World) -> None:
    cfg = world.write(world.root / "hermes" / "config.yaml", """
        hooks:
          pre_tool_call:
            - matcher: "terminal|write_file"
              command: "~/.hermes/agent-hooks/secret-scan.sh"
              timeout: 10
              fail_closed: true
          pre_llm_call:
            - command: "~/.hermes/agent-hooks/inject.sh"
          output_spill: {}
        """)
    code, out, _ = run(world, "import", "--from", "hermes", str(cfg))
    assert code == 0
    assert 'on_error = "closed"' in out
    assert 'matcher = "terminal|write_file"' in out
    assert 'events = [\n    "user_input",\n]' in out or '"user_input"' in out
    hook_md = world.write(world.root / "moltis" / "audit" / "HOOK.md", """
        +++
        name = "audit"
        events = ["BeforeToolCall", "AfterToolCall"]
        command = "./handler.sh"
        timeout = 5
        [requires]
        bins = ["sh"]
        +++
        """)
    code, out, _ = run(world, "import", "--from", "moltis", str(hook_md.parent))
    assert code == 0
    assert str(hook_md.parent / "handler.sh") in out
    assert 'dialect = "moltis"' in out
    assert "before_tool_call" in out
    assert "after_tool_call" in out
    code, _, err = run(world, "import", "--from", "cursor", str(cfg))
    assert code == 2
    assert "unknown system" in err


def test_import_turns_matchers_on_events_without_a_tool_name_into_field_matchers(
        world: World) -> None:
    settings = world.write(world.root / ".claude" / "settings.json", json.dumps({"hooks": {
        "SessionStart": [{"matcher": "startup|resume", "hooks": [
            {"type": "command", "command": "echo start"}]}],
        "PreCompact": [{"matcher": "auto", "hooks": [
            {"type": "command", "command": "echo compact"}]}],
        "SubagentStart": [{"matcher": "Explore", "hooks": [
            {"type": "command", "command": "echo sub"}]}]}}))
    out_file = world.project / "config.toml"
    code, _, err = run(world, "import", "--from", "claude", str(settings), "-o", str(out_file))
    assert code == 0, err
    text = out_file.read_text()
    assert "matcher 'Explore' dropped" in text
    code, out, err = run(world, "list", "--json")
    assert code == 0, err  # the imported file loads: no matcher that could never match
    hooks = {h["events"][0]: h for h in json.loads(out)["hooks"]}
    assert "startup|resume" in str(hooks["session_start"]["matcher"])
    assert "source" in str(hooks["session_start"]["matcher"])
    assert "trigger" in str(hooks["before_compaction"]["matcher"])
    assert hooks["subagent_start"]["matcher"] in (None, "*", "")


@pytest.mark.parametrize("args", [("--all",), ("--all", "--json"), ("a",)])
def test_approve_on_an_invalid_config_fails_with_the_config_error_once(
        world: World, args: tuple[str, ...]) -> None:
    world.config(world.project, '[[hooks]]\nname = "a"\nevents = ["nope"]\ncommand = "true"\n')
    code, out, err = run(world, "approve", *args)
    assert code == 2
    assert err.count("unknown event 'nope'") == 1
    assert "no hook named" not in err
    assert "nothing to approve" not in out
    assert out == ""


@pytest.mark.parametrize("command", [
    "${CLAUDE_PROJECT_DIR}/tools/check.sh",  # what `hooks import --from claude` writes
    '"$INTERLOCK_PROJECT_DIR/tools/check.sh" --strict',
    "$PWD/tools/check.sh",
    "$TOOLS/check.sh",  # the hook's own env
])
def test_a_script_named_through_a_variable_is_pinned(world: World, command: str) -> None:
    """The variables the hook process gets are expanded when reading its command:
    an edit of the script it runs un-approves it."""
    world.write(world.root / "tools" / "check.sh", "#!/bin/sh\nexit 0\n", mode=0o755)
    world.config(world.project, '[[hooks]]\nname = "c"\nevents = ["before_tool_call"]\n'
                                f"command = '{command}'\ndialect = \"claude\"\n"
                                'env = { TOOLS = "tools" }\n')
    assert run(world, "approve", "c")[0] == 0
    hook = json.loads(run(world, "list", "--json")[1])["hooks"][0]
    assert hook["approved"] is True
    world.write(world.root / "tools" / "check.sh", "#!/bin/sh\nexit 0 # edited\n", mode=0o755)
    hook = json.loads(run(world, "list", "--json")[1])["hooks"][0]
    assert hook["name"] == "project:c"
    assert hook["approved"] is False
