"""A second look at the console's doors: path tricks past the Origin rule, a null
Origin, one session's CSRF token with another's cookie, secrets where the
console shows payloads."""

from __future__ import annotations

import http.client
import json

import pytest
from test_console_api import Client, evaluate

from conftest import Served


def raw(served: Served, method: str, path: str, headers: dict[str, str],
        body: bytes = b"") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for key, value in {"Content-Length": str(len(body)), **headers}.items():
            conn.putheader(key, value)
        conn.endheaders(body)
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/ui/../v1/events/before_tool_call",
                                  "/ui/%2e%2e/v1/events/before_tool_call",
                                  "/ui/..%2fv1/events/before_tool_call",
                                  "/ui//../v1/events/before_tool_call",
                                  "/ui/./../v1/events/before_tool_call"])
def test_the_page_cannot_reach_the_api_through_a_ui_prefixed_path(served: Served,
                                                                   path: str) -> None:
    body = json.dumps({"tool_name": "terminal", "args": {"command": "ls"}}).encode()
    status = raw(served, "POST", path, {
        "Host": f"127.0.0.1:{served.port}", "Origin": served.url,
        "Authorization": f"Bearer {served.admin}", "Content-Type": "application/json"}, body)
    assert status in (403, 404, 405), (path, status)


@pytest.mark.parametrize("origin", ["null", "http://127.0.0.1", "http://localhost:1",
                                    "file://"])
def test_odd_origins_cannot_log_in(served: Served, origin: str) -> None:
    code, body, _ = Client(served, origin=origin).call("POST", "/ui/api/login",
                                                       {"token": served.admin})
    assert code == 403, body


@pytest.mark.parametrize("host", ["[::1]evil.example", "127.0.0.1.evil.example",
                                  "evil.example#127.0.0.1", "localhost:1:evil"])
def test_host_tricks_are_refused(served: Served, host: str) -> None:
    status = raw(served, "GET", "/ui/api/session", {"Host": host})
    # [::1]evil.example is read as [::1], which no browser can send for a
    # rebinding page; the rest are foreign names.
    assert status in (401, 403), (host, status)


def test_one_sessions_csrf_token_does_not_work_with_another_sessions_cookie(
        served: Served) -> None:
    first, second = Client(served), Client(served)
    first.login(served.admin)
    second.login(served.admin)
    assert first.csrf != second.csrf
    code, body, _ = second.call("POST", "/ui/api/hooks/project:no-rm/revoke", {},
                                headers={"X-CSRF-Token": first.csrf})
    assert code == 403, body
    assert evaluate(served, "rm -rf x")["reason"] == "no rm here"
    code, _, _ = first.call("POST", "/ui/api/logout", {})
    assert code == 200
    code, body, _ = first.call("POST", "/ui/api/hooks/project:no-rm/revoke", {})
    assert code == 401, body  # a logged-out session's token pair is dead


def test_secrets_in_keys_and_glued_values_are_redacted_in_the_payload_view(
        served: Served) -> None:
    key = "ghp_" + "a1B2" * 9
    glued = "sk-ant-api03-" + "x" * 40
    evaluate(served, f"rm -rf /tmp/y --token=Bearer{glued}&{key}")
    c = Client(served)
    c.login(served.read)
    _, body, _ = c.call("GET", "/ui/api/decisions")
    _, record, _ = c.call("GET", f"/ui/api/decisions/{body['rows'][0]['seq']}")
    shown = json.dumps(body) + json.dumps(record)
    assert key not in shown
    assert glued not in shown
    assert "rm -rf /tmp/y" in record["subject"]
