"""Every dialect with real sh and Python scripts: block by stdout and by exit
code, modify, context, garbage, huge output, a hang past the timeout, and a
script that ignores stdin. The decode tables themselves are in
test_dialect_tables.py; the seed-style scripts in test_dialect_examples.py."""

from __future__ import annotations

import json

import pytest

from fixtures.helpers import HERE, PY, invocation, kill_quietly, read_pid, wait_gone
from interlock import Engine, Hook, OnError, Verdict
from interlock.engine.errors import ContractError, HookTimeout
from interlock.executors import CommandExecutor
from interlock.executors.dialects import DIALECTS
from interlock.testing import RecordingSink, fire

LANGS = ("sh", "py")
NAMES = sorted(DIALECTS)

def pre(**fields: object) -> str:
    """A Claude/Codex PreToolUse answer."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", **fields}})


BLOCK_STDOUT = {
    "claude": pre(permissionDecision="deny", permissionDecisionReason="no rm"),
    "codex": pre(permissionDecision="deny", permissionDecisionReason="no rm"),
    "gemini": '{"decision":"deny","reason":"no rm"}',
    "hermes": '{"action":"block","message":"no rm"}',
    # Moltis has no stdout block: only exit 1 blocks.
}
BLOCK_EXIT = {"claude": 2, "codex": 2, "gemini": 2, "hermes": 2, "moltis": 1}
MODIFY = {
    "claude": pre(permissionDecision="allow", updatedInput={"command": "ls -la"}),
    "codex": pre(permissionDecision="allow", updatedInput={"command": "ls -la"}),
    "gemini": '{"hookSpecificOutput":{"tool_input":{"command":"ls -la"}}}',
    "hermes": '{"action":"modify","args":{"command":"ls -la"}}',
    "moltis": '{"action":"modify","data":{"command":"ls -la"}}',
}
CONTEXT = {
    "claude": pre(additionalContext="mind the tests"),
    "codex": pre(additionalContext="mind the tests"),
    "gemini": '{"hookSpecificOutput":{"additionalContext":"mind the tests"}}',
    "hermes": '{"context":"mind the tests"}',
    # Moltis hooks cannot add context.
}


def script(lang: str, name: str = "answer") -> str | list[str]:
    if lang == "sh":
        return str(HERE / f"{name}.sh")  # a string: sh -c, or shlex for Hermes
    return [PY, str(HERE / f"{name}.py")]


def run(dialect: str, lang: str, *, stdout: str = "", stderr: str = "", code: int = 0,
        when: str = "", timeout: float = 10.0, **kw) -> CommandExecutor:
    env = {"HOOK_STDOUT": stdout, "HOOK_STDERR": stderr, "HOOK_EXIT": str(code),
           "HOOK_WHEN": when}
    return CommandExecutor(script(lang), hook_name="h", dialect=dialect, cwd=HERE, env=env,
                           timeout=timeout, **kw)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dialect", sorted(BLOCK_STDOUT))
async def test_block_by_stdout(dialect, lang):
    ex = run(dialect, lang, stdout=BLOCK_STDOUT[dialect], when="rm -rf")
    decision = await ex(invocation(args={"command": "rm -rf /"}))
    assert decision is not None
    assert decision.verdict is Verdict.BLOCK
    assert decision.reason == "no rm"
    assert await ex(invocation(args={"command": "ls"})) is None


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dialect", NAMES)
async def test_block_by_exit_code(dialect, lang):
    ex = run(dialect, lang, stderr="refused by policy", code=BLOCK_EXIT[dialect])
    decision = await ex(invocation())
    assert decision is not None
    assert decision.verdict is Verdict.BLOCK
    assert decision.reason == "refused by policy"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dialect", NAMES)
async def test_modify(dialect, lang):
    decision = await run(dialect, lang, stdout=MODIFY[dialect])(
        invocation(modifies=True, args={"command": "ls"}))
    assert decision is not None
    # Claude's and Codex's allow + updatedInput approves the changed call too.
    expected = Verdict.APPROVE if dialect in ("claude", "codex") else Verdict.MODIFY
    assert decision.verdict is expected
    assert decision.changes == {"args": {"command": "ls -la"}}


@pytest.mark.parametrize("dialect", NAMES)
async def test_modify_from_a_check_says_declare_modifies(dialect):
    with pytest.raises(ContractError, match="declare `modifies = true`"):
        await run(dialect, "sh", stdout=MODIFY[dialect])(invocation(modifies=False))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dialect", sorted(CONTEXT))
async def test_context(dialect, lang):
    decision = await run(dialect, lang, stdout=CONTEXT[dialect])(invocation())
    assert decision is not None
    assert decision.verdict is Verdict.NONE
    assert decision.context == "mind the tests"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dialect", NAMES)
async def test_garbage_is_a_failure(dialect, lang):
    # JSON-looking garbage: Claude and Codex read plain text as text, but a
    # broken JSON object is a failure in every dialect.
    with pytest.raises(ContractError, match="not JSON"):
        await run(dialect, lang, stdout='{"decision": block}')(invocation())


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dialect", NAMES)
async def test_huge_output_is_a_failure(dialect, lang):
    cmd = (f"sh {HERE / 'native_hook.sh'} huge" if lang == "sh"
           else [PY, str(HERE / "native_hook.py"), "huge"])
    ex = CommandExecutor(cmd, hook_name="h", dialect=dialect, cwd=HERE, output_cap=100_000)
    with pytest.raises(ContractError, match="more than 100000 bytes"):
        await ex(invocation())


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dialect", NAMES)
@pytest.mark.slow
async def test_hang_past_timeout_kills_the_group(dialect, lang, tmp_path):
    pidfile = tmp_path / "pid"
    if lang == "sh":
        cmd: str | list[str] = f"sh {HERE / 'native_hook.sh'} hang {pidfile}"
    else:
        cmd = [PY, str(HERE / "native_hook.py"), "hang", str(pidfile)]
    ex = CommandExecutor(cmd, hook_name="h", dialect=dialect, cwd=HERE, timeout=0.4)
    with pytest.raises(HookTimeout):
        await ex(invocation())
    grandchild = read_pid(pidfile)
    try:
        assert wait_gone(grandchild)
    finally:
        kill_quietly(grandchild)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dialect", NAMES)
async def test_a_script_that_ignores_stdin(dialect, lang):
    cmd = (f"sh {HERE / 'native_hook.sh'} ignore-stdin" if lang == "sh"
           else [PY, str(HERE / "native_hook.py"), "ignore-stdin"])
    ex = CommandExecutor(cmd, hook_name="h", dialect=dialect, cwd=HERE)
    assert await ex(invocation(args={"command": "y" * 3_000_000})) is None


@pytest.mark.parametrize("dialect", NAMES)
async def test_stdin_is_one_compact_line_with_a_stable_session(dialect, tmp_path):
    out = tmp_path / "seen.json"
    ex = CommandExecutor(script("py"), hook_name="h", dialect=dialect, cwd=tmp_path,
                         env={"HOOK_SAVE": str(out)})
    for _ in range(2):
        await ex(invocation(args={"command": "echo 'a\nb'"}, session_id="sess-42"))
    seen = json.loads(out.read_text())
    payload = seen["payload"]
    session_key = "session_key" if dialect == "moltis" else "session_id"
    assert payload[session_key] == "sess-42"
    assert seen["cwd"] == str(tmp_path.resolve())


async def test_dialect_hooks_see_the_user_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("USER_THING", "kept")
    out = tmp_path / "seen.json"
    ex = CommandExecutor(script("py"), hook_name="h", dialect="claude", cwd=tmp_path,
                         env={"HOOK_SAVE": str(out)}, project_dir="/proj",
                         plugin_root="/plug")
    await ex(invocation())
    env = json.loads(out.read_text())["env"]
    assert env["USER_THING"] == "kept"
    assert env["CLAUDE_PROJECT_DIR"] == "/proj"
    assert env["CLAUDE_PLUGIN_ROOT"] == "/plug"


async def test_gemini_variables(tmp_path):
    out = tmp_path / "seen.json"
    ex = CommandExecutor(script("py"), hook_name="h", dialect="gemini", cwd=tmp_path,
                         env={"HOOK_SAVE": str(out)})
    await ex(invocation(session_id="s-9"))
    env = json.loads(out.read_text())["env"]
    assert env["GEMINI_PROJECT_DIR"] == str(tmp_path)
    assert env["GEMINI_SESSION_ID"] == "s-9"
    # Gemini's hook runner also sets these (CLAUDE_PROJECT_DIR for Claude scripts).
    assert env["GEMINI_CWD"] == str(tmp_path)
    assert env["CLAUDE_PROJECT_DIR"] == str(tmp_path)


async def test_hermes_splits_without_a_shell_and_claude_uses_one():
    cmd = "echo '{}' ; exit 3"
    with pytest.raises(ContractError, match="not JSON"):  # echo printed `{} ; exit 3`
        await CommandExecutor(cmd, hook_name="h", dialect="hermes", cwd=HERE)(invocation())
    from interlock.engine.errors import HookCrash

    with pytest.raises(HookCrash, match="exited with code 3"):  # sh ran both commands
        await CommandExecutor(cmd, hook_name="h", dialect="claude", cwd=HERE)(invocation())


# -- end to end -------------------------------------------------------------------

@pytest.mark.parametrize("dialect", NAMES)
def test_engine_blocks_by_exit_code_and_fails_closed(dialect):
    sink = RecordingSink()
    eng = Engine(sinks=[sink])
    eng.register(Hook(name="guard", events=("before_tool_call",), kind="command",
                      executor=run(dialect, "sh", stderr="nope", code=BLOCK_EXIT[dialect],
                                   when="rm -rf")))
    eng.register(Hook(name="broken", events=("before_tool_call",), kind="command",
                      on_error=OnError.CLOSED,
                      executor=run(dialect, "sh", stdout="{oops}", when="curl")))
    try:
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "rm -rf /"})
        assert out.blocked
        assert out.reason == "nope"
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "curl x"})
        assert out.blocked
        assert "fail-closed hook 'code:broken'" in (out.reason or "")
        assert sink.failures[-1].mode.value == "contract"
        assert not fire(eng, "before_tool_call", tool_name="terminal",
                        args={"command": "ls"}).blocked
    finally:
        eng.close()


async def test_exec_form_commands_get_host_placeholders(tmp_path):
    out = tmp_path / "argv.txt"
    ex = CommandExecutor(["sh", "-c", f'echo "$1" > {out}', "-", "${CLAUDE_PROJECT_DIR}/x"],
                         hook_name="h", dialect="claude", cwd=tmp_path, project_dir="/proj")
    assert await ex(invocation()) is None
    assert out.read_text().strip() == "/proj/x"
