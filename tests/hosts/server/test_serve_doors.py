"""An attacker's look at `interlock serve` over real HTTP: cheap bodies on the open
console login, sessions that outlive their token, a live stream after revocation."""

from __future__ import annotations

import http.client
import json
import socket
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from interlock import Engine, block
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import Role, TokenStore
from interlock.hosts.server.console import Console
from interlock.hosts.server.console_feed import DecisionFeed
from interlock.hosts.server.listen import Serving

pytestmark = pytest.mark.e2e  # each test serves the app on a real port, and stops it


@dataclass
class Served:
    serving: Serving
    tokens: TokenStore
    engine: Engine

    def call(self, method: str, path: str, raw: bytes = b"", *,
             headers: dict[str, str] | None = None) -> tuple[int, Any, str | None]:
        conn = http.client.HTTPConnection("127.0.0.1", self.serving.port, timeout=30)
        try:
            conn.request(method, path, body=raw, headers={
                "Content-Type": "application/json", **(headers or {})})
            resp = conn.getresponse()
            body = resp.read()
        finally:
            conn.close()
        return resp.status, json.loads(body) if body else None, resp.getheader("set-cookie")

    def login(self, token: str) -> tuple[str, str]:
        """(the session cookie, its CSRF token)."""
        code, body, cookie = self.call("POST", "/ui/api/login",
                                       json.dumps({"token": token}).encode())
        assert code == 200, body
        assert cookie is not None
        return cookie.split(";", 1)[0], body["csrf"]


@pytest.fixture
def served() -> Iterator[Served]:
    engine = Engine()

    @engine.on("before_tool_call", name="no-rm")
    def no_rm(event: Any) -> Any:
        return block("no rm here")

    feed = DecisionFeed()
    engine.add_sink(feed)
    tokens = TokenStore()
    root = Path(tempfile.mkdtemp(prefix="il-proj-")).resolve()
    app = create_app(engine, project_root=root, tokens=tokens,
                     console=Console(tokens=tokens, feed=feed))
    serving = Serving(app, port=0)
    with serving.running():
        yield Served(serving, tokens, engine)
    engine.close()


def wait_until(check: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize(("raw", "status"), [
    (b"[" * 30_000 + b"]" * 30_000, 400),
    (b'{"token": "' + b"a" * (4 << 20) + b'"}', 413),
    (b"\xff\xfe{", 400),
    (b"[1]", 400),
])
def test_the_open_console_login_answers_cheap_bad_bodies_with_a_clear_4xx(
        served: Served, raw: bytes, status: int) -> None:
    code, body, _ = served.call("POST", "/ui/api/login", raw)
    assert code == status, body
    assert "internal error" not in body["error"]


def test_an_oversized_chunked_login_is_refused_before_it_is_read_whole(
        served: Served) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served.serving.port, timeout=30)

    def chunks() -> Iterator[bytes]:
        yield b'{"token": "'
        for _ in range(8):
            yield b"a" * (1 << 20)

    try:
        conn.request("POST", "/ui/api/login", body=chunks(), encode_chunked=True,
                     headers={"Content-Type": "application/json",
                              "Transfer-Encoding": "chunked"})
        resp = conn.getresponse()
        assert resp.status == 413
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused while the client was still sending: also never read whole
    finally:
        conn.close()


def test_a_console_session_ends_when_its_token_expires(served: Served) -> None:
    token = served.tokens.create("brief", Role.ADMIN, ttl=1.0)
    cookie, _ = served.login(token)
    assert served.call("GET", "/ui/api/session", headers={"Cookie": cookie})[0] == 200
    wait_until(lambda: served.tokens.verify(token) is None)
    code, body, _ = served.call("GET", "/ui/api/session", headers={"Cookie": cookie})
    assert code == 401, body
    assert "expired" in body["error"]


@pytest.mark.slow  # the stream notices at its next session check, seconds later
def test_an_open_live_stream_ends_when_its_token_is_revoked(served: Served) -> None:
    token = served.tokens.create("viewer", Role.READ)
    cookie, _ = served.login(token)
    sock = socket.create_connection(("127.0.0.1", served.serving.port), timeout=30)
    try:
        sock.sendall(f"GET /ui/api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     f"Cookie: {cookie}\r\n\r\n".encode())
        head = b""
        while b"retry: 2000" not in head:
            head += sock.recv(4096)
        assert b" 200 " in head.split(b"\r\n", 1)[0]
        served.tokens.revoke("viewer")
        code, _, _ = served.call("POST", "/v1/events/before_tool_call", json.dumps(
            {"tool_name": "terminal", "args": {"command": "rm -rf /"}}).encode(),
            headers={"Authorization": f"Bearer {served.tokens.create('ci')}"})
        assert code == 200
        rest, ended = b"", False
        deadline = time.monotonic() + 10  # keep-alives come every 15 s: none is awaited
        while not ended and time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                break
            rest += chunk
            ended = not chunk
        assert b"data:" not in rest  # the decision after the revocation was not sent
        assert ended  # and the server ended the stream
    finally:
        sock.close()


def raw_exchange(served: Served, head: bytes, *,
                 seconds: float = 20.0) -> tuple[bytes, bool]:
    """Send ``head`` on a fresh connection: what the server answers, and whether it
    closed the connection within ``seconds``."""
    sock = socket.create_connection(("127.0.0.1", served.serving.port), timeout=seconds)
    answer, closed = b"", False
    try:
        try:
            sock.sendall(head)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused while still sending
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            answer += chunk
    finally:
        sock.close()
    return answer, closed


def test_a_request_head_past_the_limit_is_a_431_and_never_buffered_whole(
        served: Served) -> None:
    # Unbounded, one header grows quadratically in the parser: 64 MB held the loop
    # for seconds and its memory, from a client with no token.
    huge = b"GET /v1/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * (1 << 20)
    answer, _ = raw_exchange(served, huge + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    fine, _ = raw_exchange(served, b"GET /v1/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                b"Connection: close\r\nX-Pad: " + b"a" * 8000 + b"\r\n\r\n")
    assert fine.startswith(b"HTTP/1.1 200"), fine[:200]


def test_a_head_that_never_ends_is_dropped(served: Served,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from interlock.hosts.server import listen

    monkeypatch.setattr(listen, "HEAD_TIMEOUT_S", 0.5)
    # Slowloris: a head begun and never finished, and a connection that sends nothing.
    begun, closed = raw_exchange(served, b"GET /v1/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert closed
    assert begun.startswith(b"HTTP/1.1 408"), begun[:200]
    assert raw_exchange(served, b"") == (b"", True)


def test_a_reload_during_a_hooks_run_never_mixes_old_hooks_with_new_rules() -> None:
    """One revision denies `rm` by a rule; the next moves that deny into a hook. A call
    whose (old) hooks are still running when the reload lands is judged by the old
    rules too: old hooks with the new rules would allow what neither revision allows."""
    import threading

    from interlock.agent.permissions import rule

    engine = Engine()
    entered, release = threading.Event(), threading.Event()

    @engine.on("before_tool_call", name="slow-log")
    async def slow_log(event: Any) -> Any:
        import asyncio

        entered.set()
        while not release.is_set():  # noqa: ASYNC110 - a test's gate on another thread
            await asyncio.sleep(0.01)
        return None

    rules = [rule("terminal", "rm *", "deny")]
    tokens = TokenStore()
    token = tokens.create("ci")
    root = Path(tempfile.mkdtemp(prefix="il-proj-")).resolve()
    app = create_app(engine, project_root=root, tokens=tokens, rules=lambda: list(rules))
    serving = Serving(app, port=0)
    answers: list[Any] = []
    with serving.running():
        served = Served(serving, tokens, engine)

        def call() -> None:
            answers.append(served.call("POST", "/v1/events/before_tool_call", json.dumps(
                {"tool_name": "terminal", "args": {"command": "rm -rf /"}}).encode(),
                headers={"Authorization": f"Bearer {token}"}))

        caller = threading.Thread(target=call)
        caller.start()
        assert entered.wait(10)
        # The reload: the deny moves from the rules into a hook.
        engine.on("before_tool_call", lambda e: block("no rm"), name="no-rm")
        rules.clear()
        release.set()
        caller.join(30)
    engine.close()
    code, body, _ = answers[0]
    assert code == 200, body
    assert body["decision"] == "block", body


@pytest.mark.parametrize("query", ["before=%C2%B2", "limit=%C2%B2", "after=%C2%B2"])
def test_console_numbers_that_are_digits_but_not_ascii_are_not_a_500(served: Served,
                                                                      query: str) -> None:
    cookie, _ = served.login(served.tokens.create("viewer", Role.READ))
    for path in ("/ui/api/decisions", "/ui/api/deadletters"):
        code, body, _ = served.call("GET", f"{path}?{query}", headers={"Cookie": cookie})
        assert code < 500, body


def test_dead_letter_numbers_that_are_digits_but_not_ascii_are_not_a_500() -> None:
    from test_server import InMemoryDeadLetters

    tokens = TokenStore()
    admin = tokens.create("ops", Role.ADMIN)
    app = create_app(Engine(), project_root=Path(tempfile.mkdtemp()).resolve(), tokens=tokens,
                     dead_letters=InMemoryDeadLetters())
    serving = Serving(app, port=0)
    with serving.running():
        served = Served(serving, tokens, Engine())
        for query in ("limit=%C2%B2", "before=%C2%B2"):
            code, body, _ = served.call("GET", f"/v1/runtime/hooks/dead-letter?{query}",
                                        headers={"Authorization": f"Bearer {admin}"})
            assert code == 422, body
