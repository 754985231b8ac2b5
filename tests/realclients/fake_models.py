"""Fake hosted model APIs on 127.0.0.1 for the real agent CLIs.

One HTTP server speaks three wires, by path:

- Anthropic Messages (``POST /v1/messages``, SSE when ``stream``), for Claude Code;
- OpenAI Responses (``POST /v1/responses``, SSE), for Codex CLI;
- Gemini (``POST /v1beta/models/M:generateContent`` and ``:streamGenerateContent``),
  for Gemini CLI.

The model is a :class:`Turn` script, answered from the conversation itself
rather than from a queue: a main-loop request (one that offers the agent's
shell tool) gets a call of that tool with ``command`` until a tool result is
in the conversation; from then on the model answers ``final``.
Side requests (titles, summaries, quota probes: no shell tool offered) get a
short text. So a client that makes extra calls, or retries, still meets the
same model, and the test reads what came back from :attr:`FakeModels.requests`.

Every request is recorded (path, headers, JSON body) before it is answered.
A request for another host (through ``HTTPS_PROXY``, which the tests point
here) is refused and recorded as ``wire == "escape"``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHELL_TOOLS = {
    "anthropic": ("Bash",),
    "openai": ("shell", "exec_command", "local_shell", "shell_command"),
    "gemini": ("run_shell_command",),
}


@dataclass
class Turn:
    """What the fake model does: run ``command`` once, then say ``final``."""

    command: str
    final: str = "All done."
    side: str = "ok"
    """The answer to requests outside the agent's loop (titles, summaries)."""
    before_tool: Callable[[], None] | None = None
    """Called once, just before the model first asks for the tool: the moment
    to break something mid-session (the prompt's hooks have already run)."""
    tool: str | None = None
    """Another tool to call instead of the shell (an MCP tool), as the client names it."""
    args: dict[str, Any] | None = None
    """Its arguments (the shell's are ``{"command": command}``)."""


@dataclass
class Request:
    wire: str
    path: str
    headers: dict[str, str]
    body: Any
    main: bool = False
    """True when the request offered the agent's shell tool (the agent loop)."""
    at: float = field(default_factory=time.monotonic)

    def text(self) -> str:
        """The whole request body as text: what the model was sent."""
        return json.dumps(self.body)


class FakeModels:
    """The server; ``with FakeModels() as fake: fake.turn = Turn("ls")``."""

    def __init__(self) -> None:
        self.turn: Turn | None = None
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def main_requests(self) -> list[Request]:
        return [r for r in self.requests if r.main]

    def record(self, req: Request) -> None:
        with self._lock:
            self._requests.append(req)

    def __enter__(self) -> FakeModels:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# --- what the model says -------------------------------------------------------------

@dataclass
class Say:
    """One model reply: text, or one shell call."""

    text: str = ""
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)


def _decide(turn: Turn | None, shell: str | None, after_tool: bool) -> tuple[Say, bool]:
    """(the reply, whether this was a main-loop request)."""
    if turn is None:
        return Say(text="no turn scripted"), shell is not None
    if shell is None:
        return Say(text=turn.side), False
    if after_tool:
        return Say(text=turn.final), True
    if turn.before_tool is not None:
        step, turn.before_tool = turn.before_tool, None
        step()
    return Say(tool=shell, args=turn.args if turn.args is not None
               else {"command": turn.command}), True


# --- Anthropic Messages ----------------------------------------------------------------

def _anthropic(body: dict[str, Any], turn: Turn | None) -> tuple[Say, bool]:
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    shell = next((n for n in SHELL_TOOLS["anthropic"] if n in names), None)
    if turn is not None and turn.tool is not None:
        shell = turn.tool if turn.tool in names else None
    # Anywhere in the conversation: a hook's context may follow the result.
    after = any(isinstance(b, dict) and b.get("type") == "tool_result"
                for m in body.get("messages") or [] if isinstance(m, dict)
                for b in (m.get("content") if isinstance(m.get("content"), list) else []))
    return _decide(turn, shell, after)


def _anthropic_events(say: Say, model: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {
        "type": "message_start", "message": {
            "id": f"msg_fake{n}", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    if say.tool:
        block = {"type": "tool_use", "id": f"toolu_fake{n}", "name": say.tool, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(say.args)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": say.text}
        stop = "end_turn"
    events += [
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _anthropic_message(say: Say, model: str, n: int) -> dict[str, Any]:
    content: list[dict[str, Any]]
    if say.tool:
        content = [{"type": "tool_use", "id": f"toolu_fake{n}", "name": say.tool,
                    "input": say.args}]
    else:
        content = [{"type": "text", "text": say.text}]
    return {"id": f"msg_fake{n}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": "tool_use" if say.tool else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}


# --- OpenAI Responses ------------------------------------------------------------------

def _openai(body: dict[str, Any], turn: Turn | None) -> tuple[Say, bool]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    names = {t.get("name") or t.get("type") for t in tools}
    shell = next((n for n in SHELL_TOOLS["openai"] if n in names), None)
    after = any(isinstance(i, dict) and str(i.get("type", "")).endswith("_output")
                for i in body.get("input") or [])
    say, main = _decide(turn, shell, after)
    if say.tool:
        say.args = _openai_args(say.tool, say.args["command"])
    return say, main


def _openai_args(tool: str, command: str) -> dict[str, Any]:
    """Codex's shell tools take the command in different shapes."""
    if tool == "exec_command":
        return {"cmd": command}
    if tool in ("shell", "local_shell"):
        return {"command": ["bash", "-lc", command]}
    return {"command": command}


def _openai_events(say: Say, n: int) -> list[dict[str, Any]]:
    rid = f"resp_fake{n}"
    item: dict[str, Any]
    if say.tool:
        item = {"type": "function_call", "id": f"fc_fake{n}", "call_id": f"call_fake{n}",
                "name": say.tool, "arguments": json.dumps(say.args), "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_fake{n}", "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": say.text, "annotations": []}]}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}
    return [
        {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": rid, "status": "completed",
                                                    "output": [item], "usage": usage}},
    ]


# --- Gemini ----------------------------------------------------------------------------

def _gemini(body: dict[str, Any], turn: Turn | None) -> tuple[Say, bool]:
    names = {d.get("name") for t in body.get("tools") or [] if isinstance(t, dict)
             for d in t.get("functionDeclarations") or [] if isinstance(d, dict)}
    shell = next((n for n in SHELL_TOOLS["gemini"] if n in names), None)
    after = any(isinstance(p, dict) and "functionResponse" in p
                for c in body.get("contents") or [] if isinstance(c, dict)
                for p in c.get("parts") or [])
    say, main = _decide(turn, shell, after)
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if not main and isinstance(schema, dict):
        # A structured side request (the model router, "who speaks next").
        say = Say(text=json.dumps(_fill(schema)))
    return say, main


def _fill(schema: dict[str, Any]) -> Any:
    """A small value that a JSON schema accepts (the user speaks next)."""
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        values = schema["enum"]
        return "user" if "user" in values else values[0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: ("user" if k == "next_speaker" else _fill(v)) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return False
    return "simple"


def _gemini_response(say: Say) -> dict[str, Any]:
    part: dict[str, Any] = ({"functionCall": {"name": say.tool, "args": say.args}}
                            if say.tool else {"text": say.text})
    return {"candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": "gemini-fake"}


# --- HTTP ------------------------------------------------------------------------------

def _handler(fake: FakeModels) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_CONNECT(self) -> None:
            # Reached only through HTTPS_PROXY: a request meant for another host.
            fake.record(Request("escape", self.path, dict(self.headers), None))
            self._json(403, {"error": "the tests never reach the internet"})

        def do_GET(self) -> None:
            wire = "escape" if self.path.startswith("http") else "other"
            fake.record(Request(wire, self.path, dict(self.headers), None))
            self._json(404, {"error": {"message": f"fake model server: no GET {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            path = self.path.split("?", 1)[0]
            if self.path.startswith("http"):
                fake.record(Request("escape", self.path, dict(self.headers), body))
                self._json(403, {"error": "the tests never reach the internet"})
                return
            turn = fake.turn
            n = len(fake.requests)
            if path.endswith("/messages/count_tokens"):
                fake.record(Request("anthropic", self.path, dict(self.headers), body))
                self._json(200, {"input_tokens": 10})
            elif path.endswith("/messages"):
                say, main = _anthropic(body, turn)
                fake.record(Request("anthropic", self.path, dict(self.headers), body, main))
                model = str(body.get("model") or "claude-fake")
                if body.get("stream"):
                    self._sse([(e, json.dumps(d)) for e, d in _anthropic_events(say, model, n)])
                else:
                    self._json(200, _anthropic_message(say, model, n))
            elif path.endswith("/responses"):
                say, main = _openai(body, turn)
                fake.record(Request("openai", self.path, dict(self.headers), body, main))
                self._sse([(e["type"], json.dumps(e)) for e in _openai_events(say, n)])
            elif ":generateContent" in path or ":streamGenerateContent" in path:
                say, main = _gemini(body, turn)
                fake.record(Request("gemini", self.path, dict(self.headers), body, main))
                chunk = _gemini_response(say)
                if ":stream" in path:
                    self._sse([(None, json.dumps(chunk))])
                else:
                    self._json(200, chunk)
            elif ":countTokens" in path:
                fake.record(Request("gemini", self.path, dict(self.headers), body))
                self._json(200, {"totalTokens": 10})
            else:
                fake.record(Request("other", self.path, dict(self.headers), body))
                self._json(404, {"error": {"message": f"fake model server: no POST {path}"}})

        def _json(self, status: int, data: Any) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _sse(self, events: list[tuple[str | None, str]]) -> None:
            chunks = []
            for name, data in events:
                head = f"event: {name}\n" if name else ""
                chunks.append(f"{head}data: {data}\n\n")
            payload = "".join(chunks).encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler
