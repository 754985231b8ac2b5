"""A local fake OpenAI-compatible chat-completions server (real HTTP on 127.0.0.1).

    with FakeOpenAI() as server:
        server.reply(text="hi", tool_calls=[("terminal", {"command": "ls"})])
        model = OpenAIModel("gpt-test", base_url=server.base_url, api_key="k")

Replies are queued; each request is recorded (headers and JSON body). A reply
is served as one JSON completion, or as Server-Sent Events when the request
asks for ``stream: true`` (text in small deltas, tool-call arguments split
across chunks, as real servers do).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._replies: deque[dict[str, Any]] = deque()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append({"path": self.path, "headers": dict(self.headers),
                                      "body": body})
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                if not fake._replies:
                    self._send(500, {"error": {"message": "fake server: no reply queued"}})
                    return
                reply = fake._replies.popleft()
                if "status" in reply:
                    self._send(reply["status"], reply.get("body", {}), reply.get("headers"))
                elif "raw" in reply:
                    self._raw(200, reply["raw"])
                elif body.get("stream"):
                    self._stream(reply)
                else:
                    self._send(200, _completion(reply))

            def _send(self, status: int, data: Any, headers: dict[str, str] | None = None
                      ) -> None:
                self._raw(status, json.dumps(data).encode(), headers)

            def _raw(self, status: int, payload: bytes,
                     headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, reply: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(reply):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reply(self, text: str = "", tool_calls: list[tuple[str, Any]] | None = None,
              finish_reason: str | None = None) -> None:
        """Queue a reply; tool call args may be a dict or a raw (possibly broken) string."""
        self._replies.append({"text": text, "tool_calls": tool_calls or [],
                              "finish_reason": finish_reason})

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._replies.append({"status": status, "body": {"error": {"message": message}},
                              "headers": headers})

    def raw(self, payload: bytes) -> None:
        self._replies.append({"raw": payload})

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _calls(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": f"call_{i}", "type": "function",
             "function": {"name": name,
                          "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(reply["tool_calls"])]


def _completion(reply: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply["text"] or None}
    if reply["tool_calls"]:
        message["tool_calls"] = _calls(reply)
    finish = reply["finish_reason"] or ("tool_calls" if reply["tool_calls"] else "stop")
    return {"id": "cmpl-1", "object": "chat.completion", "model": "fake",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def _chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "cmpl-1", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant"})]
    text = reply["text"]
    out += [chunk({"content": text[i:i + 4]}) for i in range(0, len(text), 4)]
    for i, call in enumerate(_calls(reply)):
        args = call["function"]["arguments"]
        half = len(args) // 2
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"],
                                                       "arguments": args[:half]}}]}))
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]}))
    finish = reply["finish_reason"] or ("tool_calls" if reply["tool_calls"] else "stop")
    out.append(chunk({}, finish))
    return out
