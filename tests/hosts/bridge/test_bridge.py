"""Bridges: each agent's documented payloads in, that agent's answers out.

The bridge runs as a real subprocess (``python -m interlock bridge <agent>``)
against a real server on a Unix socket; failure paths (no server and no
registry, a hung server, a server that hangs up, bad input, refusals) must
each answer with an explicit deny in the agent's format.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from interlock import Engine, approve, ask, block, context, modify
from interlock.hosts.bridge import HOSTS, host
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import TokenStore
from interlock.hosts.server.listen import Serving

pytestmark = pytest.mark.e2e


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def json(self) -> Any:
        return json.loads(self.stdout) if self.stdout.strip() else None


def bridge(agent: str, payload: Any, *, root: Path, sock: Path | None = None,
           args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> Run:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    full_env = {**os.environ, **(env or {})}
    full_env.pop("INTERLOCK_PROJECT", None)
    if sock is not None:
        full_env["INTERLOCK_SOCKET"] = str(sock)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "interlock", "bridge", agent, "--project",
                           str(root), *args], input=raw, capture_output=True, env=full_env,
                          timeout=60)
    return Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode(),
               time.monotonic() - t0)


HANG = threading.Event()


def policy() -> Engine:
    engine = Engine()

    @engine.on("before_tool_call", name="guard")
    def guard(event: Any) -> Any:
        command = event.args.get("command", "")
        if "rm -rf" in command:
            return block("destructive command", hint="delete specific paths")
        if command.startswith("sudo"):
            return ask("needs a person")
        if command == "git status":
            return approve("read-only")
        return None

    # blocking=True: a worker thread, so a hung hook never stalls the server's loop.
    @engine.on("before_tool_call", name="slow", blocking=True)
    def slow(event: Any) -> Any:
        if event.args.get("command") == "hang":
            HANG.wait(2)  # past the bridge deadline, short enough to free the pool thread
        return None

    @engine.on("before_tool_call", name="rewrite", modifies=True)
    def rewrite(event: Any) -> Any:
        if event.args.get("command") == "ls":
            return modify(args={**event.args, "command": "ls --color=never"})
        return None

    @engine.on("user_input", name="prompt")
    def prompt(event: Any) -> Any:
        if "password" in event.text:
            return block("no secrets in prompts")
        return context("house rules: be brief")

    @engine.on("before_stop", name="verify")
    def verify(event: Any) -> Any:
        return None if event.stop_hook_active else block("run the tests first")

    @engine.on("after_tool_call", name="after")
    def after(event: Any) -> Any:
        return context("checked")

    @engine.on("message_received", name="inbox", modifies=True)
    def inbox(event: Any) -> Any:
        return modify(text=event.text.replace("damn", "****"))

    return engine


@dataclass
class Server:
    root: Path
    sock: Path


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    root = Path(tempfile.mkdtemp(prefix="il-bridge-")).resolve()
    sock = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "run" / "serve.sock"
    engine = policy()
    app = create_app(engine, project_root=root, tokens=TokenStore(), socket_path=sock)
    serving = Serving(app, socket_path=sock, tcp=False)
    with serving.running():
        yield Server(root, sock)
        HANG.set()
    engine.close()


def run(server: Server, agent: str, payload: Any, *args: str) -> Run:
    return bridge(agent, payload, root=server.root, sock=server.sock, args=args)


# -- documented payloads --------------------------------------------------------

CLAUDE_PRE = {
    "session_id": "abc123", "transcript_path": "/home/user/.claude/projects/t.jsonl",
    "cwd": "/home/user/my-project", "permission_mode": "default",
    "hook_event_name": "PreToolUse", "tool_name": "Bash",
    "tool_input": {"command": "rm -rf /", "description": "Clean", "timeout": 120000},
    "tool_use_id": "toolu_01ABC123"}


def claude_pre(command: str) -> dict[str, Any]:
    return {**CLAUDE_PRE, "tool_input": {**CLAUDE_PRE["tool_input"], "command": command}}


def test_claude_pre_tool_use_answers(server: Server) -> None:
    denied = run(server, "claude", claude_pre("rm -rf /"))
    assert denied.code == 2
    out = denied.json["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["permissionDecision"] == "deny"
    assert "destructive command" in out["permissionDecisionReason"]
    assert "delete specific paths" in out["permissionDecisionReason"]
    assert "destructive command" in denied.stderr
    asked = run(server, "claude", claude_pre("sudo ls"))
    assert (asked.code, asked.json["hookSpecificOutput"]["permissionDecision"]) == (0, "ask")
    allowed = run(server, "claude", claude_pre("git status"))
    assert allowed.json["hookSpecificOutput"]["permissionDecision"] == "allow"
    rewritten = run(server, "claude", claude_pre("ls"))
    out = rewritten.json["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask"  # a rewrite is not an approval
    assert "changed this call's arguments" in out["permissionDecisionReason"]
    assert out["updatedInput"] == {"command": "ls --color=never", "description": "Clean",
                                   "timeout": 120000}
    plain = run(server, "claude", claude_pre("make"))
    assert (plain.code, plain.stdout) == (0, "")


def test_claude_prompt_stop_and_post_tool(server: Server) -> None:
    base = {"session_id": "abc", "cwd": "/p", "transcript_path": "/t.jsonl"}
    prompt = run(server, "claude", {**base, "hook_event_name": "UserPromptSubmit",
                                    "prompt": "fix the bug"})
    assert prompt.code == 0
    assert "house rules" in prompt.json["hookSpecificOutput"]["additionalContext"]
    secret = run(server, "claude", {**base, "hook_event_name": "UserPromptSubmit",
                                    "prompt": "my password is hunter2"})
    assert (secret.code, secret.json["decision"]) == (2, "block")
    stop = run(server, "claude", {**base, "hook_event_name": "Stop", "stop_hook_active": False,
                                  "last_assistant_message": "done"})
    assert stop.code == 0
    assert stop.json == {"decision": "block", "reason": "run the tests first"}
    again = run(server, "claude", {**base, "hook_event_name": "Stop", "stop_hook_active": True})
    assert (again.code, again.stdout) == (0, "")
    post = run(server, "claude", {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                  "tool_input": {"command": "ls"},
                                  "tool_response": {"stdout": "a"}, "tool_use_id": "t1"})
    assert "checked" in post.json["hookSpecificOutput"]["additionalContext"]


CODEX_PRE = {"session_id": "019a", "turn_id": "turn-1", "transcript_path": None, "cwd": "/repo",
             "hook_event_name": "PreToolUse", "model": "gpt-5-codex",
             "permission_mode": "default", "tool_name": "Bash",
             "tool_input": {"command": "rm -rf build"}, "tool_use_id": "call_abc"}


def test_codex_answers_are_strict(server: Server) -> None:
    denied = run(server, "codex", CODEX_PRE)
    assert denied.code == 2
    assert denied.stderr.strip()  # Codex treats exit 2 with empty stderr as a failure
    out = denied.json["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"]
    asked = run(server, "codex", {**CODEX_PRE, "tool_input": {"command": "sudo ls"}})
    assert asked.code == 2  # Codex rejects "ask": no person can answer through the hook
    assert asked.json["hookSpecificOutput"]["permissionDecision"] == "deny"
    approved = run(server, "codex", {**CODEX_PRE, "tool_input": {"command": "git status"}})
    assert (approved.code, approved.stdout) == (0, "")  # a bare "allow" is invalid in Codex
    # Codex applies updatedInput only with allow, and a rewrite is not an approval.
    rewritten = run(server, "codex", {**CODEX_PRE, "tool_input": {"command": "ls"}})
    assert rewritten.code == 2
    out = rewritten.json["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "changed this call's arguments" in out["permissionDecisionReason"]
    assert "updatedInput" not in out
    stop = run(server, "codex", {"session_id": "s", "cwd": "/r", "hook_event_name": "Stop",
                                 "stop_hook_active": False, "last_assistant_message": None})
    assert stop.json == {"decision": "block", "reason": "run the tests first"}


GEMINI_BEFORE = {"session_id": "abc123", "transcript_path": "/path/t.jsonl",
                 "cwd": "/path/to/project", "hook_event_name": "BeforeTool",
                 "timestamp": "2025-12-01T10:30:00Z", "tool_name": "run_shell_command",
                 "tool_input": {"command": "rm -rf /tmp/x"}}


def test_gemini_answers(server: Server) -> None:
    denied = run(server, "gemini", GEMINI_BEFORE)
    assert denied.code == 2
    assert denied.json["decision"] == "deny"
    assert "destructive command" in denied.stderr
    rewritten = run(server, "gemini", {**GEMINI_BEFORE, "tool_input": {"command": "ls"}})
    assert rewritten.code == 0
    assert rewritten.json["hookSpecificOutput"]["tool_input"] == {"command": "ls --color=never"}
    approved = run(server, "gemini", {**GEMINI_BEFORE, "tool_input": {"command": "git status"}})
    assert approved.json == {"decision": "allow"}
    before_agent = run(server, "gemini", {"session_id": "s", "cwd": "/p",
                                          "hook_event_name": "BeforeAgent", "prompt": "hello"})
    assert "house rules" in before_agent.json["hookSpecificOutput"]["additionalContext"]


CURSOR_SHELL = {"conversation_id": "c-1", "generation_id": "g-1", "model": "claude-4-sonnet",
                "hook_event_name": "beforeShellExecution", "cursor_version": "1.7.2",
                "workspace_roots": ["/path/to/project"], "user_email": None,
                "command": "rm -rf /", "cwd": "/path/to/project"}


def test_cursor_answers(server: Server) -> None:
    denied = run(server, "cursor", CURSOR_SHELL)
    assert denied.code == 0
    assert denied.json["permission"] == "deny"
    assert "destructive command" in denied.json["user_message"]
    assert denied.json["agent_message"] == denied.json["agentMessage"]
    asked = run(server, "cursor", {**CURSOR_SHELL, "command": "sudo reboot"})
    assert asked.json["permission"] == "ask"
    ok = run(server, "cursor", {**CURSOR_SHELL, "command": "git status"})
    assert ok.json["permission"] == "allow"
    mcp = run(server, "cursor", {**CURSOR_SHELL, "hook_event_name": "beforeMCPExecution",
                                 "tool_name": "terminal",
                                 "tool_input": json.dumps({"command": "rm -rf /"}),
                                 "command": "npx server"})
    assert mcp.json["permission"] == "deny"
    # Cursor cannot take a rewrite, so the rewritten "ls" is denied, not run unchanged.
    rewrite = run(server, "cursor", {**CURSOR_SHELL, "command": "ls"})
    assert rewrite.json["permission"] == "deny"
    prompt = run(server, "cursor", {**CURSOR_SHELL, "hook_event_name": "beforeSubmitPrompt",
                                    "prompt": "my password is x", "attachments": []})
    assert prompt.json["continue"] is False
    newer = run(server, "cursor", {"conversation_id": "c-1", "hook_event_name": "preToolUse",
                                   "workspace_roots": ["/p"], "tool_name": "Shell",
                                   "tool_input": {"command": "rm -rf /"}})
    assert newer.json["permission"] == "deny"
    read = run(server, "cursor", {**CURSOR_SHELL, "hook_event_name": "beforeReadFile",
                                  "file_path": "/p/.env", "content": "x"})
    assert read.json == {}  # no read policy: no opinion
    stop = run(server, "cursor", {**CURSOR_SHELL, "hook_event_name": "stop",
                                  "status": "completed", "loop_count": 0})
    assert stop.json == {"followup_message": "run the tests first"}


HERMES_PRE = {"hook_event_name": "pre_tool_call", "tool_name": "terminal",
              "tool_input": {"command": "rm -rf /"}, "session_id": "sess_abc123",
              "cwd": "/home/user/project", "profile": "default",
              "extra": {"task_id": "t", "tool_call_id": "c1", "turn_id": "u1"}}


def test_hermes_answers(server: Server) -> None:
    denied = run(server, "hermes", HERMES_PRE)
    assert denied.code == 0
    assert denied.json["decision"] == "block"
    assert "destructive command" in denied.json["reason"]
    asked = run(server, "hermes", {**HERMES_PRE, "tool_input": {"command": "sudo ls"}})
    assert asked.json["decision"] == "block"  # a shell hook has no person to ask
    rewrite = run(server, "hermes", {**HERMES_PRE, "tool_input": {"command": "ls"}})
    assert rewrite.json["decision"] == "block"  # Hermes shell hooks cannot rewrite
    fine = run(server, "hermes", {**HERMES_PRE, "tool_input": {"command": "make"}})
    assert (fine.code, fine.stdout) == (0, "")
    llm = run(server, "hermes", {**HERMES_PRE, "hook_event_name": "pre_llm_call",
                                 "tool_name": None, "tool_input": None,
                                 "extra": {"user_message": "hi"}})
    assert "house rules" in llm.json["context"]
    verify = run(server, "hermes", {**HERMES_PRE, "hook_event_name": "pre_verify",
                                    "tool_name": None, "tool_input": None, "extra": {}})
    assert verify.json == {"decision": "block", "reason": "run the tests first"}


MOLTIS_BEFORE = {"event": "BeforeToolCall", "session_key": "abc123",
                 "tool_call_id": "call_01JXYZ", "tool_name": "exec",
                 "arguments": {"command": "rm -rf /"},
                 "channel": {"surface": "telegram", "session_kind": "channel",
                             "channel_type": "telegram", "account_id": "bot-main",
                             "chat_id": "-100123", "chat_type": "channel_or_supergroup"}}


def test_moltis_answers(server: Server) -> None:
    denied = run(server, "moltis", MOLTIS_BEFORE)
    assert denied.code == 1  # Moltis blocks on exit 1, reason on stderr
    assert "destructive command" in denied.stderr
    rewrite = run(server, "moltis", {**MOLTIS_BEFORE, "arguments": {"command": "ls"}})
    assert rewrite.code == 0
    assert rewrite.json == {"action": "modify", "data": {"command": "ls --color=never"}}
    received = run(server, "moltis", {"event": "MessageReceived", "session_key": "s",
                                      "content": "damn it", "channel": "telegram"})
    assert received.json == {"action": "modify", "data": {"content": "**** it"}}
    fine = run(server, "moltis", {**MOLTIS_BEFORE, "arguments": {"command": "make"}})
    assert (fine.code, fine.stdout) == (0, "")


# -- failure paths: every one answers deny ------------------------------------

DENIES: dict[str, tuple[dict[str, Any], int]] = {
    "claude": (CLAUDE_PRE, 2), "codex": (CODEX_PRE, 2), "gemini": (GEMINI_BEFORE, 2),
    "cursor": (CURSOR_SHELL, 0), "hermes": (HERMES_PRE, 0), "moltis": (MOLTIS_BEFORE, 1)}


def assert_deny(agent: str, result: Run, needle: str) -> None:
    _payload, code = DENIES[agent]
    assert result.code == code, result
    text = result.stdout + result.stderr
    assert needle in text, text
    data = result.json
    if agent in ("claude", "codex"):
        # Before the host event is known (unreadable input) the generic block
        # applies; exit 2 blocks every blockable event either way.
        specific = data.get("hookSpecificOutput", {}).get("permissionDecision")
        assert specific == "deny" or data.get("decision") == "block"
    elif agent == "gemini":
        assert data["decision"] == "deny"
    elif agent == "cursor":
        assert data["permission"] == "deny"
    elif agent == "hermes":
        assert data["decision"] == "block"
    else:
        assert data is None
        assert needle in result.stderr


@pytest.mark.parametrize("agent", HOSTS)
def test_no_server_and_no_registry_denies(agent: str, tmp_path: Path) -> None:
    result = bridge(agent, DENIES[agent][0], root=tmp_path, sock=tmp_path / "none.sock")
    assert_deny(agent, result, "no server is running")


@pytest.mark.parametrize("agent", HOSTS)
def test_hung_server_denies_at_the_bridge_deadline(agent: str, server: Server) -> None:
    payload = dict(DENIES[agent][0])
    for key in ("tool_input", "arguments"):
        if key in payload:
            payload[key] = {"command": "hang"}
    if "command" in payload:
        payload["command"] = "hang"
    result = run(server, agent, payload, "--deadline", "0.5")
    # The watchdog or the socket's own timeout, whichever fires first.
    needle = "no answer within 0.5 s" if "no answer" in result.stdout + result.stderr else (
        "the server did not answer: timed out")
    assert_deny(agent, result, needle)
    assert result.seconds < 10


@pytest.mark.parametrize("agent", HOSTS)
def test_bad_input_denies(agent: str, server: Server) -> None:
    assert_deny(agent, run(server, agent, b"{not json"), "not JSON")
    assert_deny(agent, run(server, agent, b"[1, 2]"), "not a JSON object")


@pytest.mark.parametrize("agent", HOSTS)
def test_bad_options_deny(agent: str, server: Server) -> None:
    assert_deny(agent, run(server, agent, DENIES[agent][0], "--deadline", "soon"),
                "not a number")
    assert_deny(agent, run(server, agent, DENIES[agent][0], "--frobnicate"), "unknown option")


@pytest.mark.parametrize("agent", HOSTS)
def test_a_refusing_server_denies(agent: str, server: Server, tmp_path: Path) -> None:
    # A server for another project refuses this one's events.
    result = bridge(agent, DENIES[agent][0], root=tmp_path, sock=server.sock)
    assert_deny(agent, result, "not this server's project")


def _hang_up_server(path: str, stop: threading.Event) -> threading.Thread:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()
    listener.settimeout(0.2)

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.recv(65536)
            conn.close()  # read the request, then hang up without answering
        listener.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("agent", HOSTS)
def test_server_hanging_up_after_the_request_denies(agent: str, tmp_path: Path) -> None:
    path = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "s.sock"
    stop = threading.Event()
    thread = _hang_up_server(str(path), stop)
    try:
        result = bridge(agent, DENIES[agent][0], root=tmp_path, sock=path)
    finally:
        stop.set()
        thread.join(5)
    assert_deny(agent, result, "closed the connection before answering")


@pytest.mark.parametrize("agent", HOSTS)
def test_unmapped_event_denies(agent: str, server: Server) -> None:
    payload = {**DENIES[agent][0], "hook_event_name": "NoSuchEvent", "event": "NoSuchEvent"}
    result = run(server, agent, payload)
    assert "has no Interlock event" in result.stdout + result.stderr
    assert result.code == DENIES[agent][1]


def test_failures_on_no_effect_events_do_not_block(tmp_path: Path) -> None:
    # A failing Stop check must not keep Claude working forever.
    result = bridge("claude", {"hook_event_name": "Stop", "session_id": "s"}, root=tmp_path,
                    sock=tmp_path / "none.sock")
    assert (result.code, result.stdout) == (0, "")
    assert "no effect on Stop" in result.stderr


def test_no_effect_tables_match_the_catalog() -> None:
    from interlock.engine.catalog import SPECS, FailClosed, Kind, names_in

    for agent in HOSTS:
        expected = {name for spec in SPECS
                    if spec.kind is Kind.OBSERVE or spec.fail_closed is FailClosed.NO_EFFECT
                    for name in names_in(agent, spec)}
        mod = host(agent)
        assert expected | mod.UNMAPPED_OBSERVE == mod.NO_EFFECT, agent
        mapped = {name for spec in SPECS for name in names_in(agent, spec)}
        assert not (mod.UNMAPPED_OBSERVE | mod.UNMAPPED_GATE) & mapped, agent


def test_unknown_agent_is_a_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "interlock", "bridge", "vim"],
                          input=b"{}", capture_output=True)
    assert proc.returncode == 2
    assert b"unknown agent" in proc.stderr


# -- in process (no server): the registry's engine, loaded lazily ------------

def _in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                agent: str, payload: dict[str, Any], registry: ModuleType,
                root: Path) -> tuple[int, str, str]:
    from interlock.hosts.bridge import main

    monkeypatch.setitem(sys.modules, "interlock.config.registry", registry)
    monkeypatch.setenv("INTERLOCK_SOCKET", str(root / "none.sock"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    code = main([agent, "--project", str(root)])
    out = capsys.readouterr()
    return code, out.out, out.err


class _NoRegistry:
    recorded = False
    permissions: list[Any] = []  # no [[permissions]] rules

    def close(self) -> None:
        pass

    def record(self, **options: Any) -> None:
        self.recorded = True


def _registry(factory: Any) -> ModuleType:
    """Stands in for the registry's loading step so a test can hand the bridge
    an engine directly (or make loading fail in a chosen way)."""
    module = ModuleType("interlock.config.registry")

    def open_engine(root: Path, **options: Any) -> tuple[Engine, _NoRegistry]:
        return factory(root), _NoRegistry()

    def close_engine(engine: Engine, registry: _NoRegistry, *args: Any, **options: Any) -> bool:
        registry.close()
        engine.close()
        return True  # nothing recorded, so nothing left to commit

    module.open_engine = open_engine  # type: ignore[attr-defined]
    module.close_engine = close_engine  # type: ignore[attr-defined]
    return module


def test_in_process_evaluation_without_a_server(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    opened: list[Path] = []

    def open_engine(root: Path) -> Engine:
        opened.append(root)
        return policy()

    code, out, _ = _in_process(monkeypatch, capsys, "claude", CLAUDE_PRE, _registry(open_engine),
                               tmp_path)
    assert code == 2
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert opened == [tmp_path.resolve()]
    code, out, _ = _in_process(monkeypatch, capsys, "claude", claude_pre("ls"),
                               _registry(open_engine), tmp_path)
    assert json.loads(out)["hookSpecificOutput"]["updatedInput"]["command"] == "ls --color=never"


@pytest.mark.parametrize("agent", HOSTS)
def test_in_process_crash_and_bad_config_deny(agent: str, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    from interlock import ConfigError

    def bad_config(root: Path) -> Engine:
        raise ConfigError("not a number", file=".interlock/config.toml", line=3, field="timeout")

    def crash(root: Path) -> Engine:
        raise RuntimeError("boom")

    for factory, needle in ((bad_config, "config.toml:3"), (crash, "RuntimeError: boom")):
        code, out, err = _in_process(monkeypatch, capsys, agent, DENIES[agent][0],
                                     _registry(factory), tmp_path)
        assert_deny(agent, Run(code, out, err, 0.0), needle)


# -- the fast path ----------------------------------------------------------------

def _imported(env: dict[str, str], root: Path, payload: dict[str, Any]) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "interlock", "bridge",
                           "claude", "--project", str(root)], input=json.dumps(payload).encode(),
                          capture_output=True, env={**os.environ, **env}, timeout=60)
    names = set()
    for line in proc.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, proc.stderr
    return names


FRAMEWORKS = ("typer", "click", "rich", "starlette", "uvicorn")


def test_bridge_imports_no_cli_framework(server: Server, tmp_path: Path) -> None:
    with_server = _imported({"INTERLOCK_SOCKET": str(server.sock)}, server.root, CLAUDE_PRE)
    without = _imported({"INTERLOCK_SOCKET": str(tmp_path / "none.sock")}, tmp_path, CLAUDE_PRE)
    for names in (with_server, without):
        assert not [n for n in names if n.split(".")[0] in FRAMEWORKS]
    # With a server up the bridge does not even load the engine or the catalog.
    heavy = {"interlock.engine.dispatch", "interlock.engine.catalog", "asyncio", "msgspec"}
    assert not heavy & with_server


def test_in_process_bridge_imports_extension_machinery_only_for_extensions(
        tmp_path: Path) -> None:
    from importlib.metadata import entry_points

    if entry_points(group="interlock.extensions"):
        pytest.skip("an extension package is installed in this environment")
    config = tmp_path / ".interlock" / "config.toml"
    config.parent.mkdir()
    config.write_text('[[hooks]]\nname = "log"\nevents = ["session_start"]\n'
                      'handler = "log.py"\n')
    (tmp_path / ".interlock" / "log.py").write_text("def handle(event):\n    return None\n")
    home = tmp_path / "home"
    env = {"INTERLOCK_SOCKET": str(tmp_path / "none.sock"), "INTERLOCK_HOME": str(home),
           "INTERLOCK_STATE_DIR": str(home / "state"), "INTERLOCK_ACCEPT_HOOKS": "1"}
    machinery = {"interlock.ext.loader"}
    without = _imported(env, tmp_path, CLAUDE_PRE)
    assert not machinery & without
    ext = home / "extensions" / "quiet"
    ext.mkdir(parents=True)
    (ext / "extension.toml").write_text('name = "quiet"\n')
    (ext / "extension.py").write_text("def register(ctx):\n    pass\n")
    with_extensions = _imported(env, tmp_path, CLAUDE_PRE)
    assert machinery <= with_extensions
    # The host assembly (interlock.hosts.assembly) never needs the reference agent.
    assert "interlock.agent" not in without | with_extensions


@pytest.mark.parametrize("agent", ["claude", "moltis"])
def test_watchdog_denies_when_an_in_process_hook_hangs(agent: str, tmp_path: Path) -> None:
    # No server; the project's real config has a hook that never returns. The
    # SIGALRM watchdog must answer deny at the bridge's deadline.
    config = tmp_path / ".interlock" / "config.toml"
    config.parent.mkdir()
    config.write_text('[[hooks]]\nname = "stuck"\nevents = ["before_tool_call"]\n'
                      'command = ["sleep", "60"]\ntimeout = 120\n')
    home = tmp_path / "home"
    result = bridge(agent, DENIES[agent][0], root=tmp_path, sock=tmp_path / "none.sock",
                    args=("--deadline", "0.5"),
                    env={"INTERLOCK_HOME": str(home), "INTERLOCK_STATE_DIR": str(home / "state"),
                         "INTERLOCK_ACCEPT_HOOKS": "1"})
    assert_deny(agent, result, "no answer within 0.5 s")
    assert result.seconds < 10


def test_block_reasons_reaching_the_model_are_redacted(tmp_path: Path) -> None:
    engine = Engine()
    secret = "ghp_" + "a1B2" * 9
    engine.on("before_tool_call", lambda e: block(f"token {secret} leaked"), name="leaky")
    sock = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "run" / "serve.sock"
    app = create_app(engine, project_root=tmp_path, tokens=TokenStore(), socket_path=sock)
    with Serving(app, socket_path=sock, tcp=False).running():
        result = bridge("claude", CLAUDE_PRE, root=tmp_path, sock=sock)
    engine.close()
    assert result.code == 2
    assert secret not in result.stdout + result.stderr
    assert "[REDACTED]" in result.json["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_crash_inside_the_bridge_denies(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(host("claude"), "answer", broken)
    code, out, err = _in_process(monkeypatch, capsys, "claude", CLAUDE_PRE,
                                 _registry(lambda root: policy()), tmp_path)
    assert_deny("claude", Run(code, out, err, 0.0), "KeyError")


def _one_answer_server(path: str, answer: bytes) -> threading.Thread:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(answer)
        conn.close()
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("answer", "needle"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", "malformed"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nnope!", "not JSON"),
    (b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 17\r\n\r\n{\"error\": \"bug\"}\n",
     "refused (500)"),
    (b"garbage", "closed the connection before answering"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", "cut short"),
])
def test_a_malformed_server_answer_denies(answer: bytes, needle: str, tmp_path: Path) -> None:
    path = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "s.sock"
    thread = _one_answer_server(str(path), answer)
    result = bridge("claude", CLAUDE_PRE, root=tmp_path, sock=path)
    thread.join(5)
    assert_deny("claude", result, needle)


def test_claude_answer_table() -> None:
    """Decisions the policy server rarely produces, checked on the mapping itself."""
    from interlock.hosts.bridge._common import Result

    claude = host("claude")
    rewrite_and_ask = claude.answer("PreToolUse", {}, Result(
        "before_tool_call", "ask", reason="check", changes={"args": {"command": "ls -l"}}))
    out = json.loads(rewrite_and_ask.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask"  # a rewrite never skips the person
    assert out["updatedInput"] == {"command": "ls -l"}
    stopped = claude.answer("PreToolUse", {}, Result("before_tool_call", "stop", reason="halt"))
    body = json.loads(stopped.stdout)
    assert body["continue"] is False
    assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
    responded = claude.answer("PreToolUse", {}, Result("before_tool_call", "respond",
                                                        value={"ok": 1}))
    assert responded.code == 2
    assert '{"ok": 1}' in responded.stderr
    permission = claude.answer("PermissionRequest", {}, Result("permission_request", "approve"))
    assert json.loads(permission.stdout)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    undecided = claude.answer("PermissionRequest", {}, Result("permission_request", "ask"))
    assert (undecided.code, undecided.stdout) == (0, "")  # the person decides
    denied = claude.answer("PermissionRequest", {}, Result("permission_request", "block",
                                                            reason="no"))
    assert denied.code == 0  # exit 2 is not honoured on PermissionRequest: JSON decides
    assert json.loads(denied.stdout)["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    codex = host("codex")
    strict_stop = codex.answer("PreToolUse", {}, Result("before_tool_call", "stop", reason="x"))
    assert "continue" not in json.loads(strict_stop.stdout)


# -- a rewrite is not an approval ---------------------------------------------------

# Each bridge's host event for a tool call, and how each agent reads an approval.
# Hermes and Moltis hooks have no answer that approves; they are here so that
# a future one is checked too.
TOOL_CALL = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool",
             "cursor": "preToolUse", "hermes": "pre_tool_call", "moltis": "BeforeToolCall"}
CURL = {"command": "curl x | sh"}
CURL_TIMEOUT = {**CURL, "timeout": 30}


def _approves(agent: str, stdout: str) -> bool:
    body = json.loads(stdout) if stdout.strip() else {}
    if agent in ("claude", "codex"):
        return bool(body.get("hookSpecificOutput", {}).get("permissionDecision") == "allow")
    if agent == "gemini":
        return bool(body.get("decision") == "allow")
    if agent == "cursor":
        return bool(body.get("permission") == "allow")
    return False


def test_every_host_has_a_tool_call_event() -> None:
    assert set(TOOL_CALL) == set(HOSTS)


@pytest.mark.parametrize("agent", HOSTS)
def test_a_rewrite_alone_is_never_answered_as_an_approval(agent: str) -> None:
    # A harmless normaliser (it adds a timeout) must not wave `curl x | sh`
    # past the agent's own permission prompt (security review r3).
    from interlock.hosts.bridge._common import Result

    reply = host(agent).answer(TOOL_CALL[agent], {"tool_input": CURL, "arguments": CURL},
                               Result("before_tool_call", "modify",
                                      changes={"args": CURL_TIMEOUT}))
    assert not _approves(agent, reply.stdout), reply


def test_claude_asks_about_a_rewrite_and_codex_denies_it() -> None:
    from interlock.hosts.bridge._common import Result

    rewrite = Result("before_tool_call", "modify", changes={"args": CURL_TIMEOUT})
    out = json.loads(host("claude").answer("PreToolUse", {}, rewrite).stdout)
    assert out["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse", "permissionDecision": "ask",
        "permissionDecisionReason": "Interlock: policy changed this call's arguments; "
                                    "confirm the changed call",
        "updatedInput": CURL_TIMEOUT}
    denied = host("codex").answer("PreToolUse", {}, rewrite)
    assert denied.code == 2
    assert denied.stderr.strip()  # Codex needs a reason on stderr with exit 2
    out = json.loads(denied.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "nothing approved the changed call" in out["permissionDecisionReason"]


def test_an_approved_rewrite_is_allowed_with_the_new_input() -> None:
    from interlock.hosts.bridge._common import Result

    approved = Result("before_tool_call", "approve", reason="vetted",
                      changes={"args": CURL_TIMEOUT})
    claude = json.loads(host("claude").answer("PreToolUse", {}, approved).stdout)
    assert claude["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": CURL_TIMEOUT, "permissionDecisionReason": "vetted"}
    codex = json.loads(host("codex").answer("PreToolUse", {}, approved).stdout)
    assert codex["hookSpecificOutput"] == {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": CURL_TIMEOUT}
    gemini = json.loads(host("gemini").answer("BeforeTool", {"tool_input": CURL},
                                              approved).stdout)
    assert gemini == {"decision": "allow",
                      "hookSpecificOutput": {"hookEventName": "BeforeTool",
                                             "tool_input": CURL_TIMEOUT}}


@pytest.mark.parametrize(("approver", "expected"), [(False, "ask"), (True, "allow")])
def test_the_engines_merged_verdict_decides_allow(approver: bool, expected: str) -> None:
    """From the engine's outcome to Claude's answer, as the bridge runs it in process."""
    from interlock.events import BeforeToolCall
    from interlock.hosts.bridge._common import Result

    engine = Engine()
    engine.on("before_tool_call", lambda e: modify(args={**e.args, "timeout": 30}),
              modifies=True, matcher="terminal", name="normalise")
    if approver:
        engine.on("before_tool_call", lambda e: approve("vetted"), name="vet")
    event = BeforeToolCall(tool_name="terminal", args=CURL)
    try:
        result = Result.from_dict(engine.emit_sync(event).to_dict(event))
    finally:
        engine.close()
    out = json.loads(host("claude").answer("PreToolUse", {}, result).stdout)
    assert out["hookSpecificOutput"]["permissionDecision"] == expected
    assert out["hookSpecificOutput"]["updatedInput"] == CURL_TIMEOUT
