"""Remote bridges (docs/fleet.md): a real `interlock serve` over HTTPS on 127.0.0.1
with a test CA (trustme), and real bridge processes calling it.

Every way the remote path can go wrong (a certificate the machine does not
trust, a wrong pin, an expired or revoked token, a token file others can
read, no server, a 5xx, a body that is not JSON) must end in the host's
deny on a gate event; only "nothing answered" may go to the local policy,
and only where the install line says so.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from helpers.serve import Serve, wait_for

pytestmark = pytest.mark.e2e

POLICY = """
[[hooks]]
name = "no-rm"
events = ["before_tool_call"]
matcher = "terminal"
command = "if grep -q 'rm -rf'; then echo 'remote policy says no rm' >&2; exit 2; fi"
"""

LOCAL_POLICY = """
[[hooks]]
name = "local-no-rm"
events = ["before_tool_call"]
matcher = "terminal"
command = "if grep -q 'rm -rf'; then echo 'local policy says no rm' >&2; exit 2; fi"
"""


def call(command: str) -> bytes:
    return json.dumps({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": "/",
                       "tool_name": "Bash", "tool_input": {"command": command},
                       "tool_use_id": "t1"}).encode()


class Ran:
    def __init__(self, done: subprocess.CompletedProcess[bytes]) -> None:
        self.code = done.returncode
        self.stdout = done.stdout.decode()
        self.stderr = done.stderr.decode()

    @property
    def denied(self) -> bool:
        return self.code == 2 and '"deny"' in self.stdout

    @property
    def allowed(self) -> bool:
        return self.code == 0 and '"deny"' not in self.stdout


def bridge(args: list[str], stdin: bytes, env: dict[str, str] | None = None,
           cwd: Path | None = None) -> Ran:
    base = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_SERVER")}
    done = subprocess.run([sys.executable, "-I", "-m", "interlock.bridge", "claude",
                           "--deadline", "20", *args], input=stdin, capture_output=True,
                          env={**base, **(env or {})}, cwd=cwd or "/", timeout=60, check=False)
    return Ran(done)


def token_file(tmp: Path, name: str, token: str, mode: int = 0o600) -> Path:
    path = tmp / f"{name}.token"
    path.write_text(token + "\n")
    path.chmod(mode)
    return path


class World:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.ca = trustme.CA()
        cert = self.ca.issue_cert("127.0.0.1", "localhost")
        self.cert_pem = tmp / "server.pem"
        self.key_pem = tmp / "server.key"
        cert.cert_chain_pems[0].write_to_path(str(self.cert_pem))
        cert.private_key_pem.write_to_path(str(self.key_pem))
        self.ca_pem = tmp / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_pem))
        loaded = x509.load_pem_x509_certificate(cert.cert_chain_pems[0].bytes())
        self.cert_pin = "sha256:" + hashlib.sha256(loaded.public_bytes(Encoding.DER)).hexdigest()
        self.spki_pin = "sha256:" + hashlib.sha256(loaded.public_key().public_bytes(
            Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).hexdigest()
        self.serve = Serve(tmp / "server", POLICY, extra=[
            "--tls-cert", str(self.cert_pem), "--tls-key", str(self.key_pem)]).start()
        self.url = f"https://127.0.0.1:{self.serve.port}"
        made = self.serve.cli("serve", "token", "create", "laptop1")
        assert made.returncode == 0, made.stderr
        self.token = token_file(tmp, "laptop1", made.stdout.strip())

    def status(self, token: str) -> int:
        """The HTTP status of one evaluation with ``token``."""
        import http.client
        import ssl

        ctx = ssl.create_default_context(cafile=str(self.ca_pem))
        conn = http.client.HTTPSConnection("127.0.0.1", self.serve.port, context=ctx,
                                           timeout=30)
        try:
            conn.request("POST", "/v1/events/before_tool_call", b'{"tool_name": "ls"}',
                         {"Authorization": f"Bearer {token}"})
            return conn.getresponse().status
        finally:
            conn.close()

    def args(self, *, url: str | None = None, token: Path | None = None,
             ca: Path | None = None, pin: str | None = None) -> list[str]:
        out = ["--server", url or self.url, "--token-file", str(token or self.token),
               "--ca", str(ca or self.ca_pem)]
        return out + (["--pin", pin] if pin else [])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    made = World(tmp_path_factory.mktemp("fleet"))
    try:
        yield made
    finally:
        made.serve.stop()


def test_remote_policy_decides_over_https(world: World) -> None:
    blocked = bridge(world.args(), call("rm -rf ~"))
    assert blocked.denied, blocked.stderr
    assert "remote policy says no rm" in blocked.stdout
    assert bridge(world.args(), call("ls")).allowed


def test_pins_of_the_certificate_and_of_its_key_are_accepted(world: World) -> None:
    assert bridge(world.args(pin=world.spki_pin), call("ls")).allowed
    assert bridge(world.args(pin=world.cert_pin), call("ls")).allowed


def test_a_wrong_pin_denies(world: World) -> None:
    ran = bridge(world.args(pin="sha256:" + "ab" * 32), call("ls"))
    assert ran.denied
    assert "does not match the pin" in ran.stdout


def test_a_certificate_from_another_ca_denies(world: World, tmp_path: Path) -> None:
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    ran = bridge(world.args(ca=other), call("ls"))
    assert ran.denied
    assert "does not trust" in ran.stdout


def test_expired_and_revoked_tokens_deny(world: World, tmp_path: Path) -> None:
    made = world.serve.cli("serve", "token", "create", "old", "--expires-days", "0.00001")
    old = token_file(tmp_path, "old", made.stdout.strip())
    wait_for(lambda: world.status(made.stdout.strip()) == 401, what="the token to expire")
    ran = bridge(world.args(token=old), call("ls"))
    assert ran.denied
    assert "401" in ran.stdout

    made = world.serve.cli("serve", "token", "create", "gone")
    gone = token_file(tmp_path, "gone", made.stdout.strip())
    assert bridge(world.args(token=gone), call("ls")).allowed
    assert world.serve.cli("serve", "token", "revoke", "gone").returncode == 0
    assert bridge(world.args(token=gone), call("ls")).denied


def test_a_token_file_others_can_read_is_refused(world: World, tmp_path: Path) -> None:
    loose = token_file(tmp_path, "loose", world.token.read_text().strip(), mode=0o644)
    ran = bridge(world.args(token=loose), call("ls"))
    assert ran.denied
    assert "chmod 600" in ran.stdout
    missing = bridge(world.args(token=tmp_path / "nope"), call("ls"))
    assert missing.denied
    assert "does not exist" in missing.stdout


def test_plain_http_only_to_loopback(world: World) -> None:
    ran = bridge(world.args(url="http://policy.example.com"), call("ls"))
    assert ran.denied
    assert "plain http" in ran.stdout


def servers_file(tmp: Path, url: str, token: Path, ca: Path | None = None) -> Path:
    path = tmp / "servers.toml"
    path.write_text(f'[[server]]\nurl = "{url}"\ntoken_file = "{token}"\n'
                    + (f'ca = "{ca}"\n' if ca else ""))
    path.chmod(0o600)
    return path


def test_the_environment_names_a_server_the_users_file_lists(world: World, tmp_path: Path,
                                                             local_project: Path) -> None:
    servers = servers_file(tmp_path, world.url, world.token, world.ca_pem)
    env = {"INTERLOCK_SERVER": world.url}
    blocked = bridge(["--servers", str(servers)], call("rm -rf ~"), env=env)
    assert blocked.denied
    assert "remote policy says no rm" in blocked.stdout
    assert bridge(["--servers", str(servers)], call("ls"), env=env).allowed
    # An installed line names --project: a variable the project's agent settings could
    # set does not move it to another server; `--server env` opts in.
    local = {**env, **local_env(tmp_path)}
    pinned = bridge(["--project", str(local_project)], call("rm -rf ~"), env=local)
    assert "local policy says no rm" in pinned.stdout
    opted = bridge(["--server", "env", "--servers", str(servers), "--project",
                    str(local_project)], call("rm -rf ~"), env=local)
    assert "remote policy says no rm" in opted.stdout


@pytest.fixture
def evil() -> Iterator[tuple[str, list[bytes]]]:
    """A server a cloned repository could name: it answers allow and keeps what it got."""
    seen: list[bytes] = []
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), type("Evil", (Recorded,), {"seen": seen}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_project_set_environment_cannot_redirect_the_token(
        world: World, tmp_path: Path, local_project: Path,
        evil: tuple[str, list[bytes]]) -> None:
    """An agent's project settings can set its hooks' environment: INTERLOCK_SERVER
    alone must not send the machine's token (nor the hook input) to its server."""
    url, seen = evil
    env = {**local_env(tmp_path), "INTERLOCK_SERVER": url,
           "INTERLOCK_SERVER_TOKEN_FILE": str(world.token)}
    for args in (["--server", "env", "--project", str(local_project)], []):
        ran = bridge(args, call("ls"), env=env)
        assert ran.denied, (args, ran.stdout)
        assert "does not list" in ran.stdout
    assert seen == []


def test_a_project_set_environment_cannot_widen_the_fallback(
        world: World, tmp_path: Path, local_project: Path) -> None:
    down = f"https://127.0.0.1:{free_port()}"
    servers = servers_file(tmp_path, down, world.token, world.ca_pem)
    env = {**local_env(tmp_path), "INTERLOCK_SERVER": down,
           "INTERLOCK_SERVER_TOKEN_FILE": str(world.token),
           "INTERLOCK_SERVER_FALLBACK": "*"}
    ran = bridge(["--server", "env", "--project", str(local_project)], call("ls"), env=env)
    assert ran.denied, ran.stdout
    assert "local policy" not in ran.stdout
    line = ["--server", "env", "--servers", str(servers), "--project", str(local_project)]
    ran = bridge(line, call("ls"), env=env)
    assert ran.denied, ran.stdout
    assert "cannot reach" in ran.stdout
    # The line's --fallback local is the widest; the environment can only narrow it.
    fall = [*line, "--fallback", "local"]
    assert bridge(fall, call("ls"), env=env).allowed
    assert bridge(fall, call("ls"), env={**env, "INTERLOCK_SERVER_FALLBACK": "Stop"}).denied


def test_the_servers_file_must_be_the_users_own(world: World, tmp_path: Path) -> None:
    servers = servers_file(tmp_path, world.url, world.token, world.ca_pem)
    env = {"INTERLOCK_SERVER": world.url}
    assert bridge(["--servers", str(servers)], call("ls"), env=env).allowed
    servers.chmod(0o664)
    ran = bridge(["--servers", str(servers)], call("ls"), env=env)
    assert ran.denied
    assert "chmod" in ran.stdout


def test_only_an_interlock_token_is_ever_sent(world: World, tmp_path: Path) -> None:
    other = token_file(tmp_path, "apikey", "sk-live-some-other-secret")
    ran = bridge(world.args(token=other), call("ls"))
    assert ran.denied
    assert "does not hold an Interlock token" in ran.stdout


# -- nothing answers, or something answers badly ----------------------------------------

def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def local_project(tmp_path: Path) -> Path:
    (tmp_path / "proj" / ".interlock").mkdir(parents=True)
    (tmp_path / "proj" / ".interlock" / "config.toml").write_text(LOCAL_POLICY)
    return tmp_path / "proj"


def local_env(tmp: Path) -> dict[str, str]:
    return {"INTERLOCK_HOME": str(tmp / "home"), "INTERLOCK_MANAGED": str(tmp / "managed"),
            "INTERLOCK_ACCEPT_HOOKS": "1", "INTERLOCK_STORE": str(tmp / "local.db")}


def test_server_down_denies_unless_the_event_falls_back(world: World, tmp_path: Path,
                                                       local_project: Path) -> None:
    down = world.args(url=f"https://127.0.0.1:{free_port()}")
    ran = bridge(down, call("ls"))
    assert ran.denied
    assert "cannot reach" in ran.stdout
    # --fallback local: the project's in-process policy answers instead; it still decides.
    fall = [*down, "--fallback", "local", "--project", str(local_project)]
    assert bridge(fall, call("ls"), env=local_env(tmp_path)).allowed
    blocked = bridge(fall, call("rm -rf ~"), env=local_env(tmp_path))
    assert blocked.denied
    assert "local policy says no rm" in blocked.stdout
    # The environment can narrow the events that fall back, when it names the server.
    env = {**local_env(tmp_path), "INTERLOCK_SERVER": down[1],
           "INTERLOCK_SERVER_FALLBACK": "PreToolUse"}
    via_env = ["--server", "env", "--servers",
               str(servers_file(tmp_path, down[1], world.token, world.ca_pem)),
               "--project", str(local_project), "--fallback", "local"]
    fell = bridge(via_env, call("rm -rf ~"), env=env)
    assert fell.denied
    assert "local policy says no rm" in fell.stdout
    assert bridge(via_env, call("rm -rf ~"),
                  env={**env, "INTERLOCK_SERVER_FALLBACK": "Stop"}).denied


def test_a_pin_failure_never_falls_back(world: World, tmp_path: Path,
                                        local_project: Path) -> None:
    ran = bridge([*world.args(pin="sha256:" + "cd" * 32), "--fallback", "local",
                  "--project", str(local_project)], call("ls"), env=local_env(tmp_path))
    assert ran.denied
    assert "pin" in ran.stdout


class Canned(http.server.BaseHTTPRequestHandler):
    """Answers every POST with the status and body named by its path's last part."""

    answers: dict[str, tuple[int, bytes]] = {
        "e500": (500, b'{"error": "boom"}'),
        "e503": (503, b'{"error": "store down"}'),
        "garbage": (200, b"<html>not json</html>"),
        "array": (200, b"[1, 2]"),
        "other": (200, b'{"status": "ok"}'),  # another service behind a misrouted balancer
    }

    ALLOW = b'{"decision": "none", "event": "before_tool_call"}'
    raw: dict[str, bytes] = {
        # Chunked answers cut short: no terminating 0-chunk, a chunk shorter than its
        # declared size, a size that is not hex. Each would read as "allow" if trusted.
        "no_last_chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + b"%x\r\n" % len(ALLOW) + ALLOW + b"\r\n",
        "short_chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                       + b"%x\r\n" % (len(ALLOW) + 16) + ALLOW,
        "bad_chunk_size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          + b"ZZ\r\n" + ALLOW + b"\r\n0\r\n\r\n",
        "bad_length": b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n" + ALLOW,
        "chunked_ok": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      + b"%x\r\n" % len(ALLOW) + ALLOW + b"\r\n0\r\n\r\n",
    }

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        key = self.path.split("/")[1]
        if key in self.raw:
            self.wfile.write(self.raw[key])
            self.close_connection = True
            return
        status, body = self.answers[key]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def canned() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("kind", ["e500", "e503", "garbage", "array", "other"])
def test_bad_answers_deny(world: World, canned: int, kind: str) -> None:
    ran = bridge(world.args(url=f"http://127.0.0.1:{canned}/{kind}"), call("ls"))
    assert ran.denied, (ran.code, ran.stdout)


@pytest.mark.parametrize("kind", ["no_last_chunk", "short_chunk", "bad_chunk_size",
                                  "bad_length"])
def test_an_answer_cut_short_or_malformed_denies(world: World, canned: int, kind: str) -> None:
    ran = bridge(world.args(url=f"http://127.0.0.1:{canned}/{kind}"), call("ls"))
    assert ran.denied, (ran.code, ran.stdout)
    assert "Error" not in ran.stdout  # a sentence, not an exception's name


def test_a_whole_chunked_answer_is_read(world: World, canned: int) -> None:
    assert bridge(world.args(url=f"http://127.0.0.1:{canned}/chunked_ok"), call("ls")).allowed


def test_only_a_503_falls_back(world: World, canned: int, tmp_path: Path,
                               local_project: Path) -> None:
    def run(kind: str) -> Ran:
        return bridge([*world.args(url=f"http://127.0.0.1:{canned}/{kind}"),
                       "--fallback", "local", "--project", str(local_project)],
                      call("rm -rf ~"), env=local_env(tmp_path))

    fell = run("e503")
    assert fell.denied
    assert "local policy says no rm" in fell.stdout
    for kind in ("e500", "garbage"):
        ran = run(kind)
        assert ran.denied
        assert "local policy" not in ran.stdout


# -- the forwarder and the install line ----------------------------------------------

def start_forwarder(tmp: Path, url: str, token: Path, *extra: str
                    ) -> tuple[subprocess.Popen[str], Path]:
    """`interlock serve --upstream URL` on a socket of its own, once it listens."""
    sock = tmp / "fwd" / "s.sock"
    sock.parent.mkdir(mode=0o700, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "interlock", "serve", "--upstream", url, "--token-file",
         str(token), *extra, "--socket", str(sock)],
        env={**os.environ, "INTERLOCK_HOME": str(tmp / "home")},
        stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "listening on" in line:
            break
    assert sock.exists(), "".join(lines)
    return proc, sock


def stop_forwarder(proc: subprocess.Popen[str], *, kill: bool = False) -> None:
    proc.kill() if kill else proc.terminate()
    proc.wait(30)
    assert proc.stderr is not None
    proc.stderr.close()


def test_forwarder_holds_the_connection_and_denies_on_a_wrong_pin(world: World,
                                                                  tmp_path: Path) -> None:
    proc, sock = start_forwarder(tmp_path, world.url, world.token, "--ca", str(world.ca_pem))
    env = {"INTERLOCK_SOCKET": str(sock)}
    try:
        assert bridge([], call("rm -rf ~"), env=env).denied
        assert bridge([], call("ls"), env=env).allowed
    finally:
        stop_forwarder(proc)
    proc, sock = start_forwarder(tmp_path, world.url, world.token, "--ca", str(world.ca_pem),
                                 "--pin", "sha256:" + "ef" * 32)
    try:
        ran = bridge([], call("ls"), env=env)
        assert ran.denied
        assert "pin" in ran.stdout
    finally:
        stop_forwarder(proc)


class Recorded(http.server.BaseHTTPRequestHandler):
    """Answers allow to every POST and keeps what it was sent (headers and body)."""

    seen: list[bytes]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.seen.append(str(self.headers).encode() + body)
        answer = b'{"decision": "none", "event": "before_tool_call"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


def test_forwarder_checks_the_pin_before_the_token_and_the_input_leave(
        world: World, tmp_path: Path) -> None:
    """A server the CA trusts but the pin does not name never sees the request."""
    import ssl

    impostor = world.ca.issue_cert("127.0.0.1")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    impostor.configure_cert(ctx)
    seen: list[bytes] = []
    handler = type("Seen", (Recorded,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    proc, sock = start_forwarder(tmp_path, f"https://127.0.0.1:{server.server_address[1]}",
                                 world.token, "--ca", str(world.ca_pem), "--pin",
                                 world.spki_pin)
    try:
        ran = bridge([], call("secret-looking input"), env={"INTERLOCK_SOCKET": str(sock)})
    finally:
        stop_forwarder(proc)
        server.shutdown()
        server.server_close()
    assert ran.denied, (ran.code, ran.stdout)
    assert "pin" in ran.stdout
    assert seen == []


HARMLESS_POLICY = """
[[hooks]]
name = "log-only"
events = ["before_tool_call"]
command = "cat >/dev/null"
"""


@pytest.mark.parametrize("how", ["terminate", "kill"])
def test_a_forwarder_that_is_gone_denies_rather_than_the_local_policy_answering(
        world: World, tmp_path: Path, how: str) -> None:
    """A bridge aimed at a forwarder's socket must not fall back to this
    machine's own policy when the forwarder stops or is killed."""
    project = tmp_path / "proj"
    (project / ".interlock").mkdir(parents=True)
    (project / ".interlock" / "config.toml").write_text(HARMLESS_POLICY)
    proc, sock = start_forwarder(tmp_path, world.url, world.token, "--ca", str(world.ca_pem))
    env = {**local_env(tmp_path), "INTERLOCK_SOCKET": str(sock)}
    try:
        assert bridge(["--project", str(project)], call("rm -rf ~"), env=env).denied
    finally:
        stop_forwarder(proc, kill=how == "kill")
    for args, cwd in ((["--project", str(project)], None), ([], project)):
        ran = bridge(args, call("rm -rf ~"), env=env, cwd=cwd)
        assert ran.denied, (args, ran.code, ran.stdout, ran.stderr)
        assert "forwarder" in ran.stdout
        assert world.url in ran.stdout
    # The runtime folder emptied (a logout, a reboot): still the forwarder's place.
    shutil.rmtree(sock.parent)
    ran = bridge(["--project", str(project)], call("rm -rf ~"), env=env)
    assert ran.denied
    assert "forwarder" in ran.stdout
    # Deleting the record is the way back to this machine's own policy.
    marks = list((tmp_path / "home").rglob("forwarders/*.url"))
    assert len(marks) == 1
    assert str(marks[0]) in ran.stdout
    marks[0].unlink()
    assert bridge(["--project", str(project)], call("rm -rf ~"), env=env).allowed


def test_install_writes_the_server_and_the_token_file_never_the_token(
        world: World, tmp_path: Path, local_project: Path) -> None:
    env = {**os.environ, **local_env(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "interlock", "bridge", "install", "claude", "--project",
         str(local_project), "--server", world.url, "--token-file", str(world.token),
         "--ca", str(world.ca_pem), "--pin", world.spki_pin, "--fallback-local", "PreToolUse"],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    text = (local_project / ".claude" / "settings.json").read_text()
    assert world.token.read_text().strip() not in text
    assert world.url in text
    assert str(world.token) in text
    assert world.spki_pin in text
    hooks = json.loads(text)["hooks"]
    pre = hooks["PreToolUse"][0]["hooks"][0]["command"]
    assert "--fallback local" in pre
    assert "--fallback" not in hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    # The written line runs: through the sh guard, against the remote policy.
    ran = Ran(subprocess.run(["/bin/sh", "-c", pre], input=call("rm -rf ~"),
                             capture_output=True, timeout=60, check=False, cwd=local_project,
                             env={k: v for k, v in env.items()
                                  if not k.startswith("INTERLOCK_SERVER")}))
    assert ran.denied
    assert "remote policy says no rm" in ran.stdout

    world.token.chmod(0o640)
    try:
        bad = subprocess.run(
            [sys.executable, "-m", "interlock", "bridge", "install", "claude", "--project",
             str(local_project), "--server", world.url, "--token-file", str(world.token)],
            env=env, capture_output=True, text=True, timeout=120, check=False)
    finally:
        world.token.chmod(0o600)
    assert bad.returncode != 0
    assert "chmod 600" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_install_server_env_names_the_users_servers_file(
        world: World, tmp_path: Path, local_project: Path,
        evil: tuple[str, list[bytes]]) -> None:
    env = {**os.environ, **local_env(tmp_path)}
    home = tmp_path / "home"

    def install() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "interlock", "bridge", "install", "claude", "--project",
             str(local_project), "--server", "env"],
            env=env, capture_output=True, text=True, timeout=120, check=False)

    missing = install()
    assert missing.returncode != 0
    assert "servers.toml" in missing.stderr
    assert "Traceback" not in missing.stderr
    home.mkdir(exist_ok=True)
    servers = servers_file(home, world.url, world.token, world.ca_pem)
    done = install()
    assert done.returncode == 0, done.stderr
    pre = json.loads((local_project / ".claude" / "settings.json").read_text())[
        "hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert f"--servers {servers}" in pre

    def run(server: str) -> Ran:
        clean = {k: v for k, v in env.items() if not k.startswith("INTERLOCK_SERVER")}
        return Ran(subprocess.run(["/bin/sh", "-c", pre], input=call("rm -rf ~"),
                                  capture_output=True, timeout=60, check=False,
                                  cwd=local_project,
                                  env={**clean, "INTERLOCK_SERVER": server,
                                       "INTERLOCK_HOME": str(tmp_path / "elsewhere")}))

    assert "remote policy says no rm" in run(world.url).stdout
    url, seen = evil
    redirected = run(url)
    assert redirected.denied
    assert "does not list" in redirected.stdout
    assert seen == []


NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a listener of another uid needs root")


class ForeignListener:
    """A loopback HTTP server run by another user (a forked child as uid 65534) that
    answers allow to one request and reports what it received."""

    def __init__(self, *, defer_accept: bool = False) -> None:
        self.defer_accept = defer_accept
        ports, self._got = os.pipe(), os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                self._serve(ports[1])
            finally:
                os._exit(0)
        os.close(ports[1])
        os.close(self._got[1])
        self.port = int(os.read(ports[0], 64))
        os.close(ports[0])

    def _serve(self, port_fd: int) -> None:
        import socket

        server = socket.socket()
        if self.defer_accept:
            # The server end then stays a request socket until data arrives, which
            # the kernel's socket diagnostics list under uid 0.
            server.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 5)
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        server.settimeout(60)
        os.write(port_fd, str(server.getsockname()[1]).encode())
        received = b""
        try:
            conn, _ = server.accept()
            conn.settimeout(20)
            data = b""
            while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                data += chunk
            received = data
            allow = b'{"decision": "none", "event": "before_tool_call"}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(allow), allow))
        except OSError:
            pass
        os.write(self._got[1], received or b"-")

    def received(self) -> bytes:
        """What the request carried (``-``: nothing), once the one connection closed."""
        data = os.read(self._got[0], 65536)
        os.close(self._got[0])
        os.waitpid(self.pid, 0)
        return data


@needs_root
@pytest.mark.parametrize("defer_accept", [False, True], ids=["plain", "defer_accept"])
def test_plain_http_to_loopback_refuses_a_listener_of_another_user(
        world: World, defer_accept: bool) -> None:
    """Any local user can bind a loopback port; the token goes only to a listener run
    by this user (or root), as the Unix socket's peer-uid check has it."""
    foreign = ForeignListener(defer_accept=defer_accept)
    ran = bridge(world.args(url=f"http://127.0.0.1:{foreign.port}"), call("ls"))
    assert foreign.received() == b"-"  # the token and the hook input never went out
    assert ran.denied, (ran.code, ran.stdout)
    assert f"uid {NOBODY}" in ran.stdout


@needs_root
def test_the_forwarder_refuses_a_loopback_listener_of_another_user(
        world: World, tmp_path: Path) -> None:
    foreign = ForeignListener()
    proc, sock = start_forwarder(tmp_path, f"http://127.0.0.1:{foreign.port}", world.token)
    try:
        ran = bridge([], call("ls"), env={"INTERLOCK_SOCKET": str(sock)})
    finally:
        stop_forwarder(proc)
    assert foreign.received() == b"-"
    assert ran.denied, (ran.code, ran.stdout)
    assert f"uid {NOBODY}" in ran.stdout
