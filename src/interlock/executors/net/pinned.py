"""An httpx client whose every connection goes to an address that was checked.

How the pin works: httpcore opens each new connection through a *network
backend*, calling ``connect_tcp(host, port)`` with the URL's host.
:class:`PinnedBackend` resolves that host itself, checks every address
(:mod:`interlock.executors.net.ssrf`), and hands the inner backend the checked IP, never
the name. Nothing resolves the name a second time, so a DNS answer that
changes between the check and the connect (rebinding) has nothing to change.
Everything above the socket still sees the original URL: the Host header, and
the TLS SNI name and certificate check, which httpcore takes from the
request's origin rather than from the socket.

Alternatives considered: rewriting the URL to the IP and passing
``extensions={"sni_hostname": ...}`` works too, but must resolve on every
request (a pooled connection needs no DNS here) and keys the pool by IP.

No proxies: the transport has no proxy support at all, and
:class:`PinnedClient` sets ``trust_env=False`` so httpx never mounts a proxy
transport from ``HTTP_PROXY``/``ALL_PROXY`` in front of it.
"""

from __future__ import annotations

import ssl
import typing
from collections.abc import AsyncIterator, Iterable, Sequence

import httpcore
import httpx

from interlock.executors.net.ssrf import Allowlist, Resolver, resolve_checked


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to addresses that passed the checks, and only by address."""

    def __init__(self, allowlist: Allowlist, resolver: Resolver | None = None,
                 inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.allowlist = allowlist
        self.resolver = resolver
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await resolve_checked(host, port, allowlist=self.allowlist,
                                          resolver=self.resolver)
        error: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(address, port, timeout=timeout,
                                                    local_address=local_address,
                                                    socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc  # every address was checked, so trying the next is safe
        assert error is not None
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable from HTTP hooks")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def _to_httpx(exc: httpcore.TimeoutException | httpcore.NetworkError
              | httpcore.ProtocolError | httpcore.UnsupportedProtocol,
              request: httpx.Request) -> httpx.TransportError:
    # httpx names its transport errors exactly as httpcore does.
    cls = getattr(httpx, type(exc).__name__, None)
    if not (isinstance(cls, type) and issubclass(cls, httpx.TransportError)):
        cls = httpx.TimeoutException if isinstance(exc, httpcore.TimeoutException) \
            else httpx.TransportError
    return cls(str(exc) or type(exc).__name__, request=request)


_HTTPCORE_ERRORS = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError,
                    httpcore.UnsupportedProtocol)


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: typing.AsyncIterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._stream:
                yield part
        except _HTTPCORE_ERRORS as exc:
            raise _to_httpx(exc, self._request) from exc

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class PinnedTransport(httpx.AsyncBaseTransport):
    """An HTTP/1.1 connection pool over :class:`PinnedBackend`; no proxies, no unix sockets."""

    def __init__(self, allowlist: Allowlist, resolver: Resolver | None = None, *,
                 ssl_context: ssl.SSLContext | None = None,
                 limits: httpx.Limits = httpx.Limits(max_connections=100,
                                                     max_keepalive_connections=20)) -> None:
        self.backend = PinnedBackend(allowlist, resolver)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=self.backend,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                             port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            resp = await self._pool.handle_async_request(core)
        except _HTTPCORE_ERRORS as exc:
            raise _to_httpx(exc, request) from exc
        assert isinstance(resp.stream, typing.AsyncIterable)
        return httpx.Response(status_code=resp.status, headers=resp.headers,
                              stream=_Body(resp.stream, request), extensions=resp.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()


class PinnedClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` for hook traffic: pinned, checked, no proxies, no redirects.

    Share one between several HTTP hooks to share its connection pool; the
    allowlist and resolver are the client's, so hooks sharing it share them.
    """

    def __init__(self, *, allow_private: Sequence[str] | Allowlist = (),
                 resolver: Resolver | None = None, ssl_context: ssl.SSLContext | None = None,
                 limits: httpx.Limits | None = None, timeout: float = 10.0) -> None:
        self.allowlist = (allow_private if isinstance(allow_private, Allowlist)
                          else Allowlist.parse(allow_private))
        self.resolver = resolver
        transport = (PinnedTransport(self.allowlist, resolver, ssl_context=ssl_context)
                     if limits is None else
                     PinnedTransport(self.allowlist, resolver, ssl_context=ssl_context,
                                     limits=limits))
        super().__init__(transport=transport, trust_env=False, follow_redirects=False,
                         timeout=timeout)

