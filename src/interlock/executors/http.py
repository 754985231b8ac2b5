"""The HTTP executor: POST the wire contract v1 to a URL, decode the answer.

Every request goes through :class:`~interlock.executors.net.pinned.PinnedClient`, so each
connection is made to an address that was checked (docs/http-hooks.md, What
an HTTP hook may reach), with
no proxies and no redirects. The whole exchange (DNS, connect, TLS, request,
reading the answer) shares one deadline, and the answer is read up to a cap.

Failures are :class:`~interlock.HookFailure` subclasses whose ``retryable`` and
``retry_after`` tell the reliability wrappers what to do:

    transport error, timeout, 408, 425, 429, 5xx   retryable (Retry-After kept)
    other 4xx, redirect, refused target, bad body,
    a certificate that does not verify             terminal
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import re
import ssl
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx
import msgspec

from interlock.engine.decisions import Decision, decode_wire
from interlock.engine.errors import (
    ConfigError,
    ContractError,
    FailureMode,
    HookCrash,
    HookFailure,
    HookTimeout,
)
from interlock.engine.hooks import Executor, Invocation
from interlock.engine.logs import logger
from interlock.engine.redact import redact
from interlock.engine.strictjson import loads as strict_loads
from interlock.executors.net import signing
from interlock.executors.net.pinned import PinnedClient
from interlock.executors.net.ssrf import Allowlist, Resolver, SSRFError, check_url, parse_url

log = logger("interlock.executors.net")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Headers the executor sets itself; config may not replace them.
_RESERVED = frozenset({
    "host", "content-length", "content-type", "transfer-encoding", "connection",
    "accept-encoding", "idempotency-key", signing.TIMESTAMP_HEADER.lower(),
    signing.SIGNATURE_HEADER.lower(),
})
_RETRYABLE_STATUS = frozenset({408, 425, 429})
_SNIPPET = 512


class HttpStatusError(HookCrash):
    """The hook answered with a status that is not 2xx."""

    def __init__(self, message: str, *, status: int, retryable: bool,
                 retry_after: float | None = None) -> None:
        super().__init__(message, retryable=retryable, retry_after=retry_after)
        self.status = status


class HttpExecutor(Executor):
    """Runs one HTTP hook: an :class:`interlock.engine.hooks.Executor`.

    ``headers_from_env`` maps a header name to the NAME of an environment
    variable holding its value, so no secret is ever written in config.
    ``hmac_secret_env`` names the variable holding the signing secret.
    ``allow_private`` lists hosts and networks that may be private (each use
    is logged). ``resolver`` replaces the system resolver (tests). ``client``
    shares a :class:`PinnedClient` (and its pool) between hooks; its allowlist
    and resolver then apply.
    """

    def __init__(self, url: str, *, hook_name: str, timeout: float = 10.0,
                 headers_from_env: Mapping[str, str] | None = None,
                 hmac_secret_env: str | None = None,
                 allow_private: Sequence[str] = (),
                 max_body: int = 1_048_576,
                 resolver: Resolver | None = None,
                 client: httpx.AsyncClient | None = None) -> None:
        self.hook_name = hook_name
        if not timeout > 0:
            raise ConfigError(f"timeout must be positive, got {timeout!r}", field="timeout",
                              fix="give the whole exchange's deadline in seconds")
        if max_body < 1:
            raise ConfigError(f"max_body must be positive, got {max_body!r}",
                              field="max_body", fix="give a size in bytes, e.g. 1048576")
        self.timeout = float(timeout)
        self.max_body = max_body
        self._env_headers = _check_env_headers(headers_from_env or {})
        if hmac_secret_env is not None and not _ENV_NAME.fullmatch(hmac_secret_env):
            raise ConfigError(f"{hmac_secret_env!r} is not an environment variable name",
                              field="hmac_secret_env",
                              fix="name the variable that holds the secret, not the secret")
        self._secret_env = hmac_secret_env
        if client is not None:
            if not isinstance(client, PinnedClient):
                raise ConfigError(
                    "client must be an interlock.executors.net.PinnedClient, so that every "
                    "connection is checked and pinned", field="client",
                    fix="build it with PinnedClient(allow_private=..., resolver=...)")
            if allow_private or resolver is not None:
                raise ConfigError("allow_private and resolver belong to the shared client",
                                  field="allow_private",
                                  fix="pass them to PinnedClient(...) instead")
            self.allowlist = client.allowlist
            self._resolver = client.resolver
        else:
            self.allowlist = Allowlist.parse(allow_private)
            self._resolver = resolver
        try:
            self.target = parse_url(url, allowlist=self.allowlist)
        except SSRFError as exc:
            raise ConfigError(str(exc), field="url",
                              fix="point the hook at a public http(s) URL, or allowlist "
                                  "a private target in allow_private") from exc
        self.url = url
        self._shown = redact(url)
        if self.allowlist:
            log.warning("http hook %s may reach private targets through its allowlist: %s",
                        hook_name, ", ".join(self.allowlist.entries))
        self._shared = client
        # Pooled connections belong to the event loop that opened them, so an
        # executor used from several loops (the async API and the sync
        # facade's loop thread) keeps one pool per loop.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._clients = weakref.WeakKeyDictionary()

    def _new_client(self) -> PinnedClient:
        return PinnedClient(allow_private=self.allowlist, resolver=self._resolver,
                            timeout=self.timeout)

    def __repr__(self) -> str:
        return f"HttpExecutor({self._shown!r}, hook_name={self.hook_name!r})"

    async def aclose(self) -> None:
        """Close the connection pools (a shared client is left to its owner).

        Pools opened on another running loop (such as the sync facade's loop
        thread) are closed on that loop; a stopped loop's went with it.
        """
        current = asyncio.get_running_loop()
        for loop, client in list(self._clients.items()):
            del self._clients[loop]
            if loop is current:
                await client.aclose()
            elif loop.is_running():
                await asyncio.wrap_future(
                    asyncio.run_coroutine_threadsafe(client.aclose(), loop))

    def _client(self) -> httpx.AsyncClient:
        if self._shared is not None:
            return self._shared
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._new_client()
        return client

    async def __call__(self, invocation: Invocation) -> Decision | None:
        client = self._client()
        body = msgspec.json.encode(invocation.wire())
        headers = self._headers(invocation, body)
        try:
            async with asyncio.timeout(self.timeout):
                async with client.stream("POST", self.url, content=body,
                                         headers=headers) as resp:
                    return await self._answer(resp)
        except (TimeoutError, httpx.TimeoutException):
            raise HookTimeout(f"{self._me()}: no complete answer within "
                              f"{self.timeout:g}s") from None
        except SSRFError as exc:
            raise SSRFError(f"{self._me()}: {exc}", reason=exc.reason, host=exc.host,
                            address=exc.address) from None
        except httpx.TransportError as exc:
            # A certificate that does not verify will not verify on a retry.
            raise HookCrash(f"{self._me()}: {type(exc).__name__}: {exc}",
                            retryable=not _caused_by(exc, ssl.SSLCertVerificationError)
                            ) from None
        except httpx.HTTPError as exc:
            raise HookCrash(f"{self._me()}: {type(exc).__name__}: {exc}",
                            retryable=False) from None

    def _me(self) -> str:
        return f"http hook {self.hook_name} ({self._shown})"

    def _headers(self, invocation: Invocation, body: bytes) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            # Compressed answers could expand past max_body after the cap was
            # checked, so only identity is accepted (see _read).
            "Accept-Encoding": "identity",
            "User-Agent": "interlock-http-hook/1",
            # The invocation id is stable across retries of one invocation.
            "Idempotency-Key": invocation.invocation_id,
        }
        for header, var in self._env_headers.items():
            headers[header] = self._env(var, f"header {header}")
        if self._secret_env is not None:
            headers.update(signing.sign(self._env(self._secret_env, "hmac_secret_env"), body))
        return headers

    def _env(self, var: str, what: str) -> str:
        value = os.environ.get(var)
        if not value:
            raise HookFailure(f"{self._me()}: {what} needs environment variable {var}, "
                              f"which is not set (fix: export {var} for the process that "
                              "runs Interlock)", mode=FailureMode.INELIGIBLE, retryable=False)
        if any(c in value for c in "\r\n\0"):
            raise HookFailure(f"{self._me()}: environment variable {var} ({what}) holds a "
                              "line break or NUL, which no header may carry",
                              mode=FailureMode.INELIGIBLE, retryable=False)
        return value

    async def _answer(self, resp: httpx.Response) -> Decision | None:
        status = resp.status_code
        if 200 <= status < 300:
            raw = await self._read(resp)
            if not raw.strip() and status not in (204, 205) and not _framed(resp):
                # A close-delimited body that is empty: a server that sent its
                # status and then died looks exactly like this. "No opinion" must
                # be said, not inferred from a dropped connection.
                raise ContractError(
                    f"{self._me()} answered HTTP {status} with no Content-Length and "
                    "nothing before the connection closed, which a server that died "
                    "after its headers also sends (fix: answer 204, or send "
                    "Content-Length: 0 with an empty body)")
            return self._decode(raw)
        if 300 <= status < 400:
            await self._refuse_redirect(resp)
        retryable = status in _RETRYABLE_STATUS or status >= 500
        snippet = await self._snippet(resp)
        raise HttpStatusError(
            f"{self._me()} answered HTTP {status}{': ' + snippet if snippet else ''}",
            status=status, retryable=retryable,
            retry_after=retry_after(resp.headers.get("retry-after")) if retryable else None)

    async def _read(self, resp: httpx.Response) -> bytes:
        encoding = resp.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            raise ContractError(f"{self._me()} answered with Content-Encoding {encoding}; "
                                "send the answer uncompressed")
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            raise ContractError(self._too_big(f"declares {declared} bytes"))
        chunks: list[bytes] = []
        total = 0
        async for chunk in resp.aiter_raw():
            total += len(chunk)
            if total > self.max_body:
                raise ContractError(self._too_big("went past it"))
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_big(self, how: str) -> str:
        return (f"{self._me()}: the answer {how}, over max_body ({self.max_body} bytes); "
                "it is refused, never truncated")

    def _decode(self, raw: bytes) -> Decision | None:
        if not raw.strip():
            return None
        try:
            answer: Any = strict_loads(raw)
        except ValueError as exc:  # AmbiguousJSON included: a repeated key is no answer
            raise ContractError(f"{self._me()} answered invalid JSON ({exc}); answer {{}} "
                                'or {"decision": ..., "reason": ...}') from None
        try:
            return decode_wire(answer)
        except ValueError as exc:
            raise ContractError(f"{self._me()} answered {exc}") from None

    async def _refuse_redirect(self, resp: httpx.Response) -> None:
        location = resp.headers.get("location", "")
        where = str(resp.url.join(location)) if location else "(no Location)"
        if location:
            try:
                await check_url(where, allow_private=self.allowlist, resolver=self._resolver)
            except SSRFError as exc:
                raise SSRFError(f"redirect to {redact(where)} refused: {exc}",
                                reason=exc.reason, host=exc.host, address=exc.address) from None
            except HookFailure:
                pass  # unresolvable; refused below all the same
        raise HttpStatusError(f"{self._me()} answered a redirect (HTTP {resp.status_code}) "
                              f"to {redact(where)}; redirects are not followed, so point the "
                              "hook at the final URL", status=resp.status_code,
                              retryable=False)

    async def _snippet(self, resp: httpx.Response) -> str:
        data = b""
        async for chunk in resp.aiter_raw():
            data += chunk
            if len(data) >= _SNIPPET:
                break
        text = " ".join(data[:_SNIPPET].decode("utf-8", "replace").split())
        return redact(text[:200])


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _framed(resp: httpx.Response) -> bool:
    """Does the response say where its body ends (a length, or chunks)? Else
    its end is wherever the connection closed."""
    return ("content-length" in resp.headers
            or "chunked" in resp.headers.get("transfer-encoding", "").lower())


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):  # a short chain; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _check_env_headers(mapping: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for header, var in mapping.items():
        if not _HEADER_NAME.fullmatch(header):
            raise ConfigError(f"{header!r} is not a valid header name",
                              field=f"headers_from_env.{header}",
                              fix="use a plain header name such as Authorization")
        if header.lower() in _RESERVED:
            raise ConfigError(f"header {header} is set by Interlock itself",
                              field=f"headers_from_env.{header}", fix="remove it")
        if not isinstance(var, str) or not _ENV_NAME.fullmatch(var):
            raise ConfigError(f"the value of header {header} must be the NAME of an "
                              "environment variable, not the value itself",
                              field=f"headers_from_env.{header}",
                              fix=f'export the secret and write {header} = "HOOK_TOKEN"')
        out[header] = var
    return out


if TYPE_CHECKING:
    def _is_an_executor(x: HttpExecutor) -> Executor:  # mypy checks the protocol here
        return x
