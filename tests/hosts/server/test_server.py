"""`interlock serve`: endpoints, tokens, Host/Origin, project root, the Unix socket."""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from interlock import Engine, block, context
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import Role, TokenStore
from interlock.hosts.server.listen import AlreadyRunning, Serving
from interlock.hosts.server.paths import UnsafeDirectory, ensure_private_dir


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 10.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


@dataclass
class Reply:
    status: int
    body: Any


@dataclass
class Served:
    serving: Serving
    root: Path
    sock: Path
    events_token: str
    admin_token: str
    dead: InMemoryDeadLetters
    reloader: FakeReloader
    engine: Engine

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = None,
                headers: dict[str, str] | None = None, raw: bytes | None = None,
                unix: bool = False) -> Reply:
        conn: http.client.HTTPConnection
        if unix:
            conn = UnixHTTPConnection(str(self.sock))
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.serving.port, timeout=10)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        if token is not None:
            hdrs["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            text = resp.read()
        finally:
            conn.close()
        return Reply(resp.status, json.loads(text) if text else None)


class InMemoryDeadLetters:
    def __init__(self) -> None:
        self.records = [{"id": "dl-1", "hook": "project:guard", "resolved": False},
                        {"id": "dl-2", "hook": "project:audit", "resolved": True}]

    def list(self, *, unresolved: bool = False, limit: int = 100) -> list[dict[str, Any]]:
        found = [r for r in self.records if not (unresolved and r["resolved"])]
        return found[:limit]

    def resolve(self, record_id: str) -> bool:
        for r in self.records:
            if r["id"] == record_id:
                r["resolved"] = True
                return True
        return False


@dataclass
class ReloadResult:
    revision: int
    error: str | None = None


class FakeReloader:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.error: str | None = None
        self.calls: list[bool] = []

    def reload(self, *, operator: bool = True) -> ReloadResult:
        self.calls.append(operator)
        if self.error:
            return ReloadResult(self.engine.revision, self.error)
        return ReloadResult(self.engine.replace_hooks(self.engine.hooks))


def policy_engine() -> Engine:
    engine = Engine()

    @engine.on("before_tool_call", matcher="terminal", name="no-rm")
    def no_rm(event: Any) -> Any:
        if "rm -rf" in event.args.get("command", ""):
            return block("destructive command", hint="delete specific paths")
        return None

    @engine.on("user_input", name="note")
    def note(event: Any) -> Any:
        return context("be brief")

    return engine


def short_dir() -> Path:
    # sun_path holds 108 bytes; pytest's tmp_path can be longer.
    return Path(tempfile.mkdtemp(prefix="il-", dir="/tmp"))


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    root = Path(tempfile.mkdtemp(prefix="il-proj-")).resolve()
    sock = short_dir() / "run" / "serve.sock"
    engine = policy_engine()
    tokens = TokenStore()
    events_token = tokens.create("ci")
    admin_token = tokens.create("ops", Role.ADMIN)
    dead = InMemoryDeadLetters()
    reloader = FakeReloader(engine)
    app = create_app(engine, project_root=root, tokens=tokens, reloader=reloader,
                     dead_letters=dead, status=lambda: {"breakers": {"project:guard": "closed"}},
                     socket_path=sock)
    serving = Serving(app, port=0, socket_path=sock)
    with serving.running():
        yield Served(serving, root, sock, events_token, admin_token, dead, reloader, engine)
    engine.close()


RM = {"tool_name": "terminal", "args": {"command": "rm -rf /"}, "session_id": "s1"}


def test_events_evaluates_through_the_engine(served: Served) -> None:
    r = served.request("POST", "/v1/events/before_tool_call", RM, token=served.events_token)
    assert r.status == 200
    assert r.body["decision"] == "block"
    assert r.body["reason"] == "destructive command"
    assert r.body["hook"] == "code:no-rm"
    assert r.body["session_id"] == "s1"
    ok = served.request("POST", "/v1/events/before_tool_call",
                        {"tool_name": "terminal", "args": {"command": "ls"}},
                        token=served.admin_token)
    assert ok.status == 200
    assert ok.body["decision"] == "none"
    ctx = served.request("POST", "/v1/events/user_input", {"text": "hi"},
                         token=served.events_token)
    assert ctx.body["context"] == [{"hook": "code:note", "text": "be brief"}]


@pytest.mark.parametrize("token", [None, "", "ilk_wrong", "not-even-a-token"])
def test_events_refuse_missing_and_wrong_tokens(served: Served, token: str | None) -> None:
    headers = {"Authorization": "Bearer " + token} if token is not None else {}
    r = served.request("POST", "/v1/events/before_tool_call", RM, headers=headers)
    assert r.status == 401
    assert "token" in r.body["error"]


ADMIN = [("GET", "/v1/runtime/hooks/dead-letter"),
         ("POST", "/v1/runtime/hooks/dead-letter/dl-1/resolve"),
         ("POST", "/v1/runtime/reload")]


@pytest.mark.parametrize(("method", "path"), ADMIN)
@pytest.mark.parametrize("unix", [False, True])
def test_admin_endpoints_refuse_missing_wrong_and_non_admin_tokens(
        served: Served, method: str, path: str, unix: bool) -> None:
    before = (len(served.reloader.calls), [r["resolved"] for r in served.dead.records])
    assert served.request(method, path, unix=unix).status == 401
    assert served.request(method, path, token="ilk_" + "x" * 43, unix=unix).status == 401
    forbidden = served.request(method, path, token=served.events_token, unix=unix)
    assert forbidden.status == 403
    assert "admin" in forbidden.body["error"]
    assert (len(served.reloader.calls), [r["resolved"] for r in served.dead.records]) == before


def test_admin_endpoints_work_with_an_admin_token(served: Served) -> None:
    listed = served.request("GET", "/v1/runtime/hooks/dead-letter?unresolved=true",
                            token=served.admin_token)
    assert listed.status == 200
    assert [r["id"] for r in listed.body["records"]] == ["dl-1"]
    assert served.request("GET", "/v1/runtime/hooks/dead-letter?limit=zero",
                          token=served.admin_token).status == 422
    missing = served.request("POST", "/v1/runtime/hooks/dead-letter/nope/resolve",
                             token=served.admin_token)
    assert missing.status == 404
    done = served.request("POST", "/v1/runtime/hooks/dead-letter/dl-1/resolve",
                          token=served.admin_token)
    assert done.status == 200
    assert served.dead.records[0]["resolved"] is True
    before = served.engine.revision
    reloaded = served.request("POST", "/v1/runtime/reload", token=served.admin_token)
    assert reloaded.status == 200
    assert reloaded.body["revision"] == before + 1
    assert served.reloader.calls[-1] is True  # an operator's reload
    served.reloader.error = "config.toml:3: hooks.guard.timeout: must be a number"
    try:
        refused = served.request("POST", "/v1/runtime/reload", token=served.admin_token)
    finally:
        served.reloader.error = None
    assert refused.status == 409
    assert "config.toml:3" in refused.body["error"]
    assert served.engine.revision == before + 1


def test_status_and_hooks_need_a_token_or_the_socket(served: Served) -> None:
    # An evaluation of its own: under xdist this test may be the module's first.
    assert served.request("POST", "/v1/events/before_tool_call", RM,
                          token=served.events_token).status == 200
    refused = served.request("GET", "/v1/status")
    assert refused.status == 401
    assert "token" in refused.body["error"]
    assert served.request("GET", "/v1/status", unix=True).status == 200
    status = served.request("GET", "/v1/status", token=served.events_token)
    assert status.status == 200
    assert status.body["revision"] == served.engine.revision
    assert status.body["breakers"] == {"project:guard": "closed"}
    assert status.body["project_root"] == str(served.root)
    assert "unresolved" in status.body["dead_letters"]
    assert status.body["counters"]["evaluations"] >= 1
    hooks = served.request("GET", "/v1/hooks", unix=True)
    assert hooks.status == 200
    names = {h["name"]: h for h in hooks.body["hooks"]}
    assert names["code:no-rm"]["matcher"] == "terminal"
    assert names["code:no-rm"]["events"] == ["before_tool_call"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8787", "127.0.0.1.nip.io",
                                  "localhost.evil.example"])
def test_foreign_host_is_refused(served: Served, host: str) -> None:
    r = served.request("POST", "/v1/events/before_tool_call", RM, token=served.events_token,
                       headers={"Host": host})
    assert r.status == 403
    assert "Host" in r.body["error"]
    assert served.request("GET", "/v1/status", headers={"Host": host}).status == 403


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://127.0.0.1:8787"])
def test_any_browser_origin_is_refused(served: Served, origin: str) -> None:
    r = served.request("POST", "/v1/events/before_tool_call", RM, token=served.events_token,
                       headers={"Origin": origin})
    assert r.status == 403
    assert "Origin" in r.body["error"]


def test_allowed_host_and_origin_pass() -> None:
    engine = policy_engine()
    tokens = TokenStore()
    token = tokens.create("ci")
    app = create_app(engine, project_root=Path("/"), tokens=tokens,
                     allowed_hosts=["interlock.internal"], allowed_origins=["https://ops.example"])
    serving = Serving(app, port=0)
    with serving.running():
        conn = http.client.HTTPConnection("127.0.0.1", serving.port, timeout=10)
        conn.request("POST", "/v1/events/before_tool_call", body=json.dumps(RM), headers={
            "Host": "interlock.internal:9", "Origin": "https://ops.example",
            "Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert json.loads(resp.read())["decision"] == "block"
        conn.close()
    engine.close()


def test_foreign_project_root_is_refused(served: Served, tmp_path: Path) -> None:
    other = served.request("POST", "/v1/events/before_tool_call", RM, token=served.events_token,
                           headers={"X-Interlock-Project": quote(str(tmp_path))})
    assert other.status == 403
    assert "not this server's project" in other.body["error"]
    relative = served.request("POST", "/v1/events/before_tool_call", RM,
                              token=served.events_token, headers={"X-Interlock-Project": "proj"})
    assert relative.status == 400
    # The same project through a symlink and a trailing "/." is the same project.
    link = tmp_path / "link"
    link.symlink_to(served.root)
    same = served.request("POST", "/v1/events/before_tool_call", RM, token=served.events_token,
                          headers={"X-Interlock-Project": quote(str(link) + "/.")})
    assert same.status == 200
    via_socket = served.request("POST", "/v1/bridge/claude", {
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"}}, unix=True,
        headers={"X-Interlock-Project": quote(str(tmp_path))})
    assert via_socket.status == 403


@pytest.mark.parametrize(("raw", "status", "needle"), [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "JSON object"),
    (b'"text"', 400, "JSON object"),
    (b'{"tool_name": 5}', 422, "tool_name"),
    (b'{"args": {}}', 422, "tool_name"),
    (b'{"tool_name": "t", "bogus": 1}', 422, "bogus"),
    (b'{"tool_name": "t", "depth": "deep"}', 422, "depth"),
    (b"[" * 100_000 + b"]" * 100_000, 400, "JSON"),
    # Parsed, but too deep to copy for the hooks: a 1 KB body was a 500.
    (b'{"tool_name": "terminal", "args": {"x": ' + b"[" * 600 + b"]" * 600 + b"}}", 400, "nested"),
])
def test_bad_bodies_get_a_clear_4xx(served: Served, raw: bytes, status: int,
                                    needle: str) -> None:
    r = served.request("POST", "/v1/events/before_tool_call", raw=raw, token=served.events_token)
    assert r.status == status
    assert needle in r.body["error"] + str(r.body.get("field"))


def test_unknown_event_and_oversized_body(served: Served) -> None:
    r = served.request("POST", "/v1/events/before_tool_cal", {}, token=served.events_token)
    assert r.status == 404
    assert "before_tool_call" in r.body["error"]  # did you mean
    big = served.request("POST", "/v1/events/before_tool_call",
                         {"tool_name": "t", "args": {"x": "y" * (2 << 20)}},
                         token=served.events_token)
    assert big.status == 413


def test_bridge_endpoint_maps_host_payloads(served: Served) -> None:
    r = served.request("POST", "/v1/bridge/claude", {
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "abc",
        "tool_input": {"command": "rm -rf /"}}, token=served.events_token)
    assert r.status == 200
    assert (r.body["event"], r.body["decision"], r.body["session_id"]) == (
        "before_tool_call", "block", "abc")
    assert served.request("POST", "/v1/bridge/vim", {}, token=served.events_token).status == 404
    unmapped = served.request("POST", "/v1/bridge/claude", {"hook_event_name": "Setup"},
                              token=served.events_token)
    assert unmapped.status == 422
    assert "Setup" in unmapped.body["error"]


def test_unix_socket_peers_need_no_token_for_events(served: Served) -> None:
    assert stat.S_IMODE(os.stat(served.sock.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(served.sock).st_mode) == 0o600
    r = served.request("POST", "/v1/events/before_tool_call", RM, unix=True)
    assert r.status == 200
    assert r.body["decision"] == "block"


def test_openapi_is_published(served: Served) -> None:
    r = served.request("GET", "/v1/openapi.json")
    assert r.status == 200
    spec = r.body
    assert spec["openapi"].startswith("3.1")
    assert "/v1/events/before_tool_call" in spec["paths"]
    ref = spec["paths"]["/v1/events/before_tool_call"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]["$ref"]
    schema = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert "tool_name" in schema["required"]
    for path in ("/v1/status", "/v1/hooks", "/v1/runtime/reload", "/v1/bridge/{agent}",
                 "/v1/runtime/hooks/dead-letter/{record_id}/resolve"):
        assert path in spec["paths"]


# -- the Unix socket against other uids ----------------------------------------

NOBODY = 65534


def _as_other_uid(path: str) -> str:
    """Connect to ``path`` as uid 65534 in a forked child and read what comes back.

    The child sends nothing: a refused peer is answered (403) and hung up on as
    soon as it connects, before any HTTP is parsed.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to another uid, try the socket, report, exit
        os.close(read_fd)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            client = socket.socket(socket.AF_UNIX)
            client.settimeout(5)
            client.connect(path)
            data = b""
            while chunk := client.recv(65536):
                data += chunk
            client.close()
            status = data.split(b" ", 2)[1].decode() if data else "closed"
            body = data.partition(b"\r\n\r\n")[2].decode()
            result = f"{status} {body}"
        except OSError as exc:
            result = f"oserror {type(exc).__name__} {exc}"
        except Exception as exc:
            result = f"error {exc!r}"
        os.write(write_fd, result.encode())
        os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 4096):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching uid needs root")


@needs_root
def test_socket_directory_keeps_other_uids_out(served: Served) -> None:
    result = _as_other_uid(str(served.sock))
    assert result.startswith("oserror PermissionError")


@needs_root
def test_socket_peer_with_another_uid_is_refused(tmp_path: Path) -> None:
    # Even if the directory were opened up, the peer-uid check refuses.
    engine = policy_engine()
    sock = short_dir() / "run" / "serve.sock"
    app = create_app(engine, project_root=tmp_path, tokens=TokenStore(), socket_path=sock)
    serving = Serving(app, socket_path=sock, tcp=False)
    with serving.running():
        for opened in (sock.parent.parent, sock.parent):
            os.chmod(opened, 0o711)
        os.chmod(sock, 0o666)
        result = _as_other_uid(str(sock))
        assert result.startswith("403 ")
        assert f"uid {NOBODY}" in result
        # Our own uid still gets through.
        conn = UnixHTTPConnection(str(sock))
        conn.request("POST", "/v1/events/before_tool_call", body=json.dumps(RM))
        assert conn.getresponse().status == 200
        conn.close()
    engine.close()


@needs_root
def test_private_dir_refuses_other_owners_and_symlinks(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o777)
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(UnsafeDirectory, match="owned by uid 65534"):
        ensure_private_dir(theirs)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(UnsafeDirectory, match="not a directory"):
        ensure_private_dir(link)
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    ensure_private_dir(loose)
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o700


def test_a_second_server_on_the_same_socket_is_refused(served: Served) -> None:
    with pytest.raises(AlreadyRunning):
        Serving(create_app(served.engine, project_root=served.root, tokens=TokenStore()),
                socket_path=served.sock, tcp=False)


def test_stale_socket_is_replaced(tmp_path: Path) -> None:
    sock = short_dir() / "run" / "serve.sock"
    ensure_private_dir(sock.parent)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(sock))
    dead.close()  # bound, never listening: what a crashed server leaves
    engine = policy_engine()
    serving = Serving(create_app(engine, project_root=tmp_path, tokens=TokenStore(),
                                 socket_path=sock), socket_path=sock, tcp=False)
    with serving.running():
        conn = UnixHTTPConnection(str(sock))
        conn.request("GET", "/v1/status")
        assert conn.getresponse().status == 200
        conn.close()
    assert not sock.exists()
    engine.close()


# -- tokens ---------------------------------------------------------------------

def test_tokens_are_stored_hashed_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "server-tokens.json"
    store = TokenStore(path)
    token = store.create("ci")
    admin = store.create("ops", "admin")
    text = path.read_text()
    assert token not in text
    assert admin not in text
    assert "sha256:" in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = TokenStore(path)
    assert again.verify(token).role is Role.EVENTS  # type: ignore[union-attr]
    assert again.verify(admin).role is Role.ADMIN  # type: ignore[union-attr]
    assert again.verify(token[:-1] + "A" if token[-1] != "A" else token[:-1] + "B") is None
    assert again.revoke("ci")
    assert TokenStore(path).verify(token) is None


def test_token_store_errors_are_clear(tmp_path: Path) -> None:
    from interlock import ConfigError

    store = TokenStore()
    store.create("ci")
    with pytest.raises(ConfigError, match="exists"):
        store.create("ci")
    with pytest.raises(ConfigError, match="not valid"):
        store.create("bad name!")
    broken = tmp_path / "tokens.json"
    broken.write_text("{nope")
    with pytest.raises(ConfigError, match=r"tokens\.json"):
        TokenStore(broken)


@pytest.mark.slow
def test_token_cli_creates_lists_and_revokes(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "INTERLOCK_STATE_DIR": str(tmp_path / "state")}
    cli = [sys.executable, "-m", "interlock", "serve", "token"]
    made = subprocess.run([*cli, "create", "ci", "--admin"], env=env, capture_output=True,
                          text=True, check=True)
    token = made.stdout.strip()
    assert token.startswith("ilk_")
    assert TokenStore(tmp_path / "state" / "server-tokens.json").verify(token) is not None
    listed = subprocess.run([*cli, "list", "--json"], env=env, capture_output=True, text=True,
                            check=True)
    assert json.loads(listed.stdout)[0]["role"] == "admin"
    assert token not in listed.stdout
    table = subprocess.run([*cli, "list"], env={**env, "COLUMNS": "80"}, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert table[0].split()[:3] == ["NAME", "ROLE", "CREATED"]
    assert table[1].split()[:2] == ["ci", "admin"]
    assert table[1].split()[2][:2] == "20"  # a date, not epoch seconds
    assert token not in "\n".join(table)
    dup = subprocess.run([*cli, "create", "ci"], env=env, capture_output=True, text=True)
    assert dup.returncode == 2
    assert "exists" in dup.stderr
    assert "Traceback" not in dup.stderr
    subprocess.run([*cli, "revoke", "ci"], env=env, check=True)
    assert TokenStore(tmp_path / "state" / "server-tokens.json").entries() == []


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        (None, "no hooks are configured"),
        ('[[hooks]]\nname = "x"\nevents = ["before_tool_cal"]\ncommand = "true"\n',
         "did you mean 'before_tool_call'"),
    ],
)
@pytest.mark.slow
def test_serve_refuses_to_start_without_a_good_revision(tmp_path: Path, config: str | None,
                                                        needle: str) -> None:
    import subprocess
    import sys

    if config is not None:
        (tmp_path / ".interlock").mkdir()
        (tmp_path / ".interlock" / "config.toml").write_text(config)
    env = {**os.environ, "INTERLOCK_STATE_DIR": str(tmp_path / "state"),
           "INTERLOCK_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-m", "interlock", "serve", "--project",
                           str(tmp_path), "--port", "0", "--no-socket"],
                          env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_concurrent_requests_are_all_answered(served: Served) -> None:
    results: list[int] = []

    def worker() -> None:
        for _ in range(10):
            r = served.request("POST", "/v1/events/before_tool_call", RM, unix=True)
            results.append(r.status)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [200] * 80


GUARD_SCRIPT = """
import json, sys
request = json.load(sys.stdin)
if "rm" in request["payload"]["args"].get("command", ""):
    print(json.dumps({"decision": "block", "reason": "no rm"}))
"""


@pytest.mark.slow
def test_serve_cli_serves_and_cleans_up_on_sigterm(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    (tmp_path / ".interlock").mkdir()
    (tmp_path / "guard.py").write_text(GUARD_SCRIPT)
    (tmp_path / ".interlock" / "config.toml").write_text(
        f'[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\n'
        f'command = ["{sys.executable}", "{tmp_path / "guard.py"}"]\n')
    sock = short_dir() / "run" / "serve.sock"
    env = {**os.environ, "INTERLOCK_SOCKET": str(sock), "INTERLOCK_ACCEPT_HOOKS": "1",
           "INTERLOCK_HOME": str(tmp_path / "home"),
           "INTERLOCK_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "interlock", "serve", "--project",
                             str(tmp_path), "--port", "0"], env=env, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        # --accept-hooks says what it approved, and serve which project it serves, first.
        while "approving" in line or "project root" in line:
            line = proc.stderr.readline()
        assert "listening on http://127.0.0.1:" in line, line
        assert f"unix:{sock}" in line
        bridged = subprocess.run(
            [sys.executable, "-m", "interlock.bridge", "claude", "--project", str(tmp_path)],
            input=json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                              "tool_input": {"command": "rm -rf /"}}),
            capture_output=True, text=True, env={**os.environ, "INTERLOCK_SOCKET": str(sock)})
        assert bridged.returncode == 2
        assert "no rm" in json.loads(bridged.stdout)["hookSpecificOutput"][
            "permissionDecisionReason"]
        assert stat.S_IMODE(os.stat(tmp_path / "state").st_mode) == 0o700
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        assert proc.stderr is not None
        proc.stderr.close()
    assert code == 0
    assert not sock.exists()


@pytest.mark.slow
def test_serve_cli_runs_the_chat_gateway_with_a_chat_token(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import urllib.request

    (tmp_path / ".interlock").mkdir()
    (tmp_path / "guard.py").write_text(GUARD_SCRIPT)
    (tmp_path / ".interlock" / "config.toml").write_text(
        f'[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\n'
        f'command = ["{sys.executable}", "{tmp_path / "guard.py"}"]\n')
    script = tmp_path / "chat.yaml"
    script.write_text("- text: hello from the gateway\n")
    env = {**os.environ, "INTERLOCK_ACCEPT_HOOKS": "1", "INTERLOCK_HOME": str(tmp_path / "home"),
           "INTERLOCK_STATE_DIR": str(tmp_path / "state")}
    token = subprocess.run([sys.executable, "-m", "interlock", "serve", "token", "create",
                            "phone", "--chat", "--sender", "alice", "--project", str(tmp_path)],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    reader = subprocess.run([sys.executable, "-m", "interlock", "serve", "token", "create",
                             "scraper", "--project", str(tmp_path)],
                            env=env, capture_output=True, text=True, check=True).stdout.strip()
    proc = subprocess.Popen([sys.executable, "-m", "interlock", "serve", "--project",
                             str(tmp_path), "--port", "0", "--no-socket",
                             "--chat-model", f"scripted:{script}"],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while "listening on" not in line:
            assert line, "serve exited before listening"
            line = proc.stderr.readline()
        base = line.split("listening on ", 1)[1].split()[0].rstrip(",")
        request = urllib.request.Request(
            f"{base}/v1/chat", data=json.dumps({"channel": "ops", "text": "hi"}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.loads(response.read())
        assert "hello from the gateway" in json.dumps(reply)
        metrics = urllib.request.Request(f"{base}/metrics",
                                         headers={"Authorization": f"Bearer {reader}"})
        with urllib.request.urlopen(metrics, timeout=30) as response:
            assert response.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        assert proc.stderr is not None
        proc.stderr.close()
