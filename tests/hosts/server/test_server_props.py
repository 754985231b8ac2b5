"""Property tests against the published OpenAPI document: no input gets a 5xx.

Hypothesis draws operations from the spec served at /v1/openapi.json, and
bodies both from each event's schema (valid and near-valid payloads) and
from arbitrary JSON; every answer must be a status the spec documents for
that operation, never a server error.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interlock import Engine, block
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import Role, TokenStore
from interlock.hosts.server.gateway import Gateway
from interlock.hosts.server.listen import Serving
from interlock.models.tooling import ModelResponse
from interlock.reliability.metrics import Metrics
from interlock.reliability.sinks import MetricsSink
from interlock.testing import ScriptedModel

pytestmark = pytest.mark.slow


def _connect(port: int) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.connect()
    assert conn.sock is not None
    # No Nagle: a keep-alive client otherwise waits out delayed ACKs (~40 ms a request).
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


class Target:
    def __init__(self, port: int, token: str, spec: dict[str, Any]) -> None:
        self.port = port
        self.token = token
        self.spec = spec
        self.conn = _connect(port)

    def send(self, method: str, path: str, raw: bytes | None,
             headers: dict[str, str]) -> tuple[int, Any]:
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=raw, headers=headers)
                resp = self.conn.getresponse()
                body = resp.read()
                if not (resp.getheader("content-type") or "").startswith("application/json"):
                    return resp.status, body.decode()  # /metrics: Prometheus text
                return resp.status, json.loads(body) if body else None
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = _connect(self.port)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


class Dead:
    def list(self, *, unresolved: bool = False, limit: int = 100) -> list[dict[str, Any]]:
        return [{"id": "dl-1"}][:limit]

    def resolve(self, record_id: str) -> bool:
        return record_id == "dl-1"


class Reload:
    def reload(self, *, operator: bool = True) -> Any:
        return type("R", (), {"revision": 1, "error": None})()


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    engine = Engine()
    engine.on("before_tool_call", lambda e: block("no") if e.tool_name == "x" else None)
    engine.on(["user_input", "command"], lambda e: None)
    tokens = TokenStore()
    token = tokens.create("ops", Role.ADMIN)
    root = tmp_path_factory.mktemp("proj")

    def model(sender: str, channel: str) -> ScriptedModel:
        return ScriptedModel([lambda request: ModelResponse(text="ok")] * 1000)

    metrics = Metrics()
    engine.add_sink(MetricsSink(metrics))
    gateway = Gateway(engine, model, project_root=root, ask_timeout=0.1)
    app = create_app(engine, project_root=root, tokens=tokens, dead_letters=Dead(),
                     reloader=Reload(), gateway=gateway, metrics=metrics)
    serving = Serving(app, port=0)
    with serving.running():
        conn = http.client.HTTPConnection("127.0.0.1", serving.port, timeout=10)
        conn.request("GET", "/v1/openapi.json")
        spec = json.loads(conn.getresponse().read())
        conn.close()
        target = Target(serving.port, token, spec)
        yield target
        target.conn.close()
    engine.close()


JSON_LEAF = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
             | st.floats(allow_nan=False) | st.text(max_size=20))
JSON = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def _schema_value(schema: dict[str, Any], comps: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value near ``schema``: usually of its type, sometimes anything."""
    if "$ref" in schema:
        schema = comps[schema["$ref"].rsplit("/", 1)[1]]
    options = schema.get("anyOf")
    if options:
        return st.one_of(*[_schema_value(o, comps) for o in options])
    kind = schema.get("type")
    by_type: dict[str, st.SearchStrategy[Any]] = {
        "string": st.text(max_size=30), "integer": st.integers(-(2**40), 2**40),
        "number": st.floats(allow_nan=False, allow_infinity=False), "boolean": st.booleans(),
        "null": st.none(), "array": st.lists(JSON, max_size=3),
        "object": st.dictionaries(st.text(max_size=8), JSON, max_size=3)}
    base = by_type.get(kind, JSON) if isinstance(kind, str) else JSON
    return st.one_of(base, base, base, JSON)


@st.composite
def event_request(draw: st.DrawFn, spec: dict[str, Any]) -> tuple[str, bytes]:
    paths = sorted(p for p in spec["paths"] if p.startswith("/v1/events/"))
    path = draw(st.sampled_from(paths))
    comps = spec["components"]["schemas"]
    ref = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    schema = comps[ref["$ref"].rsplit("/", 1)[1]]
    props = schema.get("properties", {})
    fields = draw(st.sets(st.sampled_from(sorted(props)), max_size=len(props))) if props else set()
    body: dict[str, Any] = {name: draw(_schema_value(props[name], comps)) for name in fields}
    for name in schema.get("required", []):
        if draw(st.integers(0, 9)):
            body[name] = draw(_schema_value(props[name], comps))
    if not draw(st.integers(0, 9)):
        body[draw(st.text(min_size=1, max_size=8))] = draw(JSON)
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return path, json.dumps(draw(JSON)).encode()
    if kind == 1:
        return path, draw(st.binary(max_size=40))
    return path, json.dumps(body).encode()


def _documented(target: Target, template: str, method: str) -> set[int]:
    return {int(code) for code in target.spec["paths"][template][method]["responses"]}


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_event_operations_never_fail_with_5xx(target: Target, data: st.DataObject) -> None:
    path, raw = data.draw(event_request(target.spec))
    status, body = target.send("POST", path, raw, {
        "Authorization": f"Bearer {target.token}", "Content-Type": "application/json"})
    assert status < 500, body
    assert status in _documented(target, path, "post"), (status, body)
    if status == 200:
        assert body["event"] == path.rsplit("/", 1)[1]
    else:
        assert isinstance(body["error"], str)
        assert body["error"]


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_operation_with_odd_parameters_never_fails_with_5xx(
        target: Target, data: st.DataObject) -> None:
    ops = sorted((template, method) for template, item in target.spec["paths"].items()
                 for method in item)
    template, method = data.draw(st.sampled_from(ops))
    path = template
    for name in ("agent", "record_id"):
        path = path.replace("{" + name + "}", quote(data.draw(st.text(min_size=1, max_size=12)),
                                                    safe=""))
    query = ""
    if data.draw(st.booleans()):
        query = "?" + "&".join(f"{k}={quote(v)}" for k, v in data.draw(st.dictionaries(
            st.sampled_from(["unresolved", "limit", "x"]), st.text(max_size=6), max_size=3)
        ).items())
    headers = {"Content-Type": "application/json"}
    token_kind = data.draw(st.sampled_from(["good", "none", "bad"]))
    if token_kind == "good":
        headers["Authorization"] = f"Bearer {target.token}"
    elif token_kind == "bad":
        headers["Authorization"] = data.draw(st.sampled_from(
            ["Bearer ", "Bearer ilk_x", "Basic abc", "bearer  "]))
    if data.draw(st.booleans()):
        project = data.draw(st.sampled_from(["/", "rel", "/tmp/../tmp", "\x00", "/nonexistent"]))
        headers["X-Interlock-Project"] = quote(project)
    raw = json.dumps(data.draw(JSON)).encode() if method == "post" else None
    status, body = target.send(method.upper(), path + query, raw, headers)
    assert status < 500, (template, status, body)
    assert status in _documented(target, template, method) | {403}, (template, status, body)


def _host_events() -> list[tuple[str, str]]:
    from interlock.engine.catalog import SPECS, names_in
    from interlock.hosts.bridge import HOSTS

    return sorted({(agent, name) for agent in HOSTS for spec in SPECS
                   for name in names_in(agent, spec)})


HOST_FIELDS = ["tool_name", "tool_input", "arguments", "session_id", "session_key", "cwd",
               "prompt", "command", "workspace_roots", "loop_count", "stop_hook_active",
               "tool_response", "extra", "channel", "content", "llm_request", "llm_response",
               "conversation_id", "tool_use_id", "message", "source", "file_path", "edits",
               "result", "success", "message_count", "model", "messages", "text", "error"]


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_bridge_endpoint_with_host_payloads_never_fails_with_5xx(
        target: Target, data: st.DataObject) -> None:
    agent, event = data.draw(st.sampled_from(_host_events()))
    body = data.draw(st.dictionaries(st.sampled_from(HOST_FIELDS), JSON, max_size=6))
    body["event" if agent == "moltis" else "hook_event_name"] = event
    status, answer = target.send("POST", f"/v1/bridge/{agent}", json.dumps(body).encode(), {
        "Authorization": f"Bearer {target.token}", "Content-Type": "application/json"})
    assert status in (200, 422), (agent, event, body, answer)
    if status == 200:
        assert answer["decision"] in ("none", "block", "modify", "approve", "ask", "respond",
                                      "skip", "stop", "retry")


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_chat_operations_with_schema_bodies_never_fail_with_5xx(
        target: Target, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(["/v1/chat", "/v1/chat/answer"]))
    comps = target.spec["components"]["schemas"]
    ref = target.spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    schema = comps[ref["schema"]["$ref"].rsplit("/", 1)[1]]
    props = schema["properties"]
    body = {name: data.draw(_schema_value(props[name], comps))
            for name in data.draw(st.sets(st.sampled_from(sorted(props))))}
    if data.draw(st.integers(0, 4)) == 0:
        body[data.draw(st.text(min_size=1, max_size=8))] = data.draw(JSON)
    status, answer = target.send("POST", path, json.dumps(body).encode(), {
        "Authorization": f"Bearer {target.token}", "Content-Type": "application/json"})
    assert status in _documented(target, path, "post"), (status, answer)
    if status == 200:
        assert answer["type"] in ("reply", "question", "answered")
    else:
        assert answer["error"]
