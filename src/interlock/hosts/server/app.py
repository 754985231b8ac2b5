"""The ASGI app of `interlock serve`: ``create_app(engine, ...) -> Starlette``.

The registry and the dead-letter store are other modules' work; the server
only needs the two small protocols below, so it can be tested with in-memory
stand-ins and run with whatever the host wires in.

Who may call what:

- ``POST /v1/events/{event}`` and ``POST /v1/bridge/{agent}``: a bearer
  token (role ``events`` or ``admin``), or a Unix-socket peer with the
  server's uid;
- ``GET /v1/runtime/hooks/dead-letter``, ``POST .../{id}/resolve``,
  ``POST /v1/runtime/reload``: an ``admin`` token, on every transport;
- ``GET /v1/status``, ``GET /v1/hooks``: a token (``events``, ``read`` or ``admin``),
  or a Unix-socket peer with the server's uid; status is built from counters
  in memory and never waits on the store;
- ``GET /v1/openapi.json``: open;
- ``GET /v1/ready``: open; ``200`` while hooks are loaded and the store
  commits, else ``503`` with a short reason and nothing more (a load
  balancer's health check, docs/fleet.md);
- ``GET /metrics`` (Prometheus text): as status;
- ``POST /v1/chat``, ``POST /v1/chat/answer``, ``/v1/chat/ws``: a ``chat`` (or
  ``admin``) token on every transport; the sender is the token's (see
  :mod:`~interlock.hosts.server.gateway`).
- ``/ui/`` and ``/ui/api/...``: the web console; a ``read`` or ``admin`` token
  exchanged for a session cookie (see :mod:`~interlock.hosts.server.console`).

Every request first passes :class:`~interlock.hosts.server.security.Guard`
(Host and Origin), and a request naming a project root other than the
server's own (``X-Interlock-Project``) is refused. An unexpected error is a
JSON ``500``, never a plain-text page.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from interlock.engine.dispatch import Engine
from interlock.engine.errors import ConfigError, UnknownEventError
from interlock.engine.logs import logger
from interlock.hosts.server.auth import Role, TokenInfo, TokenStore, TokensUnavailable
from interlock.hosts.server.looplag import LoopLag
from interlock.hosts.server.security import Guard

if TYPE_CHECKING:
    from interlock.hosts.server.console import Console
    from interlock.hosts.server.gateway import Gateway
    from interlock.models.permission import Dispatch, PermissionRule

MAX_BODY = 1 << 20
LOOPBACK_CLIENTS = frozenset({"127.0.0.1", "::1"})
log = logger("interlock")


class Reloader(Protocol):
    """What ``POST /v1/runtime/reload`` calls (the registry satisfies it).

    ``reload`` returns an object with ``.revision`` (the active revision
    afterwards) and ``.error`` (None, or why the new files were refused; the
    last good revision then stays active).
    """

    def reload(self, *, operator: bool = True) -> Any: ...


class DeadLetters(Protocol):
    """What the dead-letter endpoints call (the dead-letter store satisfies it).

    ``list`` returns JSON-ready records, each with an ``id``, the newest
    ``limit`` of them with ids below ``before`` when given; ``resolve`` returns
    False for an unknown id. Both run on a worker thread, never on the loop.
    """

    def list(self, *, unresolved: bool = False, limit: int = 100,
             before: int | None = None) -> list[dict[str, Any]]: ...

    def resolve(self, record_id: str) -> bool: ...


class AuditGate(Protocol):
    """Strict audit: awaited before an answer leaves; True once every record
    submitted so far has committed, False when it gave up waiting (then the
    answer is a ``503``). :meth:`interlock.store.Store.settled` satisfies it."""

    async def __call__(self) -> bool: ...


class Exposition(Protocol):
    """What ``GET /metrics`` serves (interlock.reliability.metrics.Metrics satisfies it)."""

    def exposition(self) -> str: ...


class Live(Protocol):
    """What keeps the server's hooks live (interlock.hosts.assembly.Host satisfies it): a watcher
    started as a task on the server's loop, stopped when the server stops."""

    def start_live_task(self) -> Any: ...

    async def stop_live_task(self) -> None: ...


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return msgspec.json.encode(content)


def _error(status: int, message: str, **extra: Any) -> JSON:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSON({"error": message, **extra}, status_code=status, headers=headers)


class _JSONErrors:
    """ASGI middleware: an exception no handler caught becomes a JSON ``500``
    (logged through Interlock's redacting logger), not Starlette's plain text."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            log.exception("interlock serve: %s %s failed", scope.get("method"),
                          scope.get("path"))
            if started:
                raise
            response = _error(500, f"internal error: {type(exc).__name__}: {exc}"[:500])
            await response(scope, receive, send)


class _Refused(Exception):
    def __init__(self, response: JSON) -> None:
        self.response = response


WS_PROTOCOL = "interlock.bearer"
"""The WebSocket subprotocol that carries a token where no header can: a
browser's ``new WebSocket(url, ["interlock.bearer", token])``."""


def ws_protocols(connection: HTTPConnection) -> list[str]:
    """The subprotocols a WebSocket client offered, in its order."""
    offered = connection.headers.get("sec-websocket-protocol", "")
    return [p.strip() for p in offered.split(",") if p.strip()]


def bearer_token(connection: HTTPConnection) -> str | None:
    """The caller's token: the Authorization header, else (WebSocket only) the
    subprotocol entry after ``interlock.bearer``."""
    scheme, _, token = connection.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    if connection.scope.get("type") == "websocket":
        offered = ws_protocols(connection)
        if WS_PROTOCOL in offered:
            at = offered.index(WS_PROTOCOL) + 1
            if at < len(offered):
                return offered[at]
    return None


class Api:
    """The handlers, with what they share."""

    def __init__(self, engine: Engine, *, project_root: Path, tokens: TokenStore,
                 reloader: Reloader | None, dead_letters: DeadLetters | None,
                 status: Callable[[], dict[str, Any]] | None, socket_path: Path | None,
                 max_body: int, metrics: Exposition | None = None,
                 audit_gate: AuditGate | None = None,
                 ready: Callable[[], str | None] | None = None,
                 rules: Callable[[], list[PermissionRule]] | None = None,
                 dispatch: Dispatch | None = None) -> None:
        self.engine = engine
        self.rules = rules or list
        """The ``[[permissions]]`` rules in force (what ``/v1/ready`` looks at)."""
        self.dispatch: Dispatch = dispatch or (lambda event: (engine.emit(event), self.rules()))
        """An event's dispatch and the rules of the same revision, taken as one."""
        self.root = project_root.resolve()
        self.tokens = tokens
        self.reloader = reloader
        self.dead_letters = dead_letters
        self.status_fn = status
        self.socket = str(socket_path) if socket_path is not None else None
        self.max_body = max_body
        self.metrics = metrics
        self.audit_gate = audit_gate
        self.ready_fn = ready
        self.started = time.time()
        self.counters: Counter[str] = Counter()
        self.lag = LoopLag()

    # -- who is asking --------------------------------------------------------
    def via_socket(self, request: HTTPConnection) -> bool:
        # Connections on the socket are admitted only after the peer-uid
        # check (listen.PeerCheckedH11); their local address is the socket path.
        server = request.scope.get("server")
        return self.socket is not None and server is not None and (
            server[0] == self.socket and server[1] is None)

    def local(self, request: HTTPConnection) -> bool:
        client = request.client
        return self.via_socket(request) or (client is not None and client.host in LOOPBACK_CLIENTS)

    def authorize(self, request: HTTPConnection, needed: Role) -> TokenInfo | None:
        """The caller's token (None for a trusted socket peer), or _Refused."""
        if needed is Role.EVENTS and self.via_socket(request):
            return None
        token = bearer_token(request)
        if token is None:
            self.counters["refused"] += 1
            raise _Refused(_error(401, "a bearer token is required "
                                       "(Authorization: Bearer <token>, or for a WebSocket "
                                       f"the subprotocols {WS_PROTOCOL!r} and <token>; "
                                       "create one with `interlock serve token create NAME`)"))
        try:
            info = self.tokens.verify(token)
        except TokensUnavailable as exc:  # fail closed: nobody is admitted meanwhile
            self.counters["refused"] += 1
            raise _Refused(_error(503, str(exc))) from None
        if info is None:
            self.counters["refused"] += 1
            raise _Refused(_error(401, "unknown, revoked or expired token"))
        if not info.role.allows(needed):
            self.counters["refused"] += 1
            raise _Refused(_error(403, f"token {info.name!r} has role {info.role.value!r}; "
                                       f"this endpoint needs {needed.value!r}"))
        return info

    def check_project(self, request: HTTPConnection) -> None:
        raw = request.headers.get("x-interlock-project")
        if raw is None:
            return
        value = unquote(raw)
        path = Path(value)
        if not path.is_absolute():
            raise _Refused(_error(400, "X-Interlock-Project must be an absolute path",
                                  field="X-Interlock-Project"))
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            raise _Refused(_error(400, f"X-Interlock-Project cannot be resolved: {exc}",
                                  field="X-Interlock-Project")) from None
        if resolved != self.root:
            self.counters["refused"] += 1
            raise _Refused(_error(403, f"project {str(resolved)!r} is not this server's "
                                       f"project ({str(self.root)!r})",
                                  field="X-Interlock-Project"))

    async def body(self, request: Request) -> dict[str, Any]:
        raw = await self.raw_body(request)
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise _Refused(_error(400, f"the body is not valid JSON: {exc}")) from None
        if not isinstance(data, dict):
            raise _Refused(_error(400, "the body must be a JSON object of the event's fields, "
                                       f"not {type(data).__name__}"))
        return data

    async def raw_body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdecimal() and int(declared) > self.max_body:
            raise _Refused(_error(413, f"the body is larger than {self.max_body} bytes"))
        chunks = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise _Refused(_error(413, f"the body is larger than {self.max_body} bytes"))
            chunks.append(chunk)
        return b"".join(chunks)

    async def evaluate(self, event: Any, *, bridged: bool = False) -> JSON:
        """The outcome of ``event`` with the project's rules applied to a tool call
        (hosts/bridge/_decide); ``bridged``: an agent's hook input, whose reasons are
        redacted as every bridge redacts them."""
        from interlock.hosts.bridge._decide import decided

        try:
            # The hooks and the rules of one revision, whenever a reload lands
            # (a deny moved from a hook into a rule, or back, is in one of them).
            dispatched, rules = self.dispatch(event)
            outcome = await dispatched
        except RecursionError:  # parsed, but too deep for the hooks' copy of the payload
            return _error(400, "the body is nested too deeply to evaluate")
        # Rules bind every agent's tool calls, a /v1/events client's too; only an
        # agent's bridged input has its reasons redacted for the model. A rule's
        # decision is recorded here, before strict audit's wait.
        record = decided(outcome, event, rules, engine=self.engine, redact=bridged)
        if self.audit_gate is not None and not await self.audit_gate():
            # Strict audit: no answer leaves before its audit record has committed.
            self.counters["unaudited"] += 1
            return _error(503, f"the audit store is not committing{_why(self.audit_gate)}; "
                               "this decision was not recorded, so it is not answered "
                               "(strict audit, see `interlock status`)")
        self.counters["evaluations"] += 1
        self.counters[f"decision.{record['decision']}"] += 1
        return JSON(record)

    # -- endpoints --------------------------------------------------------------
    async def events(self, request: Request) -> Response:
        from interlock.events import make

        self.authorize(request, Role.EVENTS)
        self.check_project(request)
        name = request.path_params["event"]
        try:
            from interlock.engine.catalog import spec

            spec(name)
        except UnknownEventError as exc:
            return _error(404, str(exc), field="event")
        payload = await self.body(request)
        try:
            event = make(name, payload, source="request body")
        except ConfigError as exc:
            return _error(422, exc.render(), field=exc.field)
        return await self.evaluate(event)

    async def bridge(self, request: Request) -> Response:
        from interlock.hosts.bridge import HOSTS
        from interlock.hosts.bridge._common import BridgeError
        from interlock.hosts.bridge._events import build_event

        self.authorize(request, Role.EVENTS)
        self.check_project(request)
        agent = request.path_params["agent"]
        if agent not in HOSTS:
            return _error(404, f"unknown agent {agent!r}; bridges exist for "
                               f"{', '.join(HOSTS)}", field="agent")
        if request.headers.get("x-interlock-reply") == "host":
            return await self.host_reply(agent, await self.raw_body(request))
        payload = await self.body(request)
        try:
            event = build_event(agent, payload)
        except ConfigError as exc:
            return _error(422, exc.render(), field=exc.field)
        except BridgeError as exc:
            return _error(422, str(exc))
        return await self.evaluate(event, bridged=True)

    async def host_reply(self, agent: str, payload: bytes) -> Response:
        """The agent's reply, ready for the bridge to forward (interlock.hosts.bridge._reply)."""
        from interlock.hosts.bridge._reply import encode, host_reply

        reply = await host_reply(self.engine, agent, payload, dispatch=self.dispatch,
                                 settled=self.audit_gate)
        self.counters["evaluations"] += 1
        body, headers = encode(reply)
        return Response(body, media_type="application/octet-stream", headers=headers)

    def read_only(self, request: Request) -> None:
        # What status, hooks and metrics show is data: a token (events, read or
        # admin), or a socket peer with our uid, as for events (any local process
        # could reach loopback TCP).
        if self.via_socket(request):
            return
        token = bearer_token(request)
        info = self.tokens.verify(token) if token is not None else None
        if info is not None and info.role is Role.READ:
            return
        self.authorize(request, Role.EVENTS)

    async def status(self, request: Request) -> Response:
        self.read_only(request)
        data: dict[str, Any] = {
            "project_root": str(self.root), "revision": self.engine.revision,
            "hooks": len(self.engine.hooks), "uptime_s": round(time.time() - self.started, 3),
            "counters": dict(self.counters), "breakers": {}}
        if self.status_fn is not None:
            # Counters kept in memory (the store's included): never a query, never a flush.
            data.update(self.status_fn())
        data.update(self.lag.status())
        if self.dead_letters is not None:
            data["dead_letters"] = {"unresolved": data.get("unresolved_dead_letters")}
        return JSON(data)

    async def ready(self, request: Request) -> Response:
        # Open to a balancer that holds no token, so only ok/not-ok and a short reason.
        from interlock.hosts.bridge._decide import unguarded

        reason = ("no hooks are loaded (nor a deny or ask rule)"
                  if unguarded(self.engine.hooks, self.rules()) else None)
        if reason is None and self.ready_fn is not None:
            reason = self.ready_fn()
        if reason:
            return JSON({"ready": False, "reason": reason}, status_code=503)
        return JSON({"ready": True})

    async def metrics_text(self, request: Request) -> Response:
        self.read_only(request)
        if self.metrics is None:
            return _error(404, "this server keeps no metrics")
        return Response(self.metrics.exposition() + self.lag.exposition(),
                        media_type="text/plain; version=0.0.4; charset=utf-8")

    async def hooks(self, request: Request) -> Response:
        self.read_only(request)
        return JSON({"revision": self.engine.revision, "hooks": [
            {"name": h.qualified_name, "events": list(h.events), "kind": h.kind,
             "source": h.source.label, "priority": h.priority,
             "matcher": h.matcher.text if h.matcher is not None else "*",
             "on_error": h.on_error.value if h.on_error is not None else "default",
             "modifies": h.modifies, "background": h.background, "shadow": h.shadow,
             "description": h.description} for h in self.engine.hooks]})

    async def dead_letter_list(self, request: Request) -> Response:
        self.authorize(request, Role.ADMIN)
        if self.dead_letters is None:
            return _error(404, "this server has no dead-letter store")
        raw_unresolved = request.query_params.get("unresolved", "false").lower()
        if raw_unresolved not in ("true", "false", "1", "0"):
            return _error(422, "unresolved must be true or false", field="unresolved")
        raw_limit = request.query_params.get("limit", "100")
        if not raw_limit.isdecimal() or not 1 <= int(raw_limit) <= 1000:
            return _error(422, "limit must be an integer from 1 to 1000", field="limit")
        raw_before = request.query_params.get("before")
        if raw_before is not None and not raw_before.isdecimal():
            return _error(422, "before must be a dead-letter id (an integer)", field="before")
        page: dict[str, Any] = {"unresolved": raw_unresolved in ("true", "1"),
                                "limit": int(raw_limit)}
        if raw_before is not None:
            page["before"] = int(raw_before)
        records = await run_in_threadpool(lambda: self.dead_letters.list(  # type: ignore[union-attr]
            **page))
        ids = [r["id"] for r in records if isinstance(r.get("id"), int)]
        # The next page: ?before=<next_before> (null once there are no more).
        more = len(records) >= int(raw_limit) and ids
        return JSON({"records": records, "next_before": min(ids) if more else None})

    async def dead_letter_resolve(self, request: Request) -> Response:
        self.authorize(request, Role.ADMIN)
        if self.dead_letters is None:
            return _error(404, "this server has no dead-letter store")
        record_id = request.path_params["record_id"]
        if not await run_in_threadpool(self.dead_letters.resolve, record_id):
            return _error(404, f"no dead letter {record_id!r}", field="record_id")
        return JSON({"resolved": record_id})

    async def reload(self, request: Request) -> Response:
        self.authorize(request, Role.ADMIN)
        if self.reloader is None:
            return _error(404, "this server has no registry to reload")
        result = self.reloader.reload(operator=True)
        error = getattr(result, "error", None)
        revision = getattr(result, "revision", self.engine.revision)
        if error:
            return _error(409, f"the new configuration was refused; revision {revision} "
                               f"stays active: {error}", revision=revision)
        return JSON({"ok": True, "revision": revision})


def create_app(
    engine: Engine,
    *,
    project_root: Path,
    tokens: TokenStore,
    reloader: Reloader | None = None,
    dead_letters: DeadLetters | None = None,
    status: Callable[[], dict[str, Any]] | None = None,
    socket_path: Path | None = None,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    max_body: int = MAX_BODY,
    gateway: Gateway | None = None,
    metrics: Exposition | None = None,
    audit_gate: AuditGate | None = None,
    console: Console | None = None,
    live: Live | None = None,
    ready: Callable[[], str | None] | None = None,
    rules: Callable[[], list[PermissionRule]] | None = None,
    dispatch: Dispatch | None = None,
) -> Starlette:
    """The server's ASGI app over ``engine``, for ``project_root`` only.

    ``gateway``: the chat gateway (built over the same engine); started and
    stopped with the app's lifespan. ``metrics``: served at ``GET /metrics``.
    ``audit_gate``: strict audit (an answer leaves only once its audit records
    have committed); None answers at once.
    ``console``: the web console's routes under ``/ui/`` (docs/console.md).
    ``live``: watches the configuration while the app runs (its lifespan).
    ``ready``: None while the server can answer, else a short reason (``GET
    /v1/ready`` answers ``503`` with it); the hooks being loaded is checked here.
    ``rules``: the ``[[permissions]]`` rules in force, which ``/v1/events`` and
    ``/v1/bridge`` apply to tool calls after the hooks, as every bridge does
    (docs/one-policy.md). ``dispatch``: when they are live (Registry.dispatch), an
    event's dispatch with the rules of the revision whose hooks it runs.

    ``socket_path``: the Unix socket this app is also served on (its peers are
    trusted for events after the uid check). ``allowed_hosts`` /
    ``allowed_origins`` extend the loopback-only Host and no-Origin defaults.
    """
    from interlock.hosts.bridge import HOSTS
    from interlock.hosts.server.chat import chat_routes
    from interlock.hosts.server.openapi import build_spec

    api = Api(engine, project_root=project_root, tokens=tokens, reloader=reloader,
              dead_letters=dead_letters, status=status, socket_path=socket_path,
              max_body=max_body, metrics=metrics, audit_gate=audit_gate, ready=ready,
              rules=rules, dispatch=dispatch)
    spec = msgspec.json.encode(build_spec(HOSTS))

    async def openapi(request: Request) -> Response:
        return Response(spec, media_type="application/json")

    async def not_routed(request: Request, exc: Exception) -> Response:
        # Starlette's own 404/405 are plain text; every answer here is JSON.
        code = getattr(exc, "status_code", 404)
        return _error(code, "no such endpoint" if code == 404 else "method not allowed")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        api.lag.start()
        if live is not None:
            live.start_live_task()
        try:
            if gateway is not None:
                await gateway.start()
            try:
                yield
            finally:
                if gateway is not None:
                    await gateway.stop()
        finally:
            if live is not None:
                await live.stop_live_task()
            await api.lag.stop()

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, _Refused)
        return exc.response

    # A handler refuses by raising _Refused (authorize, check_project, body, ...).
    app = Starlette(exception_handlers={404: not_routed, 405: not_routed, _Refused: refused},
                    lifespan=lifespan,
                    routes=[
        Route("/v1/events/{event}", api.events, methods=["POST"]),
        Route("/v1/bridge/{agent}", api.bridge, methods=["POST"]),
        Route("/v1/status", api.status, methods=["GET"]),
        Route("/v1/hooks", api.hooks, methods=["GET"]),
        Route("/v1/runtime/hooks/dead-letter", api.dead_letter_list, methods=["GET"]),
        Route("/v1/runtime/hooks/dead-letter/{record_id}/resolve", api.dead_letter_resolve,
              methods=["POST"]),
        Route("/v1/runtime/reload", api.reload, methods=["POST"]),
        Route("/v1/openapi.json", openapi, methods=["GET"]),
        Route("/v1/ready", api.ready, methods=["GET"]),
        Route("/metrics", api.metrics_text, methods=["GET"]),
        *chat_routes(api, gateway),
        *(console.routes() if console is not None else []),
    ])
    app.router.redirect_slashes = False  # a redirect is never what an API client wants
    app.state.api = api
    hosts = list(allowed_hosts)
    app.add_middleware(Guard, hosts=hosts, origins=list(allowed_origins))
    app.add_middleware(_JSONErrors)
    return app


def _why(gate: Any) -> str:
    """The store's first health problem, when the gate is a store's ``settled``."""
    health = getattr(getattr(gate, "__self__", None), "health", None)
    problems = health()["problems"] if health is not None else []
    return f" ({problems[0]})" if problems else ""
