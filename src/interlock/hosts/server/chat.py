"""The chat gateway's routes: ``POST /v1/chat``, ``POST /v1/chat/answer`` and
the ``/v1/chat/ws`` WebSocket, on the server's :class:`~interlock.hosts.server.app.Api`.

The gateway itself (sessions, questions, the agent per sender) is
:mod:`interlock.hosts.server.gateway`; docs/serve.md describes the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from interlock.hosts.server.app import JSON, WS_PROTOCOL, Api, _error, _Refused, ws_protocols
from interlock.hosts.server.auth import Role
from interlock.hosts.server.gateway import (
    NO_GATEWAY,
    BadMessage,
    Exchange,
    Gateway,
    next_frame,
    parse_answer,
    parse_message,
)

MAX_BACKLOG = 1000
"""Frames a WebSocket client may leave unread (its socket full) before the server
stops reading it and closes: a client that sends and never reads would otherwise
have every answer queued in memory."""


def chat_routes(api: Api, gateway: Gateway | None) -> list[Any]:
    """The chat routes; without a gateway each answers 404 (after the token check)."""
    routes = ChatRoutes(api, gateway)
    return [Route("/v1/chat", routes.chat, methods=["POST"]),
            Route("/v1/chat/answer", routes.answer, methods=["POST"]),
            WebSocketRoute("/v1/chat/ws", routes.chat_ws)]


class ChatRoutes:
    """The endpoints, bound to one app's Api and gateway."""

    def __init__(self, api: Api, gateway: Gateway | None) -> None:
        self.api = api
        self.gateway = gateway

    def sender_of(self, connection: HTTPConnection) -> str:
        info = self.api.authorize(connection, Role.CHAT)
        self.api.check_project(connection)
        if self.gateway is None:
            raise _Refused(_error(404, NO_GATEWAY))
        if info is None:  # only event endpoints trust a socket peer without a token
            raise _Refused(_error(401, "a chat token is required"))
        return info.sender_id

    async def admitted(self, request: Request) -> tuple[str, dict[str, Any]]:
        sender = self.sender_of(request)
        return sender, await self.api.body(request)

    async def chat(self, request: Request) -> Response:
        sender, data = await self.admitted(request)  # _Refused: the app's handler answers
        try:
            channel, text, message_id = parse_message(data)
        except BadMessage as exc:
            return _error(422, str(exc), field=exc.field)
        assert self.gateway is not None
        exchange = Exchange(asyncio.Queue())
        self.gateway.spawn(sender, channel, text, message_id, exchange)
        self.api.counters["chat.messages"] += 1
        return JSON(await next_frame(exchange))

    async def answer(self, request: Request) -> Response:
        sender, data = await self.admitted(request)  # _Refused: the app's handler answers
        try:
            question_id, allow = parse_answer(data)
        except BadMessage as exc:
            return _error(422, str(exc), field=exc.field)
        assert self.gateway is not None
        question = self.gateway.answer(sender, question_id, allow)
        if question is None:
            return _error(404, f"no pending question {question_id!r} for you (answered, "
                               "expired, or never asked)", field="id")
        if question.exchange.stream:
            # Asked over a WebSocket: the rest of the exchange goes there.
            return JSON({"type": "answered", "id": question_id})
        return JSON(await next_frame(question.exchange))

    async def chat_ws(self, websocket: WebSocket) -> None:
        try:
            sender = self.sender_of(websocket)
        except _Refused as refused:
            # Before accept(), a close is an HTTP 403 to the client.
            await websocket.close(code=1008, reason=json.loads(bytes(refused.response.body))
                                  ["error"][:120])
            return
        assert self.gateway is not None
        # A client that sent its token as a subprotocol must see one chosen.
        await websocket.accept(
            subprotocol=WS_PROTOCOL if WS_PROTOCOL in ws_protocols(websocket) else None)
        frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        mine: set[int] = set()

        writer = asyncio.ensure_future(_write(websocket, frames))
        try:
            while True:
                if frames.qsize() > MAX_BACKLOG:
                    writer.cancel()
                    await websocket.close(code=1008, reason="the client is not reading "
                                                            "its frames")
                    break
                raw = await websocket.receive_text()
                if len(raw) > self.api.max_body:
                    frames.put_nowait({"type": "error", "error":
                                       f"the message is larger than {self.api.max_body} bytes"})
                    continue
                try:
                    data = json.loads(raw)
                    if not isinstance(data, dict):
                        raise BadMessage("a message must be a JSON object")
                    kind = data.get("type", "message")
                    if kind == "message":
                        channel, text, message_id = parse_message(data)
                        exchange = Exchange(frames, stream=True)
                        mine.add(id(exchange))
                        self.gateway.spawn(sender, channel, text, message_id, exchange)
                        self.api.counters["chat.messages"] += 1
                    elif kind == "answer":
                        question_id, allow = parse_answer(data)
                        if self.gateway.answer(sender, question_id, allow) is None:
                            raise BadMessage(f"no pending question {question_id!r} for you",
                                             "id")
                        frames.put_nowait({"type": "answered", "id": question_id})
                    else:
                        raise BadMessage(f"unknown type {kind!r}; send 'message' or 'answer'",
                                         "type")
                except (ValueError, RecursionError) as exc:
                    frames.put_nowait({"type": "error", "error": str(exc),
                                       "field": getattr(exc, "field", None)})
        except WebSocketDisconnect:
            pass
        finally:
            self.gateway.deny_pending(mine)
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writer


async def _write(websocket: WebSocket, frames: asyncio.Queue[dict[str, Any]]) -> None:
    """Send the exchange's frames, in order, until cancelled."""
    while True:
        frame = await frames.get()
        await websocket.send_text(json.dumps(frame))
