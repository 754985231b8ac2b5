"""The chat gateway of `interlock serve`: POST /v1/chat, the WebSocket, and their hooks.

Each test runs a real server on 127.0.0.1 with a scripted model that echoes
what it was sent (or calls the terminal when asked to "run").
"""

from __future__ import annotations

import http.client
import json
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from interlock import Engine, block, modify, skip
from interlock.agent.permissions import rule
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import Role, TokenStore
from interlock.hosts.server.gateway import Gateway
from interlock.hosts.server.listen import Serving
from interlock.models.tooling import ModelRequest, ModelResponse, ToolCall
from interlock.reliability.metrics import Metrics
from interlock.reliability.sinks import MetricsSink
from interlock.testing import ScriptedModel

pytestmark = pytest.mark.e2e


def brain(request: ModelRequest) -> ModelResponse:
    """Echo the user; "run X" calls the terminal; a tool result is reported back."""
    last = request.messages[-1]
    content = str(last.get("content") or "")
    if last["role"] == "tool":
        return ModelResponse(text=f"tool said: {content}")
    if content.startswith("run "):
        return ModelResponse(tool_calls=[ToolCall(id="t1", name="terminal",
                                                  args={"command": content[4:]})])
    return ModelResponse(text=f"echo: {content} and more words")


@dataclass
class Chat:
    serving: Serving
    engine: Engine
    gateway: Gateway
    root: Path
    alice: str
    bob: str
    events_token: str
    models: dict[tuple[str, str], ScriptedModel] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, name: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        with self.arrived:
            self.arrived.wait_for(lambda: any(e == name for e, _ in self.seen), timeout)
        return self.named(name)

    def post(self, path: str, body: Any, *, token: str | None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.serving.port, timeout=20)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        if token is not None:
            hdrs["Authorization"] = f"Bearer {token}"
        try:
            conn.request("POST", path, body=json.dumps(body).encode(), headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        return resp.status, json.loads(raw)

    def get(self, path: str, token: str | None = None) -> tuple[int, str, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.serving.port, timeout=20)
        hdrs = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            conn.request("GET", path, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read().decode()
        finally:
            conn.close()
        return resp.status, resp.getheader("content-type") or "", raw

    def ws(self, token: str | None, **kwargs: Any) -> ClientConnection:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return connect(f"ws://127.0.0.1:{self.serving.port}/v1/chat/ws",
                       additional_headers=headers, open_timeout=10, **kwargs)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [payload for event, payload in self.seen if event == name]


GATEWAY_EVENTS = ("message_received", "message_sent", "gateway_start", "gateway_stop",
                  "permission_denied")


def _start(ask_timeout: float = 10.0, metrics: Metrics | None = None) -> tuple[Chat, Any]:
    root = Path(tempfile.mkdtemp(prefix="il-chat-")).resolve()
    engine = Engine()
    tokens = TokenStore()
    alice = tokens.create("alice-phone", Role.CHAT, sender="alice")
    bob = tokens.create("bob", Role.CHAT)
    events_token = tokens.create("ci")
    chat_box: list[Chat] = []

    def factory(sender: str, channel: str) -> ScriptedModel:
        model = ScriptedModel([brain] * 20, name=f"{sender}-{channel}")
        chat_box[0].models[(sender, channel)] = model
        return model

    gateway = Gateway(engine, factory, project_root=root, ask_timeout=ask_timeout,
                      agent_options={"permissions": [rule("terminal", "*", "ask")]})
    def record(event: Any) -> None:
        with chat_box[0].arrived:
            chat_box[0].seen.append((event.name, event.to_dict()))
            chat_box[0].arrived.notify_all()

    engine.on(list(GATEWAY_EVENTS), record, name="recorder")
    # Apart: a hook on before_message_send turns streaming off.
    engine.on("before_message_send", record, name="send-recorder")
    app = create_app(engine, project_root=root, tokens=tokens, gateway=gateway,
                     metrics=metrics)
    serving = Serving(app, port=0)
    gateway.address = f"http://127.0.0.1:{serving.port}"  # what `interlock serve` does
    chat = Chat(serving, engine, gateway, root, alice, bob, events_token)
    chat_box.append(chat)
    return chat, serving.running()


@pytest.fixture
def chat() -> Iterator[Chat]:
    made, running = _start()
    with running:
        yield made
    made.engine.close()


def test_post_chat_runs_the_agent_per_sender_and_channel(chat: Chat) -> None:
    status, frame = chat.post("/v1/chat", {"channel": "general", "text": "hello",
                                           "message_id": "m1"}, token=chat.alice)
    assert status == 200, frame
    assert frame["type"] == "reply"
    assert frame["text"].startswith("echo: hello")
    assert frame["message_id"] == "m1"
    assert frame["channel"] == "general"
    first_session = frame["session_id"]
    _, again = chat.post("/v1/chat", {"channel": "general", "text": "again"}, token=chat.alice)
    assert again["session_id"] == first_session
    # The same session saw both messages, in order.
    model = chat.models[("alice", "general")]
    users = [m["content"] for m in model.calls[-1].messages if m["role"] == "user"]
    assert users[0].startswith("hello")
    assert users[-1].startswith("again")
    _, other_channel = chat.post("/v1/chat", {"channel": "random", "text": "hi"},
                                 token=chat.alice)
    _, other_sender = chat.post("/v1/chat", {"channel": "general", "text": "hi"},
                                token=chat.bob)
    assert len({first_session, other_channel["session_id"], other_sender["session_id"]}) == 3
    assert set(chat.models) == {("alice", "general"), ("alice", "random"), ("bob", "general")}
    received = chat.named("message_received")
    assert received[0]["sender_id"] == "alice"
    assert received[0]["message_id"] == "m1"
    assert received[0]["platform"] == "gateway"
    assert received[0]["session_id"] == first_session
    assert received[-1]["sender_id"] == "bob"  # bound to the token's name by default
    sent = chat.named("message_sent")
    assert sent[0] == {**sent[0], "recipient_id": "alice", "channel": "general",
                       "content": frame["text"]}


@pytest.mark.parametrize("header", [None, "Bearer ", "Bearer ilk_wrong", "Basic abc"])
def test_chat_refuses_missing_and_wrong_tokens(chat: Chat, header: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    status, body = chat.post("/v1/chat", {"channel": "c", "text": "hi"}, token=None,
                             headers=headers)
    assert status == 401
    assert "token" in body["error"]
    assert chat.named("message_received") == []


def test_chat_refuses_an_events_token(chat: Chat) -> None:
    status, body = chat.post("/v1/chat", {"channel": "c", "text": "hi"},
                             token=chat.events_token)
    assert status == 403
    assert "chat" in body["error"]
    assert chat.named("message_received") == []


@pytest.mark.parametrize("field_name", ["sender_id", "sender"])
def test_a_spoofed_sender_is_refused(chat: Chat, field_name: str) -> None:
    status, body = chat.post("/v1/chat", {"channel": "c", "text": "hi", field_name: "alice"},
                             token=chat.bob)
    assert status == 422
    assert body["field"] == field_name
    assert "token" in body["error"]
    assert chat.named("message_received") == []
    assert chat.gateway.sessions == {}
    # Over the WebSocket too: an error frame, no event, no session.
    with chat.ws(chat.bob) as ws:
        ws.send(json.dumps({"channel": "c", "text": "hi", "sender_id": "alice"}))
        frame = json.loads(ws.recv(timeout=10))
    assert frame["type"] == "error"
    assert frame["field"] == "sender_id"
    assert chat.named("message_received") == []


def test_message_received_skip_sends_no_reply(chat: Chat) -> None:
    chat.engine.on("message_received", lambda e: skip("muted") if "spam" in e.text else None)
    status, frame = chat.post("/v1/chat", {"channel": "c", "text": "buy spam"},
                              token=chat.alice)
    assert status == 200
    assert frame["type"] == "skipped"
    assert "text" not in frame
    assert chat.models[("alice", "c")].calls == []
    assert chat.named("before_message_send") == []
    assert chat.named("message_sent") == []


def test_message_received_modify_rewrites_what_the_agent_sees(chat: Chat) -> None:
    chat.engine.on("message_received",
                   lambda e: modify(text=e.text.replace("secret-word", "[removed]")),
                   modifies=True)
    _, frame = chat.post("/v1/chat", {"channel": "c", "text": "say secret-word"},
                         token=chat.alice)
    assert frame["type"] == "reply"
    assert frame["text"].startswith("echo: say [removed]")
    sent = json.dumps([r.messages for r in chat.models[("alice", "c")].calls])
    assert "secret-word" not in sent
    assert "[removed]" in sent


def test_message_received_block_sends_the_reason_back(chat: Chat) -> None:
    chat.engine.on("message_received", lambda e: block("no chatting after midnight"),
                   name="curfew")
    status, frame = chat.post("/v1/chat", {"channel": "c", "text": "hi"}, token=chat.alice)
    assert status == 200
    assert frame["type"] == "blocked"
    assert "no chatting after midnight" in frame["reason"]
    assert "curfew" in frame["reason"]
    assert chat.models[("alice", "c")].calls == []


def test_before_message_send_modifies_and_blocks_the_reply(chat: Chat) -> None:
    chat.engine.on("before_message_send",
                   lambda e: block("leaks a plan") if "plan" in e.content
                   else modify(content=e.content.upper()), name="outbox", modifies=True)
    _, frame = chat.post("/v1/chat", {"channel": "c", "text": "hello"}, token=chat.alice)
    assert frame["type"] == "reply"
    assert frame["text"].startswith("ECHO: HELLO")
    assert chat.named("message_sent")[-1]["content"] == frame["text"]
    _, withheld = chat.post("/v1/chat", {"channel": "c", "text": "the plan"}, token=chat.alice)
    assert withheld["type"] == "withheld"
    assert "leaks a plan" in withheld["reason"]
    assert "text" not in withheld
    assert len(chat.named("message_sent")) == 1
    send = chat.named("before_message_send")
    assert send[0]["recipient_id"] == "alice"
    assert send[0]["channel"] == "c"


def _frames_until_end(ws: ClientConnection) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = json.loads(ws.recv(timeout=15))
        frames.append(frame)
        if frame["type"] in ("reply", "skipped", "blocked", "withheld", "stopped", "error"):
            return frames


def test_websocket_streams_only_when_no_hook_must_see_the_text(chat: Chat) -> None:
    chat.engine.replace_hooks([h for h in chat.engine.hooks if h.name != "send-recorder"])
    with chat.ws(chat.alice) as ws:
        ws.send(json.dumps({"channel": "c", "text": "hello"}))
        frames = _frames_until_end(ws)
    deltas = [f["text"] for f in frames if f["type"] == "delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == frames[-1]["text"]
    chat.engine.on("before_message_send", lambda e: modify(content=e.content.replace(
        "echo", "ECHO")), modifies=True)
    with chat.ws(chat.alice) as ws:
        ws.send(json.dumps({"channel": "c", "text": "again"}))
        frames = _frames_until_end(ws)
    # The hook rewrote the reply: no unrewritten text may have reached the sender first.
    assert [f["type"] for f in frames] == ["reply"]
    assert frames[0]["text"].startswith("ECHO: again")


def test_websocket_refuses_a_foreign_origin_and_bad_tokens(chat: Chat) -> None:
    with pytest.raises(InvalidStatus) as refused:
        chat.ws(chat.alice, origin="https://evil.example")  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403
    for token in (None, "ilk_wrong", chat.events_token):
        with pytest.raises(InvalidStatus) as no_token:
            chat.ws(token)
        assert no_token.value.response.status_code == 403
    assert chat.named("message_received") == []


def test_a_browser_can_send_its_token_as_a_websocket_subprotocol(chat: Chat) -> None:
    # Browsers cannot set Authorization on a WebSocket; they can offer subprotocols.
    with chat.ws(None, subprotocols=["interlock.bearer", chat.alice]) as ws:
        assert ws.subprotocol == "interlock.bearer"
        ws.send(json.dumps({"channel": "web", "text": "hello"}))
        frames = _frames_until_end(ws)
    assert frames[-1]["type"] == "reply"
    assert [m["sender_id"] for m in chat.named("message_received")] == ["alice"]
    for offered in (["interlock.bearer", "ilk_wrong"], ["interlock.bearer"],
                    ["interlock.bearer", chat.events_token]):
        with pytest.raises(InvalidStatus) as refused:
            chat.ws(None, subprotocols=offered)
        assert refused.value.response.status_code == 403
    # Only a WebSocket reads it: a POST must still use the header.
    status, body = chat.post("/v1/chat", {"channel": "c", "text": "hi"}, token=None,
                             headers={"Sec-WebSocket-Protocol": f"interlock.bearer, {chat.alice}"})
    assert status == 401
    assert "interlock.bearer" in body["error"]


def test_ask_is_answered_over_the_websocket(chat: Chat) -> None:
    with chat.ws(chat.alice) as ws:
        ws.send(json.dumps({"channel": "ops", "text": "run echo allowed-$((40+2))"}))
        question = json.loads(ws.recv(timeout=15))
        while question["type"] == "delta":
            question = json.loads(ws.recv(timeout=15))
        assert question["type"] == "question"
        assert question["tool_name"] == "terminal"
        assert question["args"] == {"command": "echo allowed-$((40+2))"}
        ws.send(json.dumps({"type": "answer", "id": question["id"], "allow": True}))
        frames = _frames_until_end(ws)
    assert {"type": "answered", "id": question["id"]} in frames
    assert "allowed-42" in frames[-1]["text"]


def test_ask_is_answered_by_a_follow_up_post_from_the_same_sender_only(chat: Chat) -> None:
    status, question = chat.post("/v1/chat", {"channel": "ops", "text": "run echo via-$((1+1))"},
                                 token=chat.alice)
    assert status == 200
    assert question["type"] == "question"
    # Another sender cannot answer alice's question.
    status, body = chat.post("/v1/chat/answer", {"id": question["id"], "allow": True},
                             token=chat.bob)
    assert status == 404
    assert body["field"] == "id"
    status, frame = chat.post("/v1/chat/answer", {"id": question["id"], "allow": False},
                              token=chat.alice)
    assert status == 200
    assert frame["type"] == "reply"
    assert "denied by the user" in frame["text"]
    assert "via-2" not in frame["text"]
    assert chat.named("permission_denied")[-1]["reason"] == "denied by the user"
    status, _ = chat.post("/v1/chat/answer", {"id": question["id"], "allow": True},
                          token=chat.alice)
    assert status == 404  # answered already


def test_an_unanswered_ask_is_denied_after_the_timeout() -> None:
    made, running = _start(ask_timeout=0.3)
    with running:
        with made.ws(made.alice) as ws:
            ws.send(json.dumps({"channel": "ops", "text": "run echo never-$((2+2))"}))
            frames = _frames_until_end(ws)
        assert [f["type"] for f in frames if f["type"] != "delta"] == ["question", "reply"]
        assert "nobody answered" in frames[-1]["text"]
        assert "never-4" not in frames[-1]["text"]
        assert "nobody answered" in made.named("permission_denied")[-1]["reason"]
        assert made.gateway.questions == {}
    made.engine.close()


def test_gateway_start_and_stop_fire_once_each_with_the_server() -> None:
    made, running = _start()
    with running:
        assert [e for e, _ in made.seen] == ["gateway_start"]
        made.post("/v1/chat", {"channel": "c", "text": "hi"}, token=made.alice)
    starts, stops = made.named("gateway_start"), made.named("gateway_stop")
    assert len(starts) == 1
    assert len(stops) == 1
    assert starts[0]["address"] == made.gateway.address
    assert starts[0]["address"].startswith("http://127.0.0.1:")
    assert stops[0]["reason"] == "shutdown"
    assert stops[0]["platform"] == "gateway"
    assert [e for e, _ in made.seen][-1] == "gateway_stop"
    assert made.gateway.sessions == {}
    made.engine.close()


def test_chat_bodies_are_checked(chat: Chat) -> None:
    for body, name in [({"text": "hi"}, "channel"), ({"channel": "c"}, "text"),
                       ({"channel": "c", "text": 3}, "text"),
                       ({"channel": "c", "text": "x", "extra": 1}, "extra"),
                       ({"channel": "", "text": "x"}, "channel")]:
        status, answer = chat.post("/v1/chat", body, token=chat.alice)
        assert (status, answer.get("field")) == (422, name), (body, answer)
    status, answer = chat.post("/v1/chat/answer", {"id": "x", "allow": "yes"},
                               token=chat.alice)
    assert (status, answer["field"]) == (422, "allow")


def test_chat_without_a_gateway_is_404(tmp_path: Path) -> None:
    tokens = TokenStore()
    token = tokens.create("alice", Role.CHAT)
    engine = Engine()
    app = create_app(engine, project_root=tmp_path, tokens=tokens)
    with Serving(app, port=0).running() as serving:
        conn = http.client.HTTPConnection("127.0.0.1", serving.port, timeout=10)
        conn.request("POST", "/v1/chat", body=b'{"channel": "c", "text": "hi"}',
                     headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        assert resp.status == 404
        assert "no chat gateway" in json.loads(resp.read())["error"]
        conn.close()
    engine.close()


def test_metrics_endpoint_serves_prometheus_text() -> None:
    metrics = Metrics()
    made, running = _start(metrics=metrics)
    made.engine.add_sink(MetricsSink(metrics))
    with running:
        made.post("/v1/chat", {"channel": "c", "text": "hi"}, token=made.alice)
        assert made.get("/metrics")[0] == 401  # data: a token, as for status
        status, ctype, text = made.get("/metrics", token=made.events_token)
        assert status == 200
        assert ctype.startswith("text/plain")
        assert "recorder" in text
        assert "# TYPE" in text
    made.engine.close()


def test_chat_token_sender_is_kept_in_the_token_file(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "tokens.json")
    token = tokens.create("phone", Role.CHAT, sender="alice@example")
    again = TokenStore(tmp_path / "tokens.json")
    info = again.verify(token)
    assert info is not None
    assert info.sender_id == "alice@example"
    assert info.role is Role.CHAT
    assert not info.role.allows(Role.EVENTS)
    assert not info.role.allows(Role.ADMIN)
    assert Role.ADMIN.allows(Role.CHAT)
    assert not Role.EVENTS.allows(Role.CHAT)


def test_a_stop_on_message_received_ends_the_exchange(chat: Chat) -> None:
    from interlock import stop

    chat.engine.on("message_received", lambda e: stop("gateway closed for maintenance"))
    _, frame = chat.post("/v1/chat", {"channel": "c", "text": "hi"}, token=chat.alice)
    assert frame["type"] == "stopped"
    assert "maintenance" in frame["reason"]
    assert chat.models[("alice", "c")].calls == []


def test_a_slash_command_is_answered_through_before_message_send(chat: Chat) -> None:
    _, frame = chat.post("/v1/chat", {"channel": "c", "text": "/nosuch"}, token=chat.alice)
    assert frame["type"] == "reply"
    assert frame["status"] == "command"
    assert frame["text"].startswith("unknown command /nosuch")
    assert chat.named("before_message_send")[-1]["content"] == frame["text"]
    assert chat.models[("alice", "c")].calls == []


def test_chat_refuses_a_foreign_project(chat: Chat) -> None:
    status, body = chat.post("/v1/chat", {"channel": "c", "text": "hi"}, token=chat.alice,
                             headers={"X-Interlock-Project": "/somewhere/else"})
    assert status == 403
    assert body["field"] == "X-Interlock-Project"
    assert chat.named("message_received") == []


def test_a_closed_websocket_denies_its_pending_question(chat: Chat) -> None:
    with chat.ws(chat.alice) as ws:
        ws.send(json.dumps({"channel": "ops", "text": "run echo gone-$((3+3))"}))
        frame = json.loads(ws.recv(timeout=15))
        while frame["type"] != "question":
            frame = json.loads(ws.recv(timeout=15))
    # The ask timeout is 10 s here: a denial before it comes from the close.
    denied = chat.wait_for("permission_denied", timeout=5.0)
    assert denied[-1]["reason"] == "denied by the user"
    assert chat.gateway.questions == {}


def test_past_max_sessions_the_least_recently_used_idle_session_is_closed(chat: Chat) -> None:
    chat.gateway.max_sessions = 2
    ids = {}
    for channel in ("a", "b", "a", "c"):
        _, frame = chat.post("/v1/chat", {"channel": channel, "text": "hi"}, token=chat.alice)
        ids.setdefault(channel, frame["session_id"])
    assert set(chat.gateway.sessions) == {("alice", "a"), ("alice", "c")}
    _, again = chat.post("/v1/chat", {"channel": "a", "text": "hi"}, token=chat.alice)
    assert again["session_id"] == ids["a"]
    _, reopened = chat.post("/v1/chat", {"channel": "b", "text": "hi"}, token=chat.alice)
    assert reopened["session_id"] != ids["b"]


async def test_build_gateway_uses_the_model_spec_and_keeps_transcripts(tmp_path: Path) -> None:
    import asyncio

    from interlock.agent.sessions import SessionStore
    from interlock.hosts.server.gateway import Exchange, build_gateway

    script = tmp_path / "chat.yaml"
    script.write_text("- text: scripted hello\n")
    engine = Engine()
    gateway = build_gateway(engine, project_root=tmp_path, model=f"scripted:{script}",
                            state_dir=tmp_path / "state")
    assert gateway.model_name == "scripted:chat"
    await gateway.start()
    exchange = Exchange(asyncio.Queue())
    await gateway.handle("alice", "c", "hi", "m1", exchange)
    frame = exchange.frames.get_nowait()
    assert frame["type"] == "reply"
    assert frame["text"] == "scripted hello"
    await gateway.stop()
    engine.close()
    store = SessionStore(tmp_path / "state" / "chat-sessions.db")
    session = store.load(frame["session_id"])
    assert [m["content"] for m in session.messages if m["role"] == "assistant"] == [
        "scripted hello"]
    names = [e["name"] for e in store.events(frame["session_id"])]
    assert names.index("message_received") < names.index("before_message_send") \
        < names.index("message_sent") < names.index("session_end")
    store.close()


async def test_build_gateway_offers_extension_tools_and_providers(tmp_path: Path) -> None:
    # What `interlock serve --chat-model canned:NAME` passes from the loaded extensions.
    import asyncio

    from interlock.hosts.server.gateway import Exchange, build_gateway
    from interlock.models.tooling import ToolSpec

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    counted: list[str] = []

    def count(args: dict[str, Any], _ctx: Any) -> int:
        counted.append(args["text"])
        return len(args["text"].split())

    tools = [ToolSpec("word_count", "Count words", schema, count, read_only=True, source="ext"),
             ToolSpec("shout", "Shout", schema, lambda a, c: a["text"].upper(), source="ext")]

    def canned(model: str) -> ScriptedModel:
        def report(request: ModelRequest) -> ModelResponse:
            return ModelResponse(text=" | ".join(str(m["content"]) for m in request.messages
                                                 if m["role"] == "tool"))

        return ScriptedModel([
            {"tool_calls": [{"name": "word_count", "args": {"text": "one two three"}},
                            {"name": "shout", "args": {"text": "hey"}}]}, report])

    engine = Engine()
    gateway = build_gateway(engine, project_root=tmp_path, model="canned:any",
                            providers={"canned": canned}, extra_tools=tools)
    await gateway.start()
    exchange = Exchange(asyncio.Queue())
    await gateway.handle("alice", "c", "go", "m1", exchange)
    frame = exchange.frames.get_nowait()
    await gateway.stop()
    engine.close()
    assert frame["type"] == "reply"
    assert counted == ["one two three"]
    counted_text, shouted = frame["text"].split(" | ")
    assert "3" in counted_text
    # An extension tool that can change things is a stranger's only with a rule.
    assert "HEY" not in shouted
    assert "denied" in shouted.lower() or "not allowed" in shouted.lower()


def test_a_socket_peer_still_needs_a_chat_token() -> None:
    import socket as socketlib

    made, _ = _start()
    made.serving.close()  # only its gateway and engine are used here
    sock = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "run" / "chat.sock"
    app = create_app(made.engine, project_root=made.root, tokens=TokenStore(),
                     gateway=made.gateway, socket_path=sock)

    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
            self.sock.settimeout(10)
            self.sock.connect(str(sock))

    with Serving(app, tcp=False, socket_path=sock).running():
        conn = UnixConnection("localhost", timeout=10)
        conn.request("POST", "/v1/chat", body=b'{"channel": "c", "text": "hi"}',
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 401
        assert "token" in json.loads(resp.read())["error"]
        conn.close()
    assert made.named("message_received") == []
    made.engine.close()


def _run_via_gateway(gateway_kwargs: dict[str, Any], text: str = "run expr 40 + 2") -> str:
    root = Path(tempfile.mkdtemp(prefix="il-chat-")).resolve()
    engine = Engine()
    tokens = TokenStore()
    token = tokens.create("carol", Role.CHAT)
    gateway = Gateway(engine, lambda s, c: ScriptedModel([brain] * 5), project_root=root,
                      **gateway_kwargs)
    app = create_app(engine, project_root=root, tokens=tokens, gateway=gateway)
    serving = Serving(app, port=0)
    with serving.running():
        request = urllib.request.Request(
            f"http://127.0.0.1:{serving.port}/v1/chat",
            data=json.dumps({"channel": "c", "text": text}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.loads(response.read())
    engine.close()
    assert reply["type"] == "reply"
    return str(reply["text"])


def test_chat_senders_cannot_run_changing_tools_unless_a_rule_allows_them() -> None:
    # Chat senders are strangers: terminal and file writes are denied by default.
    # Only the reply text counts: ids elsewhere in the body are random hex.
    denied = _run_via_gateway({})
    assert denied.startswith("tool said: ")
    assert "42" not in denied
    allowed = _run_via_gateway({"rules": lambda: [rule("terminal", "expr *", "allow")]})
    assert allowed.startswith("tool said: ")
    assert "42" in allowed
    opened = _run_via_gateway({"unlisted_tools": "allow"})
    assert "42" in opened


def test_a_rule_for_some_calls_leaves_a_strangers_other_calls_denied() -> None:
    # Naming a tool in a rule must not lift the default deny for every other
    # call of that tool; a deny rule can only add refusals.
    allow_expr = {"rules": lambda: [rule("terminal", "expr *", "allow")]}
    assert "42" in _run_via_gateway(allow_expr)
    other = _run_via_gateway(allow_expr, text="run echo PWNED")
    assert other.startswith("tool said: ")
    assert "PWNED" not in other  # a refused call's result does not echo its command
    assert "denied by a permission rule" in other
    deny_rm = {"rules": lambda: [rule("terminal", "rm *", "deny")]}
    assert "denied by a permission rule" in _run_via_gateway(deny_rm, text="run echo PWNED")
    assert "42" not in _run_via_gateway(deny_rm)


def test_one_sender_cannot_pile_up_unbounded_messages_and_sessions(chat: Chat) -> None:
    # Each message waits on a question, so its session stays busy and is never
    # evicted: without a bound, one token's frames made sessions and tasks without end.
    chat.gateway.max_inflight = 2
    with chat.ws(chat.alice) as ws:
        for n in range(5):
            ws.send(json.dumps({"channel": f"c{n}", "text": "run echo hi",
                                "message_id": f"m{n}"}))
        frames = [json.loads(ws.recv(timeout=15)) for _ in range(5)]
        refused = [f for f in frames if f["type"] == "error"]
        assert sorted(f["message_id"] for f in refused) == ["m2", "m3", "m4"]
        assert "still being answered" in refused[0]["error"]
        assert len(chat.gateway.sessions) == 2
        assert len([f for f in frames if f["type"] == "question"]) == 2
    # Bob is not held up by Alice's backlog.
    _, frame = chat.post("/v1/chat", {"channel": "c", "text": "hi"}, token=chat.bob)
    assert frame["type"] == "reply"


def test_a_chat_sender_cannot_switch_the_operators_model(chat: Chat) -> None:
    # The operator chose the model (and pays for it); /model only shows it to a stranger.
    _, frame = chat.post("/v1/chat", {"channel": "c", "text": "/model gpt-priciest"},
                         token=chat.alice)
    assert frame["type"] == "reply"
    assert frame["text"].startswith("model: scripted"), frame["text"]
    _, frame = chat.post("/v1/chat", {"channel": "c", "text": "hi"}, token=chat.alice)
    assert frame["type"] == "reply"
    assert [r.model for r in chat.models[("alice", "c")].calls] == ["scripted"]



def test_a_websocket_client_that_never_reads_is_closed_not_buffered_for(chat: Chat) -> None:
    # Each tiny frame is answered by a ~150-byte error frame; a client that sends and
    # never reads (its socket full) made the server queue them without end.
    import base64
    import os
    import socket
    import struct

    from interlock.hosts.server import chat as chat_routes

    sock = socket.create_connection(("127.0.0.1", chat.serving.port), timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(f"GET /v1/chat/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                 f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {chat.alice}\r\n"
                 "\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert b" 101 " in head.split(b"\r\n", 1)[0]
    mask = b"\x00\x00\x00\x00"
    frame = b"\x81" + struct.pack("B", 0x80 | 2) + mask + b"{}"
    closed = False
    sock.settimeout(0.5)
    try:
        for _ in range(chat_routes.MAX_BACKLOG * 100):  # about 40 MB of answers
            sock.sendall(frame * 10)
    except (TimeoutError, BrokenPipeError, ConnectionResetError):
        closed = True  # the server stopped reading us
    sock.settimeout(30)
    answer = b""
    try:
        while chunk := sock.recv(1 << 20):
            answer = (answer + chunk)[-200:]
    except ConnectionResetError:
        pass
    sock.close()
    assert closed or b"not reading" in answer
    assert b"not reading" in answer  # the close frame's reason, last on the wire
