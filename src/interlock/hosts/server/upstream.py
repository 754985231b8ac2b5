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
bridge as a non-200, and the bridge denies gate events. With a pin, a new
connection's certificate is checked on its TLS handshake, before the token or
the hook input is written to it (docs/fleet.md, The forwarder).
"""

from __future__ import annotations

import json
import os
import ssl
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpcore
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger
from interlock.hosts.bridge._common import BridgeError

log = logger("interlock.server")

TIMEOUT_S = 30.0
MAX_BODY = 1 << 20


def _error(status: int, message: str) -> Response:
    return Response(json.dumps({"error": message}), status_code=status,
                    media_type="application/json")


class Untrusted(Exception):
    """The upstream is not the server this forwarder may talk to: its certificate
    is not the pinned one, or a plain-HTTP loopback port is served by another
    user. Raised on connecting, before a byte of the request (the token, the hook
    input) is written."""


class _PinnedStream(httpcore.AsyncNetworkStream):
    """A TCP stream whose TLS handshake also checks the pin."""

    def __init__(self, inner: httpcore.AsyncNetworkStream, pin: str) -> None:
        self.inner = inner
        self.pin = pin

    # The signatures are httpcore's network interface, timeout included.
    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self.inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self.inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None  # noqa: ASYNC109
                        ) -> httpcore.AsyncNetworkStream:
        from interlock.hosts.bridge.remote import check_pin

        tls = await self.inner.start_tls(ssl_context, server_hostname, timeout)
        ssl_object = tls.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        try:
            if not der:
                raise BridgeError("the server showed no certificate to pin")
            check_pin(der, self.pin)
        except BridgeError as exc:
            await tls.aclose()
            raise Untrusted(str(exc)) from None
        return tls


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """Connects as httpcore does, then checks who answers: the pin on the TLS
    handshake, or with plain HTTP the listener's uid (bridge/remote.py
    ``check_listener``)."""

    def __init__(self, url: str, pin: str | None) -> None:
        self.inner = httpcore.AnyIOBackend()
        self.url = url
        self.pin = pin

    async def connect_tcp(self, host: str, port: int,
                          timeout: float | None = None,  # noqa: ASYNC109
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        from interlock.hosts.bridge._listener import check_listener

        stream = await self.inner.connect_tcp(host, port, timeout, local_address,
                                              socket_options)
        if self.url.startswith("http://"):
            try:
                check_listener(stream.get_extra_info("socket"), self.url)
            except BridgeError as exc:
                await stream.aclose()
                raise Untrusted(str(exc)) from None
        return _PinnedStream(stream, self.pin) if self.pin is not None else stream

    async def connect_unix_socket(self, path: str,
                                  timeout: float | None = None,  # noqa: ASYNC109
                                  socket_options: Iterable[Any] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        return await self.inner.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class Upstream:
    """One kept-alive client to the policy server; with a pin, each new connection
    is checked on its TLS handshake, and with plain HTTP its listener's uid,
    before anything is sent on it."""

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
        limits = httpx.Limits(max_keepalive_connections=16, keepalive_expiry=60)
        transport = httpx.AsyncHTTPTransport(verify=verify, limits=limits)
        if self.pin is not None or remote.scheme == "http":
            # httpx has no hook on connecting; its pool takes a network backend.
            transport._pool = httpcore.AsyncConnectionPool(
                ssl_context=verify if isinstance(verify, ssl.SSLContext) else None,
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
                network_backend=_CheckedBackend(self.base, self.pin))
        self.client = httpx.AsyncClient(transport=transport, timeout=TIMEOUT_S,
                                        trust_env=False)

    async def forward(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return _error(413, "the body is larger than 1 MiB")
        try:
            answer = await self.client.post(
                f"{self.base}{request.url.path}", content=body,
                headers={"Authorization": f"Bearer {self.token}",
                         "Content-Type": "application/json"})
        except Untrusted as exc:
            log.warning("upstream %s: %s", self.base, exc)
            return _error(502, f"the policy server {self.base} is not trusted, so nothing "
                               f"was sent to it: {exc}")
        except httpx.HTTPError as exc:
            log.warning("upstream %s: %s", self.base, exc)
            return _error(502, f"the policy server {self.base} did not answer: "
                               f"{type(exc).__name__}: {exc}")
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
    """Record, for good, that a forwarder to ``base`` serves ``socket_path``: when it
    is gone, a bridge that finds the record denies instead of answering from this
    machine's own policy (docs/fleet.md, The forwarder)."""
    from interlock.hosts.server.paths import forwarder_record

    mark = Path(forwarder_record(str(socket_path)))
    mark.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = mark.with_name(mark.name + ".tmp")
    tmp.write_text(base + "\n")
    os.replace(tmp, mark)
    sys.stderr.write(f"interlock serve: {mark} records this forwarder; bridges aimed at "
                     f"{socket_path} deny while it is not running (delete the file to stop)\n")


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
