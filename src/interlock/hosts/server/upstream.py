"""`interlock serve --upstream URL`: a local forwarder that holds the connection.

A bridge is a new process per hook call, so it cannot keep a connection
alive: each remote call pays a TCP and a TLS handshake (docs/fleet.md,
Sizing). This server listens on the project's Unix socket, where the
bridges already look (peer-uid checked, as every `serve`), loads no hooks,
and forwards ``POST /v1/bridge/{agent}`` and ``POST /v1/events/{event}`` to
the policy server over a pool of kept-alive HTTPS connections, with this
machine's token (read once from its 0600 file, as the bridge reads it).

It decides nothing itself: whatever the upstream does not answer with a
200 (unreachable, TLS or pin failure, a refused token, a 5xx) reaches the
bridge as a non-200, and the bridge denies gate events.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import ssl
import sys
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from interlock.engine.errors import ConfigError
from interlock.hosts.bridge._common import BridgeError

log = logging.getLogger("interlock.server")

TIMEOUT_S = 30.0
MAX_BODY = 1 << 20


def _error(status: int, message: str) -> Response:
    return Response(json.dumps({"error": message}), status_code=status,
                    media_type="application/json")


class Upstream:
    """One kept-alive client to the policy server, checking the pin on every answer."""

    def __init__(self, url: str, token: str, *, pin: str | None, ca: str | None) -> None:
        from interlock.hosts.bridge.remote import Remote

        remote = Remote(url, "-", pin=pin, ca=ca)  # validates the URL and the pin's form
        self.base = url.rstrip("/")
        self.pin = remote.pin
        self.token = token
        verify: ssl.SSLContext | bool = False
        if remote.scheme == "https":
            try:
                verify = ssl.create_default_context(cafile=ca)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(f"cannot load the CA file: {exc}", file=str(ca),
                                  field="--ca") from None
        self.verify = verify
        self.client = self._client()

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(verify=self.verify, timeout=TIMEOUT_S, trust_env=False,
                                 limits=httpx.Limits(max_keepalive_connections=16,
                                                     keepalive_expiry=60))

    def _pinned(self, response: httpx.Response) -> bool:
        if self.pin is None:
            return True
        from interlock.hosts.bridge.remote import spki_of

        stream = response.extensions.get("network_stream")
        ssl_object = stream.get_extra_info("ssl_object") if stream is not None else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return False
        try:
            candidates = (der, spki_of(der))
        except BridgeError:
            return False
        return any(hmac.compare_digest(hashlib.sha256(c).hexdigest(), self.pin)
                   for c in candidates)

    async def forward(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return _error(413, "the body is larger than 1 MiB")
        try:
            answer = await self.client.post(
                f"{self.base}{request.url.path}", content=body,
                headers={"Authorization": f"Bearer {self.token}",
                         "Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            log.warning("upstream %s: %s", self.base, exc)
            return _error(502, f"the policy server {self.base} did not answer: "
                               f"{type(exc).__name__}: {exc}")
        if not self._pinned(answer):
            await self.client.aclose()  # never reuse a connection to the wrong server
            self.client = self._client()
            return _error(502, f"the policy server {self.base} does not match the pin; "
                               "its answer is refused")
        return Response(answer.content, status_code=answer.status_code,
                        media_type="application/json")


def create_forwarder(upstream: Upstream) -> Starlette:
    async def forward(request: Request) -> Response:
        return await upstream.forward(request)

    async def status(request: Request) -> Response:
        return Response(json.dumps({"upstream": upstream.base, "forwarder": True}),
                        media_type="application/json")

    return Starlette(routes=[
        Route("/v1/bridge/{agent}", forward, methods=["POST"]),
        Route("/v1/events/{event}", forward, methods=["POST"]),
        Route("/v1/status", status, methods=["GET"]),
    ])


def mark_forwarder(socket_path: Path, base: str) -> None:
    """Leave the upstream's URL beside the socket, for good: when this forwarder
    is gone, a bridge that finds the mark denies instead of answering from this
    machine's own policy (docs/fleet.md, The forwarder)."""
    from interlock.hosts.bridge._client import FORWARDER_MARK

    mark = socket_path.with_name(socket_path.name + FORWARDER_MARK)
    mark.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = mark.with_name(mark.name + ".tmp")
    tmp.write_text(base + "\n")
    os.replace(tmp, mark)


def serve_upstream(url: str, *, token_file: Path | None, pin: str | None, ca: Path | None,
                   socket_path: Path) -> None:
    """Run the forwarder on ``socket_path`` until stopped."""
    from interlock.hosts.bridge.remote import read_token
    from interlock.hosts.server.listen import Serving, serve_forever

    if token_file is None:
        raise ConfigError("--upstream needs this machine's token", field="--token-file",
                          fix="give --token-file FILE (mode 0600) or set "
                              "INTERLOCK_SERVER_TOKEN_FILE")
    try:
        token = read_token(str(token_file))
        upstream = Upstream(url, token, pin=pin, ca=str(ca) if ca else None)
    except BridgeError as exc:
        raise ConfigError(str(exc), field="--upstream") from None
    serving = Serving(create_forwarder(upstream), socket_path=socket_path, tcp=False)
    mark_forwarder(socket_path, upstream.base)
    sys.stderr.write(f"interlock serve: forwarding to {upstream.base}\n")
    serve_forever(serving)
