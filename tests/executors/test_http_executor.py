"""The HTTP executor against real HTTP servers on 127.0.0.1.

The hook URL names `hooks.example.test` (a reserved name no DNS answers); a
resolver the test controls maps it to 127.0.0.1 and the allowlist admits it,
so a request can only arrive through the pinned, checked address.
"""

from __future__ import annotations

import dataclasses
import email.utils
import gzip
import json
import logging
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import trustme

from interlock import (
    ConfigError,
    ContractError,
    Engine,
    Hook,
    HookCrash,
    HookFailure,
    HookTimeout,
    Invocation,
    Verdict,
)
from interlock.engine.errors import FailureMode
from interlock.events import make
from interlock.executors.http import HttpExecutor, HttpStatusError, retry_after
from interlock.executors.net import PinnedClient, SSRFError, signing
from interlock.testing import RecordingSink, afire, fire

HOST = "hooks.example.test"
SECRET = "s3cret-for-tests-only"


@dataclasses.dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    peer: tuple[str, int]

    def json(self) -> Any:
        return json.loads(self.body)


Route = Callable[["_Handler", Seen], None]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so pooling can be observed
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urllib.parse.urlsplit(self.path)
        seen = Seen(self.command, url.path, dict(urllib.parse.parse_qsl(url.query)),
                    {k.lower(): v for k, v in self.headers.items()}, body,
                    self.client_address[:2])
        self.server.owner.seen.append(seen)
        route = self.server.owner.routes.get(url.path, _not_found)
        try:
            route(self, seen)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    do_POST = do_GET = _handle

    def send(self, status: int, body: bytes | dict[str, Any] = b"",
             headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: HookServer


def _not_found(h: _Handler, seen: Seen) -> None:
    h.send(404, b"no such route")


class HookServer:
    """A real HTTP(S) server on 127.0.0.1 with routes a test fills in."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.seen: list[Seen] = []
        self.routes: dict[str, Route] = {}
        self.release = threading.Event()
        self.sni: list[str | None] = []
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self
        if ssl_context is not None:
            ssl_context.sni_callback = lambda _s, name, _c: self.sni.append(name)
            self.httpd.socket = ssl_context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,),
                                       daemon=True)
        self.thread.start()

    def url(self, path: str, host: str = HOST, scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class DNS:
    """A resolver the test controls; every lookup is recorded."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} is not in the test's table")
        return list(self.table[host])


@pytest.fixture
def server() -> Iterator[HookServer]:
    srv = HookServer()
    yield srv
    srv.close()


@pytest.fixture
def dns() -> DNS:
    return DNS({HOST: ["127.0.0.1"]})


@pytest.fixture
async def make_executor(dns: DNS) -> AsyncIterator[Callable[..., HttpExecutor]]:
    made: list[HttpExecutor] = []

    def build(url: str, **kw: Any) -> HttpExecutor:
        kw.setdefault("hook_name", "remote")
        kw.setdefault("allow_private", [HOST])
        kw.setdefault("resolver", dns)
        kw.setdefault("timeout", 5.0)
        ex = HttpExecutor(url, **kw)
        made.append(ex)
        return ex

    yield build
    for ex in made:
        await ex.aclose()


def invocation(hook_name: str = "remote", event: str = "before_tool_call",
               invocation_id: str = "inv-1", **fields: Any) -> Invocation:
    fields.setdefault("tool_name", "terminal")
    fields.setdefault("args", {"command": "rm -rf /"})
    hook = Hook(name=hook_name, events=(event,), fn=lambda e: None)
    return Invocation(event=make(event, None, **fields), hook=hook,
                      invocation_id=invocation_id)


def checking_route(expected_host: str, secret: str = SECRET) -> Route:
    """The hook server of the issue: it checks Host, Idempotency-Key and the
    signature, and answers block only when all three are right."""

    def route(h: _Handler, seen: Seen) -> None:
        problems = []
        if seen.headers.get("host") != expected_host:
            problems.append(f"host {seen.headers.get('host')!r}")
        body = seen.json()
        if seen.headers.get("idempotency-key") != body["invocation_id"]:
            problems.append("idempotency-key")
        if not signing.verify(secret, seen.body,
                              seen.headers.get("x-interlock-timestamp"),
                              seen.headers.get("x-interlock-signature")):
            problems.append("signature")
        if problems:
            h.send(401, {"error": ", ".join(problems)})
            return
        h.send(200, {"decision": "block", "reason": "remote policy says no",
                     "hint": "ask the operator"},
               {"Content-Type": "application/json"})

    return route


def answer(status: int, body: bytes | dict[str, Any] = b"",
           headers: dict[str, str] | None = None) -> Route:
    return lambda h, _seen: h.send(status, body, headers)


# --- the pinned path, end to end ------------------------------------------------


async def test_public_looking_target_works_through_the_pinned_path_and_engine_applies_it(
        server: HookServer, dns: DNS, make_executor: Callable[..., HttpExecutor],
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    monkeypatch.setenv("HOOK_TOKEN", "Bearer t0ken")
    server.routes["/hook"] = checking_route(f"{HOST}:{server.port}")
    ex = make_executor(server.url("/hook"), hmac_secret_env="HOOK_SECRET",
                       headers_from_env={"Authorization": "HOOK_TOKEN"})
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    engine.register(Hook(name="remote", events=("before_tool_call",), executor=ex,
                         kind="http", timeout=10))
    try:
        with caplog.at_level(logging.INFO, logger="interlock.executors.net"):
            outcome = await afire(engine, "before_tool_call", tool_name="terminal",
                                  args={"command": "rm -rf /"}, session_id="s-1")
    finally:
        engine.close()
    assert outcome.verdict is Verdict.BLOCK
    assert outcome.reason == "remote policy says no"
    assert outcome.hint == "ask the operator"
    assert outcome.hook is not None
    assert outcome.hook.name == "remote"
    assert sink.failures == []

    (seen,) = server.seen
    assert seen.peer[0] == "127.0.0.1"
    assert seen.headers["host"] == f"{HOST}:{server.port}"
    assert seen.headers["authorization"] == "Bearer t0ken"
    assert seen.headers["content-type"] == "application/json"
    body = seen.json()
    assert body["contract_version"] == 1
    assert body["event"] == "before_tool_call"
    assert body["hook"] == "remote"
    assert body["session_id"] == "s-1"
    assert body["payload"]["tool_name"] == "terminal"
    assert body["payload"]["args"] == {"command": "rm -rf /"}
    assert seen.headers["idempotency-key"] == body["invocation_id"]
    assert dns.calls == [HOST]
    assert any(f"{HOST} -> 127.0.0.1 admitted by allowlist entry" in r.getMessage()
               for r in caplog.records)


async def test_sync_facade_reaches_the_hook_too(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    server.routes["/hook"] = answer(200, {"decision": "block", "reason": "no"})
    ex = make_executor(server.url("/hook"))
    engine = Engine()
    engine.register(Hook(name="remote", events=("before_tool_call",), executor=ex,
                         kind="http"))
    try:
        outcome = fire(engine, "before_tool_call", tool_name="terminal", args={})
        await ex.aclose()  # also closes the pool it opened on the engine's loop thread
    finally:
        engine.close()
    assert outcome.verdict is Verdict.BLOCK
    assert outcome.reason == "no"


async def test_refused_target_fails_closed_in_the_engine(
        server: HookServer, make_executor: Callable[..., HttpExecutor], dns: DNS) -> None:
    dns.table["evil.example.test"] = ["10.0.0.7"]
    ex = make_executor(server.url("/hook", host="evil.example.test"))
    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    engine.register(Hook(name="remote", events=("before_tool_call",), executor=ex,
                         kind="http"))
    try:
        outcome = await afire(engine, "before_tool_call", tool_name="terminal", args={})
    finally:
        engine.close()
    assert outcome.verdict is Verdict.BLOCK
    assert "fail-closed hook" in (outcome.reason or "")
    (failure,) = sink.failures
    assert "evil.example.test resolves to 10.0.0.7" in failure.error
    assert server.seen == []


async def test_redirects_are_failures_and_private_redirects_are_refused(
        server: HookServer, make_executor: Callable[..., HttpExecutor], dns: DNS) -> None:
    dns.table["inside.example.test"] = ["192.168.10.20"]
    dns.table["public.example.test"] = ["93.184.216.34"]
    cases = {
        "/to-loopback": (f"http://127.0.0.1:{server.port}/hook", "loopback"),
        "/to-metadata": ("http://169.254.169.254/latest/meta-data/", "link-local"),
        "/to-private-name": ("http://inside.example.test/", "private"),
        "/to-mapped": ("http://[::ffff:10.0.0.1]/", "private"),
        "/to-file": ("file:///etc/passwd", "scheme"),
    }
    for path, (location, _reason) in cases.items():
        server.routes[path] = answer(302, b"", {"Location": location})
    server.routes["/to-public"] = answer(301, b"", {"Location": "https://public.example.test/"})
    server.routes["/relative"] = answer(307, b"", {"Location": "/elsewhere"})
    server.routes["/elsewhere"] = answer(200, {"decision": "block", "reason": "followed!"})

    for path, (_location, reason) in cases.items():
        ex = make_executor(server.url(path))
        with pytest.raises(SSRFError) as info:
            await ex(invocation())
        assert info.value.reason == reason, path
        assert "redirect to" in str(info.value)
        assert "refused" in str(info.value)
        assert info.value.retryable is False

    ex = make_executor(server.url("/to-public"))
    with pytest.raises(HttpStatusError, match="redirects are not followed") as status:
        await ex(invocation())
    assert status.value.status == 301
    assert not status.value.retryable

    # A redirect within the allowlisted host is still not followed.
    ex = make_executor(server.url("/relative"))
    with pytest.raises(HttpStatusError, match="redirects are not followed"):
        await ex(invocation())
    assert not any(s.path == "/elsewhere" for s in server.seen)


async def test_proxies_in_the_environment_are_ignored(
        server: HookServer, make_executor: Callable[..., HttpExecutor],
        monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = HookServer()
    try:
        proxy.routes[server.url("/hook")] = answer(200, {"decision": "block",
                                                          "reason": "via proxy"})
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
            monkeypatch.setenv(var, f"http://127.0.0.1:{proxy.port}")
        for var in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(var, raising=False)
        server.routes["/hook"] = answer(200, {"decision": "block", "reason": "direct"})

        # The environment is live: a default httpx client would go through it.
        async with httpx.AsyncClient() as plain:
            await plain.post(server.url("/hook"), json={})
        assert len(proxy.seen) == 1

        ex = make_executor(server.url("/hook"))
        decision = await ex(invocation())
        assert decision is not None
        assert decision.reason == "direct"
        assert len(proxy.seen) == 1
        assert [s.path for s in server.seen] == ["/hook"]
    finally:
        proxy.close()


async def test_connections_are_pooled_and_stay_on_the_checked_address(
        server: HookServer, make_executor: Callable[..., HttpExecutor], dns: DNS) -> None:
    server.routes["/hook"] = answer(200, {})
    ex = make_executor(server.url("/hook"))
    for n in range(3):
        assert await ex(invocation(invocation_id=f"inv-{n}")) is None
    assert len({s.peer for s in server.seen}) == 1  # one connection, reused
    assert dns.calls == [HOST]  # a pooled connection needs no new lookup

    # The name now points somewhere private: the pooled connection is still the
    # one made to the checked address, and a new connection is refused.
    dns.table[HOST] = ["10.9.9.9"]
    assert await ex(invocation(invocation_id="inv-9")) is None
    fresh = make_executor(server.url("/hook"), allow_private=[])
    with pytest.raises(SSRFError, match=r"resolves to 10\.9\.9\.9"):
        await fresh(invocation())


# --- failures and their retry flags ---------------------------------------------


async def test_status_codes_map_to_retryable_and_terminal_failures(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.routes["/503"] = answer(503, b"down for maintenance", {"Retry-After": "7"})
    server.routes["/429"] = answer(429, b"slow down", {"Retry-After": soon})
    server.routes["/500"] = answer(500, b"boom")
    server.routes["/404"] = answer(404, b"no hook here, token=abcdef123456")
    server.routes["/400"] = answer(400, {"error": "bad payload"})

    async def fail(path: str) -> HttpStatusError:
        with pytest.raises(HttpStatusError) as info:
            await make_executor(server.url(path))(invocation())
        return info.value

    e503 = await fail("/503")
    assert (e503.status, e503.retryable, e503.retry_after) == (503, True, 7.0)
    assert "down for maintenance" in str(e503)
    e429 = await fail("/429")
    assert e429.retryable
    assert e429.retry_after is not None
    assert 20 < e429.retry_after <= 30
    e500 = await fail("/500")
    assert e500.retryable
    assert e500.retry_after is None
    e404 = await fail("/404")
    assert (e404.retryable, e404.retry_after) == (False, None)
    assert "abcdef123456" not in str(e404)  # the snippet is redacted
    e400 = await fail("/400")
    assert not e400.retryable
    assert "bad payload" in str(e400)


def test_retry_after_parses_seconds_and_dates() -> None:
    now = 1_700_000_000.0
    assert retry_after("120") == 120.0
    assert retry_after(email.utils.formatdate(now + 90, usegmt=True), now=now) == 90.0
    assert retry_after(email.utils.formatdate(now - 90, usegmt=True), now=now) == 0.0
    assert retry_after("soon") is None
    assert retry_after(None) is None


async def test_connection_refused_is_a_retryable_transport_failure(
        make_executor: Callable[..., HttpExecutor]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ex = make_executor(f"http://{HOST}:{port}/hook")
    with pytest.raises(HookCrash) as info:
        await ex(invocation())
    assert info.value.retryable
    assert "ConnectError" in str(info.value)


async def test_unresolvable_name_is_a_retryable_failure(
        make_executor: Callable[..., HttpExecutor]) -> None:
    ex = make_executor("http://gone.example.test/hook")
    with pytest.raises(HookFailure, match=r"could not resolve gone\.example\.test") as info:
        await ex(invocation())
    assert info.value.retryable


@pytest.mark.slow
async def test_one_total_timeout_covers_a_server_that_stalls(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    def stall(h: _Handler, seen: Seen) -> None:
        server.release.wait(30)

    server.routes["/stall"] = stall
    ex = make_executor(server.url("/stall"), timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(HookTimeout) as info:
        await ex(invocation())
    elapsed = time.monotonic() - t0
    assert info.value.retryable
    assert 0.4 < elapsed < 5, elapsed


@pytest.mark.slow
async def test_one_total_timeout_covers_a_server_that_drips(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    # Each byte arrives well inside any per-read timeout; only a deadline for
    # the whole exchange stops this.
    sent = []

    def drip(h: _Handler, seen: Seen) -> None:
        h.start_chunked()
        h.chunk(b"{")
        while not server.release.wait(0.05):
            h.chunk(b" ")
            sent.append(1)

    server.routes["/drip"] = drip
    ex = make_executor(server.url("/drip"), timeout=0.6)
    t0 = time.monotonic()
    with pytest.raises(HookTimeout):
        await ex(invocation())
    assert 0.5 < time.monotonic() - t0 < 5
    assert len(sent) >= 3  # the server really was still sending


async def test_body_over_the_cap_is_a_failure_not_truncated_json(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    reason = "x" * 2000
    big = json.dumps({"decision": "block", "reason": reason}).encode()
    server.routes["/declared"] = answer(200, big)

    def streamed(h: _Handler, seen: Seen) -> None:
        h.start_chunked()
        for i in range(0, len(big), 100):
            h.chunk(big[i:i + 100])
        h.wfile.write(b"0\r\n\r\n")

    server.routes["/streamed"] = streamed
    for path, text in [("/declared", "declares"), ("/streamed", "went past it")]:
        ex = make_executor(server.url(path), max_body=1000)
        with pytest.raises(ContractError, match=text) as info:
            await ex(invocation())
        assert "never truncated" in str(info.value)
        assert not info.value.retryable

    # Exactly at the cap is fine.
    ex = make_executor(server.url("/streamed"), max_body=len(big))
    decision = await ex(invocation())
    assert decision is not None
    assert decision.reason == reason


async def test_compressed_answers_are_refused(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    server.routes["/gzip"] = answer(200, gzip.compress(b"{}"), {"Content-Encoding": "gzip"})
    ex = make_executor(server.url("/gzip"))
    with pytest.raises(ContractError, match="Content-Encoding gzip"):
        await ex(invocation())
    assert server.seen[0].headers["accept-encoding"] == "identity"


@pytest.mark.parametrize(("body", "text"), [
    (b"<html>login</html>", "invalid JSON"),
    (b"[1, 2]", "must be a JSON object"),
    (b'{"decision": "explode"}', "unknown decision"),
    (b'{"decision": "block", "contract_version": 2}', "contract_version"),
    (b'{"verdict": "block"}', "unknown answer field"),
    (b'{"decision": "block", "decision": "approve"}', "duplicate key 'decision'"),
    (b'{"decision": "approve", "reason": NaN}', "NaN is not JSON"),
])
async def test_bad_answers_are_contract_errors(
        server: HookServer, make_executor: Callable[..., HttpExecutor],
        body: bytes, text: str) -> None:
    server.routes["/bad"] = answer(200, body)
    with pytest.raises(ContractError, match=text):
        await make_executor(server.url("/bad"))(invocation())


async def test_empty_answers_mean_no_opinion(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    server.routes["/204"] = answer(204)
    server.routes["/empty"] = answer(200, b"")
    server.routes["/ctx"] = answer(200, {"context": "remember the style guide"})
    assert await make_executor(server.url("/204"))(invocation()) is None
    assert await make_executor(server.url("/empty"))(invocation()) is None
    decision = await make_executor(server.url("/ctx"))(invocation())
    assert decision is not None
    assert decision.verdict is Verdict.NONE
    assert decision.context == "remember the style guide"


async def test_a_connection_dropped_after_the_headers_is_no_answer(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    # A handler that sends its status first and then dies (raises, is killed)
    # leaves a 200 with no length and nothing after it: the body's end cannot
    # be told from the connection's. Read as empty it would be "no opinion",
    # and a fail-closed gate would open on a server that never answered.
    def dies_after_headers(h: _Handler, seen: Seen) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        h.wfile.flush()
        h.close_connection = True

    server.routes["/dies"] = dies_after_headers
    with pytest.raises(ContractError, match="Content-Length"):
        await make_executor(server.url("/dies"))(invocation())


# --- headers, keys and signatures -------------------------------------------------


async def test_idempotency_key_is_stable_across_retries_of_one_invocation(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    server.routes["/hook"] = answer(200, {})
    ex = make_executor(server.url("/hook"))
    first = invocation(invocation_id="abc-1")
    await ex(first)
    await ex(dataclasses.replace(first, attempt=2))
    await ex(invocation(invocation_id="abc-2"))
    keys = [s.headers["idempotency-key"] for s in server.seen]
    assert keys[0] == keys[1] == "abc-1"
    assert keys[2] == "abc-2"


async def test_hmac_signature_verifies_and_a_wrong_secret_is_rejected(
        server: HookServer, make_executor: Callable[..., HttpExecutor],
        monkeypatch: pytest.MonkeyPatch) -> None:
    server.routes["/hook"] = checking_route(f"{HOST}:{server.port}")
    monkeypatch.setenv("HOOK_SECRET", "not-the-secret")
    ex = make_executor(server.url("/hook"), hmac_secret_env="HOOK_SECRET")
    with pytest.raises(HttpStatusError, match="signature") as info:
        await ex(invocation())
    assert info.value.status == 401
    assert not info.value.retryable

    seen = server.seen[-1]
    ts = seen.headers["x-interlock-timestamp"]
    sig = seen.headers["x-interlock-signature"]
    assert abs(int(ts) - time.time()) < 60
    # The scheme, checked independently of interlock.executors.net.signing.
    import hashlib
    import hmac

    expected = hmac.new(b"not-the-secret", ts.encode() + b"." + seen.body,
                        hashlib.sha256).hexdigest()
    assert sig == "sha256=" + expected
    assert signing.verify("not-the-secret", seen.body, ts, sig)
    assert not signing.verify("not-the-secret", seen.body + b" ", ts, sig)  # tampered
    assert not signing.verify("not-the-secret", seen.body, str(int(ts) - 1), sig)
    assert not signing.verify("not-the-secret", seen.body, ts, sig,
                              now=int(ts) + 301)  # too old: a replay
    assert not signing.verify("not-the-secret", seen.body, None, sig)


async def test_no_signature_headers_without_a_secret(
        server: HookServer, make_executor: Callable[..., HttpExecutor]) -> None:
    server.routes["/hook"] = answer(200, {})
    await make_executor(server.url("/hook"))(invocation())
    assert "x-interlock-signature" not in server.seen[0].headers


async def test_missing_environment_variable_is_a_terminal_failure_naming_it(
        server: HookServer, make_executor: Callable[..., HttpExecutor],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    server.routes["/hook"] = answer(200, {})
    for kw in ({"headers_from_env": {"Authorization": "NOT_SET_ANYWHERE"}},
               {"hmac_secret_env": "NOT_SET_ANYWHERE"}):
        ex = make_executor(server.url("/hook"), **kw)
        with pytest.raises(HookFailure, match="export NOT_SET_ANYWHERE") as info:
            await ex(invocation())
        assert info.value.mode is FailureMode.INELIGIBLE
        assert not info.value.retryable
    monkeypatch.setenv("SMUGGLER", "ok\r\nX-Injected: 1")
    ex = make_executor(server.url("/hook"), headers_from_env={"X-Token": "SMUGGLER"})
    with pytest.raises(HookFailure, match="line break") as info:
        await ex(invocation())
    assert not info.value.retryable
    assert server.seen == []


# --- construction: config mistakes are ConfigErrors ---------------------------------


@pytest.mark.parametrize(("kw", "field", "text"), [
    ({"url": "http://127.0.0.1/", "allow_private": []}, "url", "loopback"),
    ({"url": "http://0x7f.1/", "allow_private": []}, "url", "loopback"),
    ({"url": "http://u:p@hooks.example.com/"}, "url", "credentials"),
    ({"url": "ftp://hooks.example.com/"}, "url", "scheme"),
    ({"headers_from_env": {"Authorization": "Bearer abc123"}},
     "headers_from_env.Authorization", "NAME of an environment variable"),
    ({"headers_from_env": {"Host": "HOOK_HOST"}}, "headers_from_env.Host", "set by Interlock"),
    ({"headers_from_env": {"Bad Header": "X"}}, "headers_from_env.Bad Header", "not a valid"),
    ({"hmac_secret_env": "sk-live-123"}, "hmac_secret_env", "not an environment variable"),
    ({"timeout": 0}, "timeout", "positive"),
    ({"max_body": 0}, "max_body", "positive"),
    ({"client": httpx.AsyncClient()}, "client", "PinnedClient"),
    ({"allow_private": ["0.0.0.0/0"]}, "allow_private", "every address"),
])
async def test_config_mistakes_are_clear_config_errors(kw: dict[str, Any], field: str,
                                                       text: str) -> None:
    url = kw.pop("url", "https://hooks.example.com/hook")
    client = kw.get("client")
    try:
        with pytest.raises(ConfigError, match=text) as info:
            HttpExecutor(url, hook_name="remote", **kw)
        assert info.value.field == field
    finally:
        if client is not None:
            await client.aclose()


async def test_allowlist_is_announced_when_the_executor_is_built(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="interlock.executors.net"):
        ex = HttpExecutor("http://hooks.internal/", hook_name="guard",
                          allow_private=["hooks.internal", "10.0.0.0/8"])
    await ex.aclose()
    assert any("guard may reach private targets" in r.getMessage()
               and "hooks.internal, 10.0.0.0/8" in r.getMessage() for r in caplog.records)


async def test_a_shared_pinned_client_is_used_and_left_open(server: HookServer,
                                                            dns: DNS) -> None:
    server.routes["/a"] = answer(200, {"decision": "block", "reason": "a"})
    server.routes["/b"] = answer(200, {"decision": "block", "reason": "b"})
    async with PinnedClient(allow_private=[HOST], resolver=dns) as client:
        ea = HttpExecutor(server.url("/a"), hook_name="a", client=client)
        eb = HttpExecutor(server.url("/b"), hook_name="b", client=client)
        da, db = await ea(invocation()), await eb(invocation())
        await ea.aclose()
        assert not client.is_closed
        assert (da and da.reason, db and db.reason) == ("a", "b")
    assert len({s.peer for s in server.seen}) == 1  # one pool between both hooks
    with pytest.raises(ConfigError, match="belong to the shared client"):
        HttpExecutor(server.url("/a"), hook_name="a", client=client, allow_private=[HOST])


# --- TLS: pinned to the address, verified against the name ---------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


async def test_tls_through_the_pin_sends_sni_and_verifies_the_hostname(
        ca: trustme.CA, dns: DNS) -> None:
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(HOST).configure_cert(server_ctx)
    srv = HookServer(ssl_context=server_ctx)
    srv.routes["/hook"] = answer(200, {"decision": "block", "reason": "over tls"})
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    dns.table["other.example.test"] = ["127.0.0.1"]
    try:
        async with PinnedClient(allow_private=[HOST, "other.example.test"], resolver=dns,
                                ssl_context=client_ctx) as client:
            ex = HttpExecutor(srv.url("/hook", scheme="https"), hook_name="tls",
                              client=client)
            decision = await ex(invocation())
            assert decision is not None
            assert decision.reason == "over tls"
            assert srv.sni == [HOST]
            assert srv.seen[0].headers["host"] == f"{HOST}:{srv.port}"

            # Same address, a name the certificate does not carry: refused.
            wrong = HttpExecutor(srv.url("/hook", host="other.example.test",
                                         scheme="https"), hook_name="tls", client=client)
            with pytest.raises(HookCrash, match=r"CERTIFICATE_VERIFY_FAILED|hostname") as info:
                await wrong(invocation())
            assert not info.value.retryable
            assert len(srv.seen) == 1
    finally:
        srv.close()
