"""The console's endpoints on a real `interlock serve`: sessions, roles, CSRF,
the live stream, actions and their audit trail, redaction."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any

from conftest import Served


class Client:
    """A browser-like client: one cookie jar, the page's Origin on every request."""

    def __init__(self, served: Served, *, origin: str | None = "") -> None:
        self.served = served
        self.cookie = ""
        self.csrf = ""
        self.origin = served.url if origin == "" else origin

    def call(self, method: str, path: str, body: Any = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any, http.client.HTTPResponse]:
        conn = http.client.HTTPConnection("127.0.0.1", self.served.port, timeout=30)
        sent = {"Content-Type": "application/json", **(headers or {})}
        if self.origin:
            sent["Origin"] = self.origin
        if self.cookie:
            sent["Cookie"] = self.cookie
        if self.csrf and method == "POST" and "X-CSRF-Token" not in sent:
            sent["X-CSRF-Token"] = self.csrf
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers=sent)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        cookie = resp.getheader("set-cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        ctype = resp.getheader("content-type") or ""
        return resp.status, json.loads(raw) if "json" in ctype and raw else raw, resp

    def login(self, token: str) -> dict[str, Any]:
        code, body, _ = self.call("POST", "/ui/api/login", {"token": token})
        assert code == 200, body
        self.csrf = body["csrf"]
        return body


def evaluate(served: Served, command: str, *, token: str | None = None) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.request("POST", "/v1/events/before_tool_call",
                     body=json.dumps({"tool_name": "terminal", "args": {"command": command},
                                      "session_id": "s1"}),
                     headers={"Authorization": f"Bearer {token or served.events}",
                              "Content-Type": "application/json"})
        resp = conn.getresponse()
        return json.loads(resp.read())
    finally:
        conn.close()


def test_the_page_is_static_and_every_data_endpoint_needs_a_session(served: Served) -> None:
    c = Client(served)
    code, page, resp = c.call("GET", "/ui/")
    assert code == 200
    assert b"<title>Interlock console</title>" in page
    assert "script-src 'self'" in (resp.getheader("content-security-policy") or "")
    for path in ("decisions", "hooks", "deadletters", "health", "charts", "stream"):
        code, body, _ = c.call("GET", f"/ui/api/{path}")
        assert code == 401, (path, body)
    # A bearer header is not a session: the console's data needs the cookie.
    code, _, _ = c.call("GET", "/ui/api/hooks", headers={"Authorization": f"Bearer {served.admin}"})
    assert code == 401


def test_login_takes_read_or_admin_tokens_and_sets_a_strict_http_only_cookie(
        served: Served) -> None:
    c = Client(served)
    code, body, _ = c.call("POST", "/ui/api/login", {"token": served.events})
    assert code == 403
    assert "read or admin" in body["error"]
    code, body, _ = c.call("POST", "/ui/api/login", {"token": "ilk_wrong"})
    assert code == 401
    code, body, resp = c.call("POST", "/ui/api/login", {"token": served.read})
    assert code == 200
    assert body["role"] == "read"
    cookie = (resp.getheader("set-cookie") or "").lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert "path=/ui" in cookie
    code, body, _ = c.call("GET", "/ui/api/session")
    assert code == 200
    assert body["name"] == "viewer"


def test_other_origins_cannot_use_the_console_and_the_page_cannot_use_the_api(
        served: Served) -> None:
    evil = Client(served, origin="http://attacker.example")
    code, body, _ = evil.call("POST", "/ui/api/login", {"token": served.admin})
    assert code == 403
    assert "Origin" in body["error"]
    page = Client(served)
    code, _, _ = page.call("POST", "/v1/events/before_tool_call",
                           {"tool_name": "terminal", "args": {"command": "ls"}},
                           headers={"Authorization": f"Bearer {served.admin}"})
    assert code == 403  # the page's own origin opens /ui/ only


def test_a_read_token_can_view_but_not_act(served: Served) -> None:
    c = Client(served)
    c.login(served.read)
    evaluate(served, "ls")
    code, body, _ = c.call("GET", "/ui/api/hooks")
    assert code == 200
    assert [h["name"] for h in body["hooks"] if h["source"] == "project"] == ["project:no-rm"]
    code, body, _ = c.call("POST", "/ui/api/hooks/project:no-rm/revoke", {})
    assert code == 403
    assert "admin" in body["error"]
    assert evaluate(served, "rm -rf x")["reason"] == "no rm here"  # still approved


def test_an_action_needs_the_csrf_token_and_is_audited_with_who_did_it(served: Served) -> None:
    c = Client(served)
    c.login(served.admin)
    code, body, _ = c.call("POST", "/ui/api/hooks/project:no-rm/revoke", {},
                           headers={"X-CSRF-Token": "forged"})
    assert code == 403
    assert "CSRF" in body["error"]
    assert evaluate(served, "ls")["decision"] == "none"
    code, body, _ = c.call("POST", "/ui/api/hooks/project:no-rm/revoke", {})
    assert code == 200, body
    # Revoked: the fail-closed hook now blocks what it guards, at once.
    after = evaluate(served, "ls")
    assert after["decision"] == "block"
    assert "unapproved" in after["reason"]
    code, body, _ = c.call("POST", "/ui/api/hooks/project:no-rm/approve", {})
    assert code == 200, body
    assert evaluate(served, "ls")["decision"] == "none"
    audit = served.cli("audit", "--event", "operator_action", "--json")
    assert audit.returncode == 0, audit.stderr
    rows = json.loads(audit.stdout)
    assert {("console:oncall", "revoke", "project:no-rm"),
            ("console:oncall", "approve", "project:no-rm")} <= {
        (r["hook"], r["verdict"], r["subject"]) for r in rows}


def test_a_decision_made_through_a_bridge_reaches_the_live_stream(served: Served) -> None:
    c = Client(served)
    c.login(served.read)
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.request("GET", "/ui/api/stream", headers={"Cookie": c.cookie})
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("content-type", "").startswith("text/event-stream")
    got: list[dict[str, Any]] = []
    arrived = threading.Event()

    def read() -> None:
        for raw in resp:
            line = raw.decode().strip()
            if line.startswith("data: "):
                got.append(json.loads(line[6:]))
                arrived.set()
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "claude-1",
            "tool_input": {"command": "rm -rf build"}, "cwd": str(served.root)}
    bridge = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    bridge.request("POST", "/v1/bridge/claude", body=json.dumps(call),
                   headers={"Authorization": f"Bearer {served.events}",
                            "Content-Type": "application/json"})
    assert bridge.getresponse().status == 200
    bridge.close()
    assert arrived.wait(20), "no decision arrived on the stream"
    conn.close()
    row = got[0]
    assert (row["verdict"], row["hook"], row["tool"], row["subject"], row["platform"]) == (
        "block", "project:no-rm", "terminal", "rm -rf build", "claude")
    code, record, _ = c.call("GET", f"/ui/api/decisions/{row['seq']}")
    assert code == 200
    assert [h["hook"] for h in record["hooks"]] == ["project:no-rm"]
    assert record["hooks"][0]["latency_ms"] > 0
    code, health, _ = c.call("GET", "/ui/api/health")
    assert "claude" in [a["platform"] for a in health["agents"]]


def test_filters_and_paging_are_done_by_the_server(served: Served) -> None:
    c = Client(served)
    c.login(served.read)
    for i in range(6):
        evaluate(served, f"rm f{i}" if i % 2 else f"ls d{i}")
    _, body, _ = c.call("GET", "/ui/api/decisions?verdict=block")
    assert [r["subject"] for r in body["rows"]] == ["rm f5", "rm f3", "rm f1"]
    _, body, _ = c.call("GET", "/ui/api/decisions?limit=2")
    assert [r["subject"] for r in body["rows"]] == ["rm f5", "ls d4"]
    _, older, _ = c.call("GET", f"/ui/api/decisions?limit=2&before={body['rows'][-1]['seq']}")
    assert [r["subject"] for r in older["rows"]] == ["rm f3", "ls d2"]


def test_dead_letters_are_resolved_one_by_one_or_by_hook(served: Served) -> None:
    for _ in range(3):
        assert evaluate(served, "crash now")["decision"] == "block"
    c = Client(served)
    c.login(served.admin)
    ids: list[int] = []
    for _ in range(50):  # the store writes in the background
        _, body, _ = c.call("GET", "/ui/api/deadletters")
        ids = [r["id"] for r in body["records"]]
        if len(ids) == 3:
            break
        threading.Event().wait(0.1)
    assert len(ids) == 3
    code, body, _ = c.call("POST", f"/ui/api/deadletters/{ids[0]}/resolve",
                           {"note": "restarted it"})
    assert (code, body["resolved"]) == (200, [ids[0]])
    code, body, _ = c.call("POST", "/ui/api/deadletters/resolve",
                           {"hook": "project:no-rm", "note": "fixed the script"})
    assert code == 200
    assert sorted(body["resolved"]) == sorted(ids[1:])
    code, body, _ = c.call("GET", "/ui/api/deadletters")
    assert body["records"] == []
    code, body, _ = c.call("GET", "/ui/api/deadletters?all=1")
    assert {(r["resolved_by"], r["note"]) for r in body["records"]} == {
        ("console:oncall", "restarted it"), ("console:oncall", "fixed the script")}


def test_what_the_console_shows_is_redacted(served: Served) -> None:
    secret = "AKIA" + "Q" * 16
    evaluate(served, f"rm -rf /tmp/x --key {secret}")
    c = Client(served)
    c.login(served.read)
    _, body, _ = c.call("GET", "/ui/api/decisions")
    row = body["rows"][0]
    assert secret not in json.dumps(row)
    _, record, _ = c.call("GET", f"/ui/api/decisions/{row['seq']}")
    assert secret not in json.dumps(record)
    assert "rm -rf /tmp/x" in record["subject"]


def test_a_token_revoked_from_another_terminal_ends_its_sessions_and_its_api_use(
        served: Served) -> None:
    c = Client(served)
    c.login(served.read)
    assert c.call("GET", "/ui/api/hooks")[0] == 200
    revoked = served.cli("serve", "token", "revoke", "viewer", "--project", str(served.root))
    assert revoked.returncode == 0, revoked.stderr
    # The server re-reads its token file on change? It holds one store: revoke there.
    code, body, _ = c.call("GET", "/ui/api/hooks")
    assert code == 401
    assert "revoked" in body["error"]
    served.cli("serve", "token", "revoke", "bridge", "--project", str(served.root))
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.request("POST", "/v1/events/before_tool_call", body=b"{}",
                     headers={"Authorization": f"Bearer {served.events}"})
        assert conn.getresponse().status == 401
    finally:
        conn.close()


def test_charts_count_decisions_per_minute_from_the_store(served: Served) -> None:
    for command in ("rm a", "ls", "ls"):
        evaluate(served, command)
    c = Client(served)
    c.login(served.read)
    for _ in range(50):  # the store writes in the background
        _, body, _ = c.call("GET", "/ui/api/charts")
        totals = {k: sum(v) for k, v in body["decisions"].items()}
        if sum(totals.values()) >= 3:
            break
        threading.Event().wait(0.1)
    assert totals == {"block": 1, "none": 2}
    assert len(body["minutes"]) == 60
    assert any(v is not None and v > 0 for v in body["p99_ms"])


def test_the_console_refuses_to_approve_a_hook_that_cannot_run(served: Served) -> None:
    import time

    c = Client(served)
    c.login(served.admin)
    config = served.root / ".interlock" / "config.toml"
    config.write_text(config.read_text() + '\n[[hooks]]\nname = "gone"\n'
                      'events = ["user_input"]\ncommand = "./gone.sh"\non_error = "open"\n')
    deadline = time.monotonic() + 30
    while True:  # the server reloads the edit live
        _, body, _ = c.call("GET", "/ui/api/hooks")
        if "project:gone" in [h["name"] for h in body["hooks"]]:
            break
        assert time.monotonic() < deadline, body
        time.sleep(0.1)
    code, body, _ = c.call("POST", "/ui/api/hooks/project:gone/approve", {})
    assert code == 409, body
    assert "cannot run, so it is not approved" in body["error"]
    assert "gone.sh does not exist" in body["error"]
    _, body, _ = c.call("GET", "/ui/api/hooks")
    assert not {h["name"]: h for h in body["hooks"]}["project:gone"]["approved"]
    # The config stays valid (the edit itself needs no-rm approved again).
    assert "no-valid-config" not in json.dumps(evaluate(served, "ls"))
    code, body, _ = c.call("POST", "/ui/api/hooks/project:no-rm/approve", {})
    assert code == 200, body
    assert evaluate(served, "rm -rf x")["reason"] == "no rm here"
