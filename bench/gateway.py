"""Chat messages per second through the gateway of `interlock serve`, on loopback.

Each message is a whole exchange: message_received, one agent run with a
scripted model (user_input ... before_stop, agent_end: about a dozen events),
before_message_send, the reply, message_sent. Measured with no hooks and with
3 in-process hooks on the gateway events, over POST /v1/chat (one keep-alive
connection) and over the WebSocket. The server runs on a thread of this
process (the client shares the GIL with it, so the figures are a floor).

Run: ``python bench/gateway.py``.
"""

from __future__ import annotations

import http.client
import json
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report
from interlock import Engine, modify
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import Role, TokenStore
from interlock.hosts.server.gateway import Gateway
from interlock.hosts.server.listen import Serving
from interlock.models.tooling import ModelRequest, ModelResponse
from interlock.testing import ScriptedModel

SECONDS = 2.0


def reply(request: ModelRequest) -> ModelResponse:
    return ModelResponse(text="ok, noted")


def factory(sender: str, channel: str) -> ScriptedModel:
    return ScriptedModel([reply] * 1_000_000)


def measure(hooks: bool) -> dict[str, float]:
    engine = Engine()
    if hooks:
        engine.on("message_received", lambda e: None, name="audit")
        engine.on("message_received", lambda e: modify(text=e.text.strip()), name="trim",
                  modifies=True)
        engine.on("before_message_send", lambda e: None, name="outbox")
    tokens = TokenStore()
    token = tokens.create("bench", Role.CHAT)
    root = Path(tempfile.mkdtemp(prefix="il-bench-"))
    gateway = Gateway(engine, factory, project_root=root)
    app = create_app(engine, project_root=root, tokens=tokens, gateway=gateway)
    figures: dict[str, float] = {}
    with Serving(app, port=0).running() as serving:
        conn = http.client.HTTPConnection("127.0.0.1", serving.port, timeout=10)
        conn.connect()
        assert conn.sock is not None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        body = json.dumps({"channel": "bench", "text": " hello "}).encode()

        def post() -> Any:
            conn.request("POST", "/v1/chat", body=body, headers=headers)
            return json.loads(conn.getresponse().read())

        assert post()["type"] == "reply"
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < SECONDS:
            post()
            n += 1
        figures["post_per_s"] = round(n / (time.perf_counter() - t0), 1)
        conn.close()

        from websockets.sync.client import connect

        with connect(f"ws://127.0.0.1:{serving.port}/v1/chat/ws",
                     additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            message = json.dumps({"channel": "bench-ws", "text": " hello "})
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < SECONDS:
                ws.send(message)
                while json.loads(ws.recv(timeout=10))["type"] == "delta":
                    pass
                n += 1
            figures["ws_per_s"] = round(n / (time.perf_counter() - t0), 1)
    engine.close()
    return figures


def main() -> None:
    out: dict[str, float] = {}
    for hooks in (False, True):
        label = "3_hooks" if hooks else "no_hooks"
        figures = measure(hooks)
        for key, value in figures.items():
            print(f"{label:9} {key:11} {value:8.1f} messages/s", flush=True)
            out[f"{label}.{key}"] = value
    report(out)


if __name__ == "__main__":
    main()
