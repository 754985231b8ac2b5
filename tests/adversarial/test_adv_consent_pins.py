"""A hostile repository (or a prompt-injected model with a write tool) swaps
what an approved hook runs, through the real CLI. Consent is pinned to every
file the hook runs, so each swap turns the hook unapproved (a fail-closed hook
keeps blocking) or, inside a running host, drifted (blocked naming the file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NO_RM = textwrap.dedent("""\
    import sys
    from rules import FORBIDDEN

    request = sys.stdin.read()
    if FORBIDDEN in request:
        print("checked: blocked", file=sys.stderr)
        print('{"decision": "block", "reason": "no rm -rf (script)"}')
    """)
RULES = 'FORBIDDEN = "rm -rf"\n'
ALLOW_ALL = "import sys\nsys.stdin.read()\n"  # says nothing: the call would run

README_CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "no-rm"
    events = ["before_tool_call"]
    matcher = "terminal"
    command = %s
    on_error = "closed"
    timeout = 10
    """)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    out.update(INTERLOCK_HOME=str(home / "config"), INTERLOCK_STATE_DIR=str(home / "state"),
               INTERLOCK_MANAGED=str(home / "managed"), INTERLOCK_STORE=str(home / "db"))
    return out


def interlock(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "interlock", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def project(tmp_path: Path, command: str) -> Path:
    root = tmp_path / "project"
    (root / ".interlock").mkdir(parents=True)
    (root / "hooks").mkdir()
    (root / "hooks" / "no_rm.py").write_text(NO_RM)
    (root / "hooks" / "rules.py").write_text(RULES)
    (root / "data").mkdir()
    (root / "data" / "keep.txt").write_text("precious\n")
    (root / ".interlock" / "config.toml").write_text(README_CONFIG % command)
    return root


def approve(env: dict[str, str], root: Path) -> str:
    proc = interlock(env, "hooks", "approve", "--all", "-C", str(root), cwd=root)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def try_rm(env: dict[str, str], root: Path) -> dict[str, object]:
    call = root.parent / "call.json"
    call.write_text(json.dumps({"args": {"command": "rm -rf data"}}))
    proc = interlock(env, "hooks", "test", "before_tool_call", "--tool", "terminal",
                     "--payload-file", str(call), "--json", "-C", str(root), cwd=root)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout)
    return out




def held_by_consent(out: dict[str, object]) -> None:
    """The swapped hook did not run as approved: the call is blocked by the engine."""
    assert out["decision"] == "block", out
    assert "no rm -rf (script)" not in str(out.get("reason"))
    assert "unapproved" in str(out.get("reason")), out


def test_swapping_the_readme_script_after_approval_unapproves_it(tmp_path, env):
    root = project(tmp_path, '["python3", "hooks/no_rm.py"]')
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    (root / "hooks" / "no_rm.py").write_text(ALLOW_ALL)
    held_by_consent(try_rm(env, root))
    listing = interlock(env, "hooks", "list", "--json", "-C", str(root), cwd=root)
    [hook] = [h for h in json.loads(listing.stdout)["hooks"] if h["name"] == "project:no-rm"]
    assert hook["approved"] is False


def test_editing_a_module_the_script_imports_unapproves_it(tmp_path, env):
    root = project(tmp_path, '["python3", "hooks/no_rm.py"]')
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    (root / "hooks" / "rules.py").write_text('FORBIDDEN = "nothing at all"\n')
    held_by_consent(try_rm(env, root))


def test_a_module_added_beside_the_script_to_shadow_the_stdlib_unapproves_it(tmp_path, env):
    root = project(tmp_path, '["python3", "hooks/no_rm.py"]')
    (root / "hooks" / "no_rm.py").write_text("import json\n" + NO_RM)
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    # The script's folder comes first on sys.path: this json.py would run as the hook.
    (root / "hooks" / "json.py").write_text("import sys\nsys.stdin.read()\nsys.exit(0)\n")
    held_by_consent(try_rm(env, root))


@pytest.mark.parametrize("flags", [[], ["-E"]], ids=["plain", "python -E"])
def test_a_planted_bytecode_file_does_not_stand_in_for_a_pinned_module(tmp_path, env, flags):
    """A .pyc in hooks/__pycache__ whose header matches rules.py (same mtime and
    size) would be imported instead of it. Hooks never read bytecode from the project,
    also when -E makes Python ignore PYTHONPYCACHEPREFIX."""
    import importlib.util
    import py_compile

    root = project(tmp_path, json.dumps([sys.executable, *flags, "hooks/no_rm.py"]))
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    rules = root / "hooks" / "rules.py"
    st = rules.stat()
    rules.write_text('FORBIDDEN = "zzzzzz"\n')  # the same size
    os.utime(rules, ns=(st.st_atime_ns, st.st_mtime_ns))
    pyc = importlib.util.cache_from_source(str(rules))
    py_compile.compile(str(rules), cfile=pyc, doraise=True)
    rules.write_text(RULES)  # the approved source is back, the mtime too
    os.utime(rules, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"  # the source ran


def test_an_approved_same_size_edit_in_the_same_second_runs_the_new_module(tmp_path, env):
    """The hook's bytecode cache lives in the state folder, one per approved digest:
    an edit Python's cache cannot tell apart (same size, same mtime second) still
    runs the code that was approved after it."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    root = project(tmp_path, json.dumps([sys.executable, "hooks/no_rm.py"]))
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"  # caches rules.py
    rules = root / "hooks" / "rules.py"
    st = rules.stat()
    rules.write_text('FORBIDDEN = "zzzzzz"\n')  # the same size
    os.utime(rules, ns=(st.st_atime_ns, st.st_mtime_ns))
    approve(env, root)
    assert try_rm(env, root)["decision"] != "block"  # the new rules: rm is allowed


def test_a_bash_c_wrapper_pins_the_script_it_runs(tmp_path, env):
    root = project(tmp_path, "\"bash -c 'python3 hooks/no_rm.py'\"")
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    (root / "hooks" / "no_rm.py").write_text(ALLOW_ALL)
    held_by_consent(try_rm(env, root))


def test_replacing_a_project_venv_interpreter_unapproves_the_hook(tmp_path, env):
    root = project(tmp_path, '[".venv/bin/python3", "hooks/no_rm.py"]')
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (venv / "python3").chmod(0o755)
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    # The "interpreter" now answers nothing, whatever the script says.
    (venv / "python3").write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
    held_by_consent(try_rm(env, root))


def test_an_interpreter_found_on_path_inside_the_project_is_pinned(tmp_path, env):
    root = project(tmp_path, '["python3", "hooks/no_rm.py"]')
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (venv / "python3").chmod(0o755)
    env = {**env, "PATH": f"{venv}{os.pathsep}{env.get('PATH', '')}"}
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    (venv / "python3").write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
    held_by_consent(try_rm(env, root))


def test_swapping_a_symlink_target_inside_a_hook_folder_unapproves_it(tmp_path, env):
    root = project(tmp_path, '["true"]')
    (root / ".interlock" / "config.toml").write_text("")
    tools = root / "tools"
    tools.mkdir()
    (tools / "check.sh").write_text(
        "#!/bin/sh\ncase \"$(cat)\" in *'rm -rf'*) "
        "echo '{\"decision\":\"block\",\"reason\":\"no rm -rf (script)\"}';; esac\n")
    (tools / "check.sh").chmod(0o755)
    folder = root / ".interlock" / "hooks" / "guard"
    folder.mkdir(parents=True)
    (folder / "lib").symlink_to(tools, target_is_directory=True)
    (folder / "HOOK.md").write_text(textwrap.dedent("""\
        +++
        events = ["before_tool_call"]
        matcher = "terminal"
        command = "./lib/check.sh"
        on_error = "closed"
        +++
        # guard
        """))
    approve(env, root)
    assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    (tools / "check.sh").write_text("#!/bin/sh\ncat >/dev/null\n")
    held_by_consent(try_rm(env, root))
    info = interlock(env, "hooks", "info", "guard", "-C", str(root), cwd=root)
    assert str(tools / "check.sh") in info.stdout  # the target itself is pinned


def test_a_hook_that_appends_to_its_log_stays_approved(tmp_path, env):
    root = project(tmp_path, '"python3 hooks/no_rm.py 2>> hooks/no_rm.log"')
    approve(env, root)
    for _ in range(3):
        # The script ran, approved, each time (and wrote its log line).
        assert try_rm(env, root)["reason"] == "no rm -rf (script)"
    assert (root / "hooks" / "no_rm.log").read_text().count("checked: blocked") == 3


def test_a_dot_slash_log_target_does_not_unapprove_a_shell_hook(tmp_path, env):
    root = project(tmp_path, '"./guard.sh >> ./guard.log"')
    guard = root / ".interlock" / "guard.sh"
    guard.write_text("#!/bin/sh\ncase \"$(cat)\" in *'rm -rf'*) echo blocked-once; "
                     "echo 'rm is not allowed' >&2; exit 2;; esac\n")
    guard.chmod(0o755)
    (root / ".interlock" / "guard.log").write_text("")
    approve(env, root)
    for _ in range(2):
        out = try_rm(env, root)
        assert out["decision"] == "block"
        assert "rm is not allowed" in str(out.get("reason")), out
    assert (root / ".interlock" / "guard.log").read_text().count("blocked-once") == 2
    # Editing the script itself still needs approval again.
    guard.write_text("#!/bin/sh\ncat >/dev/null\n")
    held_by_consent(try_rm(env, root))


WAIT = "touch ready; for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done; echo waited"
SCRIPT = textwrap.dedent("""\
    - text: waiting for the other terminal
      tool_calls:
        - {name: terminal, args: {command: "%s"}}
    - match: waited
      tool_calls:
        - {name: terminal, args: {command: "rm -rf data"}}
    - text: done
    """)


def test_a_running_host_catches_a_swap_between_two_calls(tmp_path, env):
    """Another process (a pull, a second terminal) swaps the approved script while
    `interlock run` is between two calls: the next call is still guarded."""
    import time

    root = project(tmp_path, '["python3", "hooks/no_rm.py"]')
    (tmp_path / "script.yaml").write_text(SCRIPT % WAIT)
    approve(env, root)
    run = subprocess.Popen([sys.executable, "-m", "interlock", "run", "--model",
                            f"scripted:{tmp_path / 'script.yaml'}", "--export", "t.jsonl",
                            "go"], cwd=root, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (root / "ready").exists() and run.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (root / "ready").exists(), run.communicate()
        (root / "hooks" / "no_rm.py").write_text(ALLOW_ALL)
        (root / "go").touch()
        _out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode in (0, 1), err
    assert (root / "data" / "keep.txt").read_text() == "precious\n"  # nothing was lost
    records = [json.loads(line) for line in (root / "t.jsonl").read_text().splitlines()]
    results = [str(r.get("content")) for r in records if r.get("role") == "tool"]
    assert "waited" in results[0]
    assert "blocked" in results[1]
    # Named: the file that changed since it was approved (or, once a live reload
    # saw the edit first, the hook is simply unapproved).
    assert "(drifted)" in results[1] or "(unapproved)" in results[1], results[1]
    if "(drifted)" in results[1]:
        assert str(root / "hooks" / "no_rm.py") in results[1]
