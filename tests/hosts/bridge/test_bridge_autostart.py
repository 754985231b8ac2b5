"""The bridge's own server: started by the first call, reused, one per project, and
every way of failing to reach it a deny (docs/one-policy.md, Speed).

Real bridge processes (``python -I -m interlock.bridge``, what ``bridge install``
writes) and the real server they start, each test in its own runtime folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers.bridges import Env, pre, wait_for
from helpers.imports import module_level_imports

pytestmark = pytest.mark.e2e


def blocked(result: subprocess.CompletedProcess[str], reason: str = "no rm here") -> bool:
    return result.returncode == 2 and reason in result.stdout and '"deny"' in result.stdout


def test_the_first_call_starts_the_server_and_later_calls_reuse_it(env: Env,
                                                                    tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    assert env.servers() == []
    first = env.call(root)
    assert blocked(first), first
    servers = env.servers()
    assert len(servers) == 1
    sock = env.up(root)
    assert (sock.stat().st_mode & 0o777) == 0o600
    assert (sock.parent.stat().st_mode & 0o777) == 0o700
    for command in ("rm -rf /", "ls"):
        again = env.call(root, command)
        assert blocked(again) if command != "ls" else again.returncode == 0, again
    assert env.servers() == servers  # the same server answered


def test_the_first_call_answers_itself_and_the_server_answers_the_next(
        env: Env, tmp_path: Path) -> None:
    """The first call loads the hooks in process and answers; the server it starts
    on the way out answers the calls after it. No call waits for a server to load."""
    root = env.project(tmp_path / "p")
    seen = tmp_path / "seen"
    env.add_hook(root, "who", (
        "import os, pathlib\n\n"
        "def handle(e):\n"
        "    cmd = pathlib.Path(f'/proc/{os.getpid()}/cmdline').read_bytes()\n"
        "    server = b'interlock.hosts.bridge._daemon' in cmd\n"
        f"    with open({str(seen)!r}, 'a') as out:\n"
        "        out.write(('server' if server else 'call') + '\\n')\n"))
    assert env.call(root, "ls").returncode == 0
    assert seen.read_text() == "call\n"
    assert len(env.servers()) == 1  # started before the first call ended
    env.up(root)
    assert env.call(root, "ls").returncode == 0
    assert seen.read_text() == "call\nserver\n"


def test_the_server_starts_with_the_environment_its_name_was_made_from(
        env: Env, tmp_path: Path) -> None:
    """The first call's hooks run before the server starts: what they set in the
    environment (consent variables among them) must not reach the server."""
    root = env.project(tmp_path / "p")
    env.add_hook(root, "sets", (
        "import os\nos.environ['INTERLOCK_ACCEPT_PLANTED'] = '1'\n\n"
        "def handle(e):\n    return None\n"))
    assert env.call(root, "ls").returncode == 0
    env.up(root)
    (server,) = env.servers()
    assert b"INTERLOCK_ACCEPT_PLANTED" not in Path(f"/proc/{server}/environ").read_bytes()


def test_hooks_slower_to_load_than_the_deadline_still_get_their_server(
        env: Env, tmp_path: Path) -> None:
    """The call that runs out of time denies, and starts the server on its way out:
    the server has the time to load, and answers the calls after it."""
    root = env.project(tmp_path / "p")
    env.add_hook(root, "heavy", (
        "import time\ntime.sleep(3)  # an import that takes its time\n\n"
        "def handle(e):\n    return None\n"))
    late = env.call(root, "ls", args=("--deadline", "1"))
    assert late.returncode == 2, late
    assert "no answer within 1 s" in late.stdout
    env.up(root)
    assert blocked(env.call(root))


def test_concurrent_first_calls_start_one_server(env: Env, tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    racers = [env.start(root) for _ in range(6)]
    for proc in racers:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, (out, err)
        assert "no rm here" in out, (out, err)
    assert len(env.servers()) == 1


def test_a_config_change_shows_in_the_next_answers(env: Env, tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    assert blocked(env.call(root))
    env.up(root)
    assert env.call(root, "ls").returncode == 0
    env.add_hook(root, "no-ls", (
        "from interlock import block\n\ndef handle(e):\n"
        "    return block('new rule') if e.args.get('command') == 'ls' else None\n"))
    seen: list[subprocess.CompletedProcess[str]] = []
    wait_for(lambda: blocked(seen.append(env.call(root, "ls")) or seen[-1], "new rule"),
             seen=seen[-1:])
    assert len(env.servers()) == 1


def test_another_environment_never_reaches_a_server_loaded_with_other_consent(
        env: Env, tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    assert blocked(env.call(root))
    env.up(root)  # a server loaded with INTERLOCK_ACCEPT_HOOKS=1
    strict = {k: v for k, v in env.vars.items() if k != "INTERLOCK_ACCEPT_HOOKS"}
    strict["INTERLOCK_HOME"] = str(tmp_path / "other-home")  # no approvals there
    unapproved = env.call(root, "ls", env=strict)
    # Not the approving server's "allow": the unapproved hook is refused here.
    assert unapproved.returncode == 2, unapproved
    assert '"deny"' in unapproved.stdout, unapproved
    assert "no rm here" not in unapproved.stdout


def test_two_projects_get_two_servers_each_with_its_own_policy(env: Env,
                                                                tmp_path: Path) -> None:
    one = env.project(tmp_path / "one", "policy one")
    two = env.project(tmp_path / "two", "policy two")
    assert blocked(env.call(one), "policy one")
    assert blocked(env.call(two), "policy two")
    assert blocked(env.call(one), "policy one")
    assert len(env.servers()) == 2


def test_a_stale_socket_is_replaced_by_a_new_server(env: Env, tmp_path: Path) -> None:
    import socket

    root = env.project(tmp_path / "p")
    sock = env.socket(root)
    sock.parent.mkdir(mode=0o700, parents=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock))  # bound, never listening, then closed: what a crash leaves
    dead.close()
    assert sock.is_socket()
    assert blocked(env.call(root))
    assert len(env.servers()) == 1


def test_a_socket_folder_owned_by_someone_else_is_a_deny_and_starts_nothing(
        env: Env, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the folder to another uid")
    root = env.project(tmp_path / "p")
    folder = env.socket(root).parent
    folder.mkdir(mode=0o700, parents=True)
    os.chown(folder, 65534, 65534)
    result = env.call(root, "ls")  # a command the policy allows: only a deny is right
    assert result.returncode == 2, result
    assert '"deny"' in result.stdout, result
    assert "owned by uid 65534" in result.stdout
    assert env.servers() == []


def test_a_server_that_dies_mid_call_is_a_deny(env: Env, tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    marker = tmp_path / "in-flight"
    env.add_hook(root, "slow", (
        "import pathlib, time\n\n"
        "def handle(e):\n"
        "    if 'sleepy' in e.args.get('command', ''):\n"
        f"        pathlib.Path({str(marker)!r}).write_text('x')\n"
        "        time.sleep(30)\n"))
    assert blocked(env.call(root))
    env.up(root)
    (server,) = env.servers()
    call = env.start(root, "sleepy")
    wait_for(marker.exists)
    os.kill(server, signal.SIGKILL)
    out, err = call.communicate(timeout=30)
    assert call.returncode == 2, (out, err)
    assert '"deny"' in out, (out, err)
    assert "failed closed" in out


def test_a_project_with_no_hooks_denies_as_before_and_leaves_no_server(
        env: Env, tmp_path: Path) -> None:
    root = env.project(tmp_path / "p", hooks=False)
    result = env.call(root, "ls")
    assert result.returncode == 2, result
    assert '"deny"' in result.stdout, result
    assert "no hooks are configured" in result.stdout
    assert env.servers() == []
    assert not env.socket(root).exists()


def test_guarded_adds_its_offset_to_the_forwarded_answer(env: Env, tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    assert blocked(env.call(root))
    env.up(root)
    result = env.call(root, args=("--guarded",))
    assert result.returncode == 102, result
    assert "no rm here" in result.stdout, result
    assert env.call(root, "ls", args=("--guarded",)).returncode == 100


def test_an_idle_server_exits_and_takes_its_socket_with_it(env: Env, tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    quick = {**env.vars, "INTERLOCK_BRIDGE_IDLE": "0.5"}
    assert blocked(env.call(root, env=quick))
    sock = env.up(root, quick)  # the idle setting is part of its name
    wait_for(lambda: not sock.exists() and not env.servers())
    assert blocked(env.call(root, env=quick))  # the next call starts a new one


def test_the_forwarding_call_imports_no_json_signal_re_or_enum(env: Env,
                                                               tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    assert blocked(env.call(root))
    env.up(root)
    result = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", "-m", "interlock.bridge", "claude",
         "--project", str(root)], input=json.dumps(pre("rm -rf /")), capture_output=True,
        text=True, env=env.vars, timeout=60)
    assert blocked(result), result
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "interlock.hosts.bridge._client" in imported  # it did take the fast path
    assert not imported & {"json", "signal", "re", "enum", "pkgutil", "interlock.host",
                           "interlock.hosts.bridge.claude", "asyncio", "hashlib",
                           "pathlib", "inspect", "sqlite3", "msgspec"}, sorted(imported)


def test_an_agent_started_in_a_subfolder_still_takes_the_fast_path(env: Env,
                                                                  tmp_path: Path) -> None:
    """From project/src (CLAUDE_PROJECT_DIR) the fast path walks up to the project as
    the full bridge does (interlock.config.project.find_root) and forwards to its
    server. Before: every call from a subfolder loaded the full bridge (~100 ms)."""
    root = env.project(tmp_path / "p")
    sub = root / "src"
    sub.mkdir()
    assert blocked(env.call(root))
    env.up(root)
    result = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", "-m", "interlock.bridge", "claude"],
        input=json.dumps(pre("rm -rf /")), capture_output=True, text=True,
        env={**env.vars, "CLAUDE_PROJECT_DIR": str(sub)}, timeout=60)
    assert blocked(result), result
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "interlock.hosts.bridge._client" in imported  # it did take the fast path
    assert "msgspec" not in imported


def test_an_in_process_call_for_a_toml_project_does_not_load_yaml(env: Env,
                                                                  tmp_path: Path) -> None:
    """The first call of a session answers in process: it loads only what the
    project's files need (PyYAML only for YAML configs and front matter)."""
    root = env.project(tmp_path / "p")
    result = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", "-m", "interlock.bridge", "claude",
         "--project", str(root)], input=json.dumps(pre("rm -rf /")), capture_output=True,
        text=True, env={**env.vars, "INTERLOCK_BRIDGE_AUTOSTART": "0"}, timeout=60)
    assert blocked(result), result
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "interlock.config.registry" in imported  # it did load the hooks here
    assert "yaml" not in imported


def test_a_first_call_with_python_hooks_imports_no_asyncio(env: Env, tmp_path: Path) -> None:
    """The first call of a session answers in process, then starts the server: with
    plain sync Python hooks it needs no event loop, so it imports no asyncio (nor
    ssl or concurrent.futures, which asyncio drags in), and no importlib.metadata
    to learn that no extension is installed. A call that logs nothing imports no
    logging either."""
    root = env.project(tmp_path / "p")

    def imported(variables: dict[str, str]) -> set[str]:
        result = subprocess.run(
            [sys.executable, "-I", "-X", "importtime", "-m", "interlock.bridge", "claude",
             "--project", str(root)], input=json.dumps(pre("rm -rf /")), capture_output=True,
            text=True, env=variables, timeout=60)
        assert blocked(result), result
        return {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}

    first = imported(env.vars)  # approves the hook (--accept-hooks), and logs that
    assert "interlock.config.registry" in first  # it did load the hooks here
    assert not first & {"asyncio", "ssl", "concurrent.futures", "importlib.metadata"}, \
        sorted(first)
    env.up(root)  # and it started the server for the calls after it
    assert blocked(env.call(root))
    again = imported({**env.vars, "INTERLOCK_BRIDGE_AUTOSTART": "0"})  # in process again
    assert "interlock.config.registry" in again
    assert not again & {"asyncio", "ssl", "concurrent.futures", "importlib.metadata",
                        "logging", *UNNEEDED}, sorted(again)
    from interlock import __file__ as package

    # Nor does any Interlock module it loads import inspect when imported (it comes
    # anyway, by msgspec and dataclasses, but no module of ours may need it).
    here = Path(package).parent
    files = [here.joinpath(*name.split(".")[1:]) for name in again
             if name.startswith("interlock.")]
    files = [f / "__init__.py" if f.is_dir() else f.with_suffix(".py") for f in files]
    assert not [f for f in files if "inspect" in module_level_imports(str(f))]


UNNEEDED = ("hashlib", "difflib", "traceback", "random", "interlock.models.tooling",
            "interlock.executors.dialects.claude", "interlock.executors.command")
"""What a call with plain Python hooks (no dialect, no executor) that approves nothing
and logs nothing does not need:
OpenSSL's hashlib (the builtin SHA-256 does), error hints, retries' jitter, the agent's
tool contracts, every host's dialect table (docs/one-policy.md, Speed)."""


def test_hooks_called_in_the_bridge_process_run_with_the_collector_on(
        env: Env, tmp_path: Path) -> None:
    """The call that loads the hooks itself turns the collector off while loading
    and sets what it loaded aside (docs/one-policy.md, Speed); a hook is called
    with it on again, so the cyclic garbage a hook makes is still collected."""
    root = env.project(tmp_path / "p", hooks=False)
    (root / ".interlock" / "config.toml").write_text("")
    env.add_hook(root, "gc-state", (
        "import gc\nfrom interlock import block\n\n"
        "def handle(e):\n"
        "    return block(f'collector on: {gc.isenabled()}, loaded set aside: '\n"
        "                 f'{gc.get_freeze_count() > 0}')\n"))
    for autostart in ("0", "1"):  # in process, and the first call that starts the server
        result = env.call(root, env={**env.vars, "INTERLOCK_BRIDGE_AUTOSTART": autostart})
        assert "collector on: True, loaded set aside: True" in result.stdout, result


def test_the_fast_path_tables_match_the_host_modules() -> None:
    from interlock.hosts.bridge import HOSTS, _fast, host

    assert _fast.HOSTS == HOSTS
    for name in HOSTS:
        mod = host(name)
        assert _fast.PROJECT_ENV.get(name, "") == mod.PROJECT_ENV, name
        assert _fast.DEADLINES.get(name, 20.0) == mod.DEFAULT_DEADLINE, name
    from interlock.hosts.bridge._core import GUARDED

    assert _fast.GUARDED == GUARDED


def test_a_server_answering_an_outcome_as_json_is_answered_from_it(tmp_path: Path) -> None:
    """A server from before the host-ready reply: its outcome is still obeyed."""
    import socket
    import threading

    folder = Path(tempfile.mkdtemp(prefix="il-old-", dir="/tmp"))
    folder.chmod(0o700)
    path = folder / "old.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    body = json.dumps({"event": "before_tool_call", "decision": "block",
                       "reason": "old server says no"}).encode()

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode()
                         + b"\r\n\r\n" + body)

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        result = subprocess.run(
            [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--project",
             str(tmp_path), "--socket", str(path)], input=json.dumps(pre("ls")),
            capture_output=True, text=True, timeout=60)
    finally:
        thread.join(30)
        listener.close()
    assert result.returncode == 2, result
    assert "old server says no" in result.stdout


def test_a_config_broken_while_the_server_runs_denies_the_very_next_call(
        env: Env, tmp_path: Path) -> None:
    """As in process: the config on disk decides, not the revision loaded before."""
    root = env.project(tmp_path / "p")
    assert env.call(root, "ls").returncode == 0
    env.up(root)
    config = root / ".interlock" / "config.toml"
    good = config.read_text()
    config.write_text('[[hooks]\nname = "guard"\n')
    broken = env.call(root, "ls")
    assert broken.returncode == 2, broken
    assert "failed closed" in broken.stdout
    assert "config.toml" in broken.stdout
    config.write_text(good)
    assert env.call(root, "ls").returncode == 0
    assert len(env.servers()) == 1


def test_a_config_broken_while_the_server_loads_denies_the_first_call_it_answers(
        env: Env, tmp_path: Path) -> None:
    """An edit made after the starting server read the config, but before it
    listened, is seen by its first answer: not the revision it loaded."""
    root = env.project(tmp_path / "p")
    loading = tmp_path / "loading"
    env.add_hook(root, "slow", (
        f"import os, time\nopen({str(loading)!r}, 'a').write(str(os.getpid()) + '\\n')\n"
        "time.sleep(2)  # an import that takes its time\n\n"
        "def handle(e):\n    return None\n"))
    first = env.call(root, "ls")
    assert first.returncode == 0, first
    deadline = time.monotonic() + 60
    while len(loading.read_text().split()) < 2:  # the server imports it now
        assert time.monotonic() < deadline, "the server never loaded the hooks"
        time.sleep(0.02)
    config = root / ".interlock" / "config.toml"
    config.write_text('[[hooks]\nname = "guard"\n')
    env.up(root)
    broken = env.call(root, "ls")
    assert broken.returncode == 2, broken
    assert "failed closed" in broken.stdout  # the config's error, not a drifted hook
    assert "config.toml" in broken.stdout


def test_a_thread_a_hook_leaves_running_does_not_keep_an_idle_server_alive(
        env: Env, tmp_path: Path) -> None:
    root = env.project(tmp_path / "p")
    ran = tmp_path / "ran"
    env.add_hook(root, "lingers", (
        "import os, threading, time\n\ndef handle(e):\n"
        f"    with open({str(ran)!r}, 'a') as out:\n"
        "        out.write(open(f'/proc/{os.getpid()}/cmdline').read().replace(chr(0), ' ')"
        " + '\\n')\n"
        "    threading.Thread(target=time.sleep, args=(3600,)).start()\n"))
    quick = {**env.vars, "INTERLOCK_BRIDGE_IDLE": "2"}
    assert env.call(root, "ls", env=quick).returncode == 0  # answered in process
    env.up(root, quick)
    assert env.call(root, "ls", env=quick).returncode == 0
    assert "interlock.hosts.bridge._daemon" in ran.read_text()  # the server ran it
    wait_for(lambda: not env.servers())


@pytest.mark.parametrize("variables", [
    {},
    {"XDG_CONFIG_HOME": "/x/config"},
    {"INTERLOCK_HOME": "~/ih"},
    {"INTERLOCK_HOME": "/ih", "INTERLOCK_STATE_DIR": "~/st"},
    {"XDG_CONFIG_HOME": "/x/config", "INTERLOCK_STATE_DIR": "/st"},
])
def test_the_fast_paths_state_dir_is_the_stores(variables: dict[str, str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The bridge's client finds a forwarder's record without pathlib; where it looks
    must be where the record is written."""
    from interlock.hosts.server.paths import state_dir_str as fast
    from interlock.store.paths import state_dir

    for name in ("XDG_CONFIG_HOME", "INTERLOCK_HOME", "INTERLOCK_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert fast() == str(state_dir())


@pytest.mark.parametrize("variable", ["CLAUDE_PROJECT_DIR", "INTERLOCK_PROJECT"])
def test_an_agent_started_in_a_subfolder_finds_the_project_above_it(
        env: Env, tmp_path: Path, variable: str) -> None:
    """Claude Code sets CLAUDE_PROJECT_DIR to the folder it was started in: from
    `project/src` the project's hooks still apply, as they do from a cwd there
    (docs/configuration.md, Which project). An explicit root is taken as given."""
    root = env.project(tmp_path / "p")
    (root / ".git").mkdir()
    sub = root / "src"
    sub.mkdir()
    # A user hook, so the bridge has a policy even where no project is found.
    home = Path(env.vars["INTERLOCK_HOME"])
    home.mkdir(parents=True)
    (home / "u.py").write_text("def handle(e):\n    return None\n")
    (home / "config.toml").write_text(
        '[[hooks]]\nname = "u"\nevents = ["before_tool_call"]\nhandler = "u.py"\n')
    variables = {**env.vars, variable: str(sub)}
    for extra in ((), ("--local",)):  # through the project's server, and in process
        got = subprocess.run(
            [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--deadline", "15",
             *extra], input=json.dumps(pre("rm -rf /")), capture_output=True, text=True,
            timeout=60, env=variables)
        if variable == "CLAUDE_PROJECT_DIR":
            assert blocked(got), (extra, got)
        else:
            assert got.returncode == 0, (extra, got)
