"""Someone else answers at the bridge's socket path, or answers what it cannot understand.

Without ``XDG_RUNTIME_DIR`` the socket lives in a shared temp folder, under
a predictable name: another local user can create that folder first and
listen there. The bridge must trust only a private folder of its own user and
a peer of its own uid; and a server answer it does not fully understand is a
deny, never "no opinion".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from _adv_bridge import ALLOW, GATES, FakeServer, Project, denied, http_answer

from interlock.hosts.server.paths import socket_path_for


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    # A short folder: the socket path must fit AF_UNIX's 108 bytes, which a test's
    # temp path (longer under pytest-xdist) need not.
    tmp = Path(tempfile.mkdtemp(prefix="il-adv-", dir="/tmp"))
    p = Project(tmp)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(p.runtime))
    monkeypatch.delenv("INTERLOCK_SOCKET", raising=False)
    yield p
    shutil.rmtree(tmp, ignore_errors=True)


def sock_path(project: Project) -> Path:
    return Path(socket_path_for(str(project.root)))


@pytest.fixture
def served(project: Project) -> Iterator[list[FakeServer]]:
    servers: list[FakeServer] = []
    yield servers
    for server in servers:
        server.close()


def test_a_socket_folder_others_may_write_is_not_trusted(project: Project,
                                                         served: list[FakeServer]) -> None:
    folder = sock_path(project).parent
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)  # what a squatter leaves: anyone may replace the socket
    served.append(FakeServer(sock_path(project), ALLOW))
    command = project.install("claude")["PreToolUse"]
    ran = project.host_runs("claude", command, GATES["claude"][1])
    assert denied("claude", ran), ran
    assert str(folder) in ran.stderr
    assert "0777" in ran.stderr
    assert served[0].requests == []  # the call was not even shown to it


def test_a_named_socket_in_a_shared_folder_is_not_trusted(project: Project, tmp_path: Path,
                                                         served: list[FakeServer]) -> None:
    # INTERLOCK_SOCKET pointing into a folder everyone may write (a shared /tmp).
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    served.append(FakeServer(shared / "interlock.sock", ALLOW))
    command = project.install("gemini")["BeforeTool"]
    ran = project.host_runs("gemini", command, GATES["gemini"][1],
                            env={"INTERLOCK_SOCKET": str(shared / "interlock.sock")})
    assert denied("gemini", ran), ran
    assert "1777" in ran.stderr
    assert served[0].requests == []


def test_a_socket_folder_that_is_a_symlink_is_not_trusted(project: Project, tmp_path: Path,
                                                          served: list[FakeServer]) -> None:
    elsewhere = tmp_path / "squatter"
    elsewhere.mkdir(mode=0o700)
    sock_path(project).parent.symlink_to(elsewhere)
    served.append(FakeServer(elsewhere / sock_path(project).name, ALLOW))
    command = project.install("claude")["PreToolUse"]
    ran = project.host_runs("claude", command, GATES["claude"][1])
    assert denied("claude", ran), ran
    assert "symlink" in ran.stderr
    assert served[0].requests == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another uid needs root")
def test_a_socket_folder_owned_by_another_user_is_not_trusted(project: Project,
                                                              served: list[FakeServer]) -> None:
    folder = sock_path(project).parent
    folder.mkdir(mode=0o700)
    served.append(FakeServer(sock_path(project), ALLOW))
    os.chown(folder, 65534, 65534)
    command = project.install("codex")["PreToolUse"]
    ran = project.host_runs("codex", command, GATES["codex"][1])
    assert denied("codex", ran), ran
    assert "owned by uid 65534" in ran.stderr
    assert served[0].requests == []


PEER = textwrap.dedent("""
    import os, socket, sys
    s = socket.socket(socket.AF_UNIX)
    s.bind(sys.argv[1])
    os.setgid(65534)
    os.setuid(65534)          # the peer's credentials are taken at listen()
    s.listen()
    print("ready", flush=True)
    conn, _ = s.accept()
    conn.recv(65536)
    conn.sendall(sys.stdin.buffer.read())
    conn.close()
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="a peer of another uid needs root to set up")
def test_a_server_of_another_uid_is_not_trusted(project: Project) -> None:
    # The folder passes every check (ours, 0700); the process answering does not.
    path = sock_path(project)
    path.parent.mkdir(mode=0o700)
    with subprocess.Popen([sys.executable, "-c", PEER, str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE) as peer:
        try:
            assert peer.stdin is not None
            assert peer.stdout is not None
            peer.stdin.write(ALLOW)
            peer.stdin.close()
            assert peer.stdout.readline().strip() == b"ready"
            command = project.install("claude")["PreToolUse"]
            ran = project.host_runs("claude", command, GATES["claude"][1])
        finally:
            peer.kill()
    assert denied("claude", ran), ran
    assert "uid 65534" in ran.stderr


ODD_ANSWERS = {
    "missing decision": b'{"event": "before_tool_call", "verdict": "allow"}',
    "unknown decision": b'{"event": "before_tool_call", "decision": "deny"}',
    "wrong case": b'{"event": "before_tool_call", "decision": "BLOCK"}',
    "allow is not ours": b'{"event": "before_tool_call", "decision": "allow"}',
    "duplicate keys": b'{"event": "before_tool_call", "decision": "block", "decision": "none"}',
    "nested duplicate": (b'{"event": "before_tool_call", "decision": "none", '
                         b'"changes": {"args": {"command": "ls", "command": "rm -rf ~"}}}'),
    "decision not a string": b'{"event": "before_tool_call", "decision": null}',
    "reason not a string": b'{"event": "before_tool_call", "decision": "none", "reason": 3}',
}


@pytest.mark.parametrize("agent", ["claude", "gemini", "cursor"])
@pytest.mark.parametrize("body", sorted(ODD_ANSWERS))
def test_a_server_answer_the_bridge_does_not_understand_is_a_deny(
        body: str, agent: str, project: Project, served: list[FakeServer]) -> None:
    sock_path(project).parent.mkdir(mode=0o700)
    served.append(FakeServer(sock_path(project), http_answer(ODD_ANSWERS[body])))
    event, payload = GATES[agent]
    command = project.install(agent)[event]
    ran = project.host_runs(agent, command, payload)
    assert denied(agent, ran), ran
    assert len(served[0].requests) == 1  # it did ask: the answer is what was refused
    assert "Interlock bridge failed closed" in ran.stdout + ran.stderr


def test_the_bridge_knows_every_decision_an_outcome_can_carry() -> None:
    # An outcome decision missing from the bridge's list would be denied as unknown.
    from interlock.engine.decisions import Verdict
    from interlock.hosts.bridge._common import DECISIONS

    assert {v.value for v in Verdict} == DECISIONS


def test_a_well_formed_answer_from_our_own_server_is_still_taken(
        project: Project, served: list[FakeServer]) -> None:
    # The control: the checks refuse strangers and nonsense, not our own server.
    sock_path(project).parent.mkdir(mode=0o700)
    served.append(FakeServer(sock_path(project), ALLOW))
    command = project.install("claude")["PreToolUse"]
    ran = project.host_runs("claude", command, GATES["claude"][1])
    assert ran.code == 0, ran
    assert ran.json["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert len(served[0].requests) == 1
