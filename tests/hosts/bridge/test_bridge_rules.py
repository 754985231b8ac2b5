"""The project's ``[[permissions]]`` rules bind agents behind a bridge too
(docs/one-policy.md, Permission rules): judged after the hooks, on Interlock's
tool names and the arguments as the hooks left them, answered in the agent's
own terms, in process and through a server alike.

Real bridge processes, as in test_bridge_autostart.py. Rules are consented as
hooks are there (``INTERLOCK_ACCEPT_HOOKS``); a deny rule needs no consent.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from helpers.bridges import Env, pre

pytestmark = pytest.mark.e2e

DENY_RM = '[[permissions]]\ntool = "terminal"\npattern = "rm *"\naction = "deny"\n'
ASK_PUSH = '[[permissions]]\ntool = "terminal"\npattern = "git push*"\naction = "ask"\n'
ALLOW_ALL = '[[permissions]]\ntool = "terminal"\npattern = "*"\naction = "allow"\n'

QUIET = "def handle(e):\n    return None\n"
APPROVE_ALL = "from interlock import approve\n\ndef handle(e):\n    return approve('fine by me')\n"
TIDY = ("from interlock import modify\n\ndef handle(e):\n"
        "    if e.args.get('command') == 'tidy':\n"
        "        return modify(args={**e.args, 'command': 'rm -rf build'})\n"
        "    return None\n")

DENIED = "a permission rule denies it"
ASKED = "a permission rule asks for approval"

CODEX_PRE = {"session_id": "019a", "turn_id": "turn-1", "cwd": "/repo",
             "hook_event_name": "PreToolUse", "model": "gpt-5-codex",
             "permission_mode": "default", "tool_name": "Bash",
             "tool_input": {"command": "ls"}, "tool_use_id": "call_abc"}
GEMINI_BEFORE = {"session_id": "abc123", "cwd": "/repo", "hook_event_name": "BeforeTool",
                 "tool_name": "run_shell_command", "tool_input": {"command": "ls"}}


def project(env: Env, base: Path, rules: str, *hooks: tuple[str, str]) -> Path:
    """A project with ``rules`` and the before_tool_call hooks ``(name, source)``."""
    root = env.project(base, hooks=False)
    config = rules
    for name, source in hooks:
        (root / ".interlock" / f"{name}.py").write_text(source)
        config += (f'\n[[hooks]]\nname = "{name}"\nevents = ["before_tool_call"]\n'
                   f'handler = "{name}.py"\nmodifies = true\n')
    (root / ".interlock" / "config.toml").write_text(config)
    return root


class Caller:
    """Calls the bridge in process (no server is started or used) or through the
    project's bridge server (started by a first call, then up for the rest)."""

    def __init__(self, env: Env, mode: str) -> None:
        self.env = env
        self.mode = mode
        self.vars = {**env.vars, "INTERLOCK_BRIDGE_AUTOSTART": "0"} if mode == "in process" \
            else env.vars

    def ready(self, root: Path) -> None:
        if self.mode == "server":
            env = self.env
            env.call(root, "true", env=self.vars)  # answers in process, starts the server
            env.up(root)

    def __call__(self, root: Path, payload: dict[str, Any] | str,
                 agent: str = "claude") -> subprocess.CompletedProcess[str]:
        body = pre(payload) if isinstance(payload, str) else payload
        return subprocess.run(
            [sys.executable, "-I", "-m", "interlock.bridge", agent, "--project", str(root),
             "--deadline", "15"], input=json.dumps(body), capture_output=True, text=True,
            timeout=60, env=self.vars)


@pytest.fixture(params=["in process", "server"])
def call(request: pytest.FixtureRequest, env: Env) -> Caller:
    return Caller(env, request.param)


def decision(result: subprocess.CompletedProcess[str]) -> tuple[int, str | None, str]:
    """The exit code, Claude's permissionDecision (None for no opinion), and its reason."""
    if not result.stdout.strip():
        return result.returncode, None, ""
    out = json.loads(result.stdout).get("hookSpecificOutput", {})
    return (result.returncode, out.get("permissionDecision"),
            out.get("permissionDecisionReason", ""))


@pytest.mark.parametrize("hooks", [(), (("quiet", QUIET),)], ids=["no hooks", "a quiet hook"])
def test_a_deny_rule_denies_the_call_and_lets_the_others_through(
        env: Env, call: Caller, tmp_path: Path, hooks: tuple[tuple[str, str], ...]) -> None:
    root = project(env, tmp_path / "p", DENY_RM, *hooks)
    call.ready(root)
    code, said, reason = decision(call(root, "rm -rf x"))
    assert (code, said) == (2, "deny")
    assert DENIED in reason
    assert decision(call(root, "ls")) == (0, None, "")
    # The audit log says what the rule decided (strict audit: committed before the
    # answer). Before: only the hooks' rows, which said "none".
    from interlock.store import AuditQuery, open_store

    store = open_store(env.vars["INTERLOCK_STORE"])
    try:
        rows = store.audit(AuditQuery(hook="permissions"))
    finally:
        store.close()
    assert [(r.event, r.subject, r.verdict, r.reason, r.outcome) for r in rows] == [
        ("before_tool_call", "terminal", "block", DENIED, "block")]
    if call.mode == "in process":
        assert env.servers() == []


def test_a_deny_rule_sees_through_a_shell_string_and_a_wrapper(env: Env, call: Caller,
                                                               tmp_path: Path) -> None:
    root = project(env, tmp_path / "p", DENY_RM + ALLOW_ALL)
    call.ready(root)
    for command in ("bash -c 'rm -rf /'", "sudo rm -rf /"):
        code, said, reason = decision(call(root, command))
        assert (code, said) == (2, "deny")
        assert DENIED in reason
    assert decision(call(root, "bash -c 'echo rm -rf /'")) == (0, None, "")


def test_a_hook_s_approve_does_not_override_a_deny_rule(env: Env, call: Caller,
                                                       tmp_path: Path) -> None:
    root = project(env, tmp_path / "p", DENY_RM, ("approver", APPROVE_ALL))
    call.ready(root)
    code, said, reason = decision(call(root, "true && rm -rf x"))
    assert (code, said) == (2, "deny")
    assert DENIED in reason
    assert decision(call(root, "ls"))[:2] == (0, "allow")


def test_rules_judge_the_arguments_a_hook_rewrote(env: Env, call: Caller,
                                                 tmp_path: Path) -> None:
    root = project(env, tmp_path / "p", DENY_RM, ("tidy", TIDY))
    call.ready(root)
    code, said, reason = decision(call(root, "tidy"))
    assert (code, said) == (2, "deny")
    assert DENIED in reason


def test_an_ask_rule_asks_where_the_agent_can_and_denies_where_it_cannot(
        env: Env, call: Caller, tmp_path: Path) -> None:
    root = project(env, tmp_path / "p", ASK_PUSH, ("quiet", QUIET))
    call.ready(root)
    code, said, reason = decision(call(root, "git push origin main"))
    assert (code, said) == (0, "ask")
    assert ASKED in reason
    assert decision(call(root, "git status")) == (0, None, "")
    codex = call(root, {**CODEX_PRE, "tool_input": {"command": "git push"}}, "codex")
    assert codex.returncode == 2  # Codex has no ask: nobody could answer it
    assert json.loads(codex.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert ASKED in codex.stderr
    gemini = call(root, {**GEMINI_BEFORE, "tool_input": {"command": "git push"}}, "gemini")
    assert gemini.returncode == 2
    assert json.loads(gemini.stdout)["decision"] == "deny"


def test_a_hook_s_approve_is_the_approval_an_ask_rule_asks_for(env: Env, call: Caller,
                                                              tmp_path: Path) -> None:
    root = project(env, tmp_path / "p", ASK_PUSH, ("approver", APPROVE_ALL))
    call.ready(root)
    assert decision(call(root, "git push"))[:2] == (0, "allow")


def test_an_allow_rule_approves_nothing_on_its_own(env: Env, call: Caller,
                                                   tmp_path: Path) -> None:
    root = project(env, tmp_path / "p", ALLOW_ALL, ("quiet", QUIET))
    call.ready(root)
    # No opinion: the agent's own permission step still decides.
    assert decision(call(root, "rm -rf x")) == (0, None, "")


def test_the_other_events_are_not_judged_by_rules(env: Env, call: Caller,
                                                  tmp_path: Path) -> None:
    root = project(env, tmp_path / "p", DENY_RM, ("quiet", QUIET))
    call.ready(root)
    after = {"session_id": "s", "cwd": "/tmp", "hook_event_name": "PostToolUse",
             "tool_name": "Bash", "tool_input": {"command": "rm -rf x"},
             "tool_response": {"stdout": ""}, "tool_use_id": "t1"}
    result = call(root, after)
    assert (result.returncode, result.stdout.strip()) == (0, "")


# -- `interlock serve`: POST /v1/bridge/{agent} ------------------------------------------

class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def test_interlock_serve_applies_its_rules_to_bridge_calls(tmp_path: Path) -> None:
    from interlock import Engine
    from interlock.agent.permissions import rule
    from interlock.hosts.server.app import create_app
    from interlock.hosts.server.auth import TokenStore
    from interlock.hosts.server.listen import Serving

    root = tmp_path.resolve()
    sock = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "run" / "serve.sock"
    engine = Engine()

    @engine.on("before_tool_call", name="quiet")
    def quiet(event: Any) -> None:
        return None

    rules = [rule("terminal", "rm *", "deny")]
    app = create_app(engine, project_root=root, tokens=TokenStore(), socket_path=sock,
                     rules=lambda: rules)
    variables = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    variables["INTERLOCK_SOCKET"] = str(sock)
    with Serving(app, socket_path=sock, tcp=False).running():
        def bridge(command: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--project",
                 str(root)], input=json.dumps(pre(command)), capture_output=True, text=True,
                timeout=60, env=variables)

        code, said, reason = decision(bridge("rm -rf x"))
        assert (code, said) == (2, "deny")
        assert DENIED in reason
        assert decision(bridge("ls")) == (0, None, "")
        # The outcome as JSON (what an older bridge asks for) says the same.
        conn = UnixHTTPConnection(str(sock))
        try:
            conn.request("POST", "/v1/bridge/claude", body=json.dumps(pre("rm -rf x")),
                         headers={"Content-Type": "application/json"})
            answer = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        assert (answer["decision"], answer["reason"], answer["hook"]) == \
            ("block", DENIED, "permissions")
        # A client of the generic endpoint is an agent too: the same rules bind it.
        # Before: /v1/events answered the hooks' allow, and `rm -rf x` ran.
        for command, expected in (("rm -rf x", "block"), ("ls", "none")):
            conn = UnixHTTPConnection(str(sock))
            try:
                conn.request("POST", "/v1/events/before_tool_call",
                             body=json.dumps({"tool_name": "terminal",
                                              "args": {"command": command}}),
                             headers={"Content-Type": "application/json"})
                answer = json.loads(conn.getresponse().read())
            finally:
                conn.close()
            assert answer["decision"] == expected, (command, answer)
            if expected == "block":
                assert (answer["reason"], answer["hook"]) == (DENIED, "permissions")
    engine.close()


@pytest.mark.slow
def test_the_interlock_serve_command_applies_the_project_s_rules(env: Env,
                                                                tmp_path: Path) -> None:
    root = project(env, tmp_path / "p", DENY_RM, ("quiet", QUIET))
    sock = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "run" / "serve.sock"
    variables = {**env.vars, "INTERLOCK_SOCKET": str(sock)}
    proc = subprocess.Popen([sys.executable, "-m", "interlock", "serve", "--project", str(root),
                             "--port", "0"], env=variables, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while "listening on" not in line:
            assert line, "interlock serve ended before it listened"
            line = proc.stderr.readline()
        result = subprocess.run(
            [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--project", str(root)],
            input=json.dumps(pre("rm -rf x")), capture_output=True, text=True, timeout=60,
            env=variables)
        code, said, reason = decision(result)
        assert (code, said) == (2, "deny")
        assert DENIED in reason
        assert env.servers() == []  # `interlock serve` answered, not a bridge server
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        assert proc.stderr is not None
        proc.stderr.close()
