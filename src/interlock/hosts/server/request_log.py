"""`interlock serve --log-format text|json`: one line per HTTP request on stderr,
so decisions can be watched live from a terminal (docs/serve.md).

A line holds the time, the method, the path without its query string, the
status, the time taken and, for the event and bridge endpoints, the decision
and the hook that made it. Never a header, a body, a token or a reason.
"""

from __future__ import annotations

import json
import sys
import time
from typing import IO, Any

Scope = dict[str, Any]
_DECIDED = ("/v1/events/", "/v1/bridge")
_BODY_CAP = 65536  # enough for an outcome; a larger answer is logged without its decision


class RequestLog:
    """An ASGI middleware that writes one line per finished HTTP request."""

    def __init__(self, app: Any, fmt: str, stream: IO[str] | None = None) -> None:
        if fmt not in ("text", "json"):
            raise ValueError(f"unknown log format {fmt!r}")
        self.app = app
        self.fmt = fmt
        self.stream = stream if stream is not None else sys.stderr

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path: str = scope.get("path", "")
        watch = path.startswith(_DECIDED)
        seen: dict[str, Any] = {"status": 0}
        body = bytearray()

        async def logged_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            elif message["type"] == "http.response.body":
                if watch and len(body) < _BODY_CAP:
                    body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    self.write(scope, seen["status"], started, bytes(body) if watch else b"")
            await send(message)

        await self.app(scope, receive, logged_send)

    def write(self, scope: Scope, status: int, started: float, body: bytes) -> None:
        record: dict[str, Any] = {
            "at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z",
            "method": scope.get("method", ""), "path": scope.get("path", ""),
            "status": status, "ms": round((time.perf_counter() - started) * 1000, 1),
            "client": _client(scope)}
        decided = _decision(body)
        if decided is not None:
            record.update(decided)
        if self.fmt == "json":
            line = json.dumps(record)
        else:
            line = (f"{record['at']} {record['method']} {record['path']} {status} "
                    f"{record['ms']}ms {record['client']}")
            if decided is not None:
                line += f" {decided['decision']}" + (f" by {decided['hook']}"
                                                     if decided.get("hook") else "")
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed stderr never fails a request


def _client(scope: Scope) -> str:
    client = scope.get("client")
    if client and client[0]:
        return f"{client[0]}:{client[1]}"
    return "unix"


def _decision(body: bytes) -> dict[str, Any] | None:
    """The decision and hook of an outcome body, if it is one."""
    if not body:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("decision"), str):
        return None
    hook = data.get("hook")
    return {"decision": data["decision"], "hook": hook if isinstance(hook, str) else None}
