"""The web console of `interlock serve` (``/ui/``): watch, resolve, approve.

The page is static (``console_assets/``, no build step, nothing fetched from
elsewhere). Every data endpoint under ``/ui/api/`` needs a session, and a
session needs a token:

- ``POST /ui/api/login`` with ``{"token": ...}`` (a ``read`` or ``admin``
  token) sets an HttpOnly, ``SameSite=Strict`` cookie scoped to ``/ui`` and
  answers a CSRF token; every action (a POST) must send it back in
  ``X-CSRF-Token``. Sessions end at logout, after 12 hours, or as soon as
  their token is revoked or expires; an open live stream ends with them.
- Viewing needs ``read`` (or ``admin``); acting (approve, revoke, enable,
  disable, resolve) needs ``admin``. Each action is written to the audit log
  with the token's name.

The server's Host check stays on, and the Origin check admits the page's own
origin on ``/ui/`` only (see :class:`interlock.hosts.server.security.Guard`).
Everything shown passes through redaction. See docs/console.md.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from interlock.hosts.server.app import JSON, _error
from interlock.hosts.server.auth import Role, TokenInfo, TokenStore
from interlock.hosts.server.console_feed import DecisionFeed, Filters

if TYPE_CHECKING:
    from interlock.config.registry import Registry
    from interlock.store import Store

COOKIE = "interlock_console"
SESSION_TTL = 12 * 3600.0
ASSETS = {"": ("index.html", "text/html; charset=utf-8"),
          "console.js": ("console.js", "text/javascript; charset=utf-8"),
          "console.css": ("console.css", "text/css; charset=utf-8")}
# The page may load only its own files; no inline script, nothing from elsewhere.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
KEEPALIVE_S = 15.0
BATCH_S = 0.1
MAX_BODY = 64 * 1024
"""A console POST is a token or a note: far below the API's limit."""


@dataclass(slots=True)
class Session:
    token: TokenInfo
    csrf: str
    expires: float


class Console:
    """The console's endpoints over one server's engine, registry and store."""

    def __init__(self, *, tokens: TokenStore, feed: DecisionFeed,
                 registry: Registry | None = None, store: Store | None = None,
                 now: Callable[[], float] = time.time) -> None:
        self.tokens = tokens
        self.feed = feed
        self.registry = registry
        self.store = store
        self._now = now
        self._sessions: dict[str, Session] = {}
        self.changes: list[dict[str, Any]] = []
        """Revision history: every reload the registry applied or refused, newest last."""
        if registry is not None:
            registry.add_listener(self._note_reload)

    # -- sessions -----------------------------------------------------------------------
    def _live(self, sid: str) -> Session | Response:
        """The session ``sid`` while it and its token last, else a ``401``."""
        found = self._sessions.get(sid) if sid else None
        now = self._now()
        if found is None or found.expires < now:
            self._sessions.pop(sid, None)
            return _error(401, "log in with a read or admin token")
        current = {t.name: t for t in self.tokens.entries()}.get(found.token.name)
        if current is None or current.digest != found.token.digest:
            del self._sessions[sid]  # the token was revoked (or replaced)
            return _error(401, "the token behind this session was revoked")
        if current.expired(now):
            del self._sessions[sid]  # a session never outlives its token
            return _error(401, "the token behind this session has expired")
        return found

    def _session(self, request: Request, needed: Role) -> Session | Response:
        found = self._live(request.cookies.get(COOKIE, ""))
        if isinstance(found, Response):
            return found
        if needed is Role.ADMIN and found.token.role is not Role.ADMIN:
            return _error(403, f"token {found.token.name!r} may view, not act; "
                                    "acting needs an admin token")
        if request.method == "POST":
            sent = request.headers.get("x-csrf-token", "")
            if not hmac.compare_digest(sent, found.csrf):
                return _error(403, "missing or wrong X-CSRF-Token")
        return found

    async def login(self, request: Request) -> Response:
        body = await _body(request)
        if isinstance(body, Response):
            return body
        token = body.get("token")
        if not isinstance(token, str) or not token:
            return _error(422, "token is required", field="token")
        info = self.tokens.verify(token.strip())
        if info is None:
            return _error(401, "unknown, revoked or expired token")
        if info.role not in (Role.READ, Role.ADMIN):
            return _error(403, f"token {info.name!r} has role {info.role.value!r}; "
                                    "the console takes a read or admin token")
        now = self._now()
        for sid in [s for s, v in self._sessions.items() if v.expires < now]:
            del self._sessions[sid]
        sid = secrets.token_urlsafe(32)
        session = Session(info, secrets.token_urlsafe(24), now + SESSION_TTL)
        self._sessions[sid] = session
        response = JSON(self._whoami(session))
        response.set_cookie(COOKIE, sid, max_age=int(SESSION_TTL), path="/ui", httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response

    async def logout(self, request: Request) -> Response:
        found = self._session(request, Role.READ)
        if isinstance(found, Response):
            return found
        self._sessions.pop(request.cookies.get(COOKIE, ""), None)
        response = JSON({"ok": True})
        response.delete_cookie(COOKIE, path="/ui")
        return response

    async def whoami(self, request: Request) -> Response:
        found = self._session(request, Role.READ)
        return found if isinstance(found, Response) else JSON(self._whoami(found))

    @staticmethod
    def _whoami(session: Session) -> dict[str, Any]:
        return {"name": session.token.name, "role": session.token.role.value,
                "csrf": session.csrf}

    # -- the page ---------------------------------------------------------------------------
    async def asset(self, request: Request) -> Response:
        name = request.path_params.get("name", "")
        found = ASSETS.get(name)
        if found is None:
            return _error(404, "no such file")
        body = resources.files("interlock.hosts.server").joinpath(
            "console_assets", found[0]).read_bytes()
        return Response(body, media_type=found[1], headers={
            "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"})

    # -- decisions ----------------------------------------------------------------------
    async def decisions(self, request: Request) -> Response:
        found = self._session(request, Role.READ)
        if isinstance(found, Response):
            return found
        q = request.query_params
        before = _int(q.get("before"))
        limit = min(max(_int(q.get("limit")) or 200, 1), 1000)
        rows = self.feed.page(before=before, limit=limit, filters=Filters.of(q))
        return JSON({"rows": rows, "last": self.feed.last})

    async def decision(self, request: Request) -> Response:
        found = self._session(request, Role.READ)
        if isinstance(found, Response):
            return found
        record = self.feed.record(_int(request.path_params["seq"]) or 0)
        if record is None:
            return _error(404, "that decision is no longer in the live window; "
                                    "see `interlock audit`")
        return JSON(record)

    async def stream(self, request: Request) -> Response:
        """Server-sent events: each new decision as one ``data:`` line of JSON."""
        found = self._session(request, Role.READ)
        if isinstance(found, Response):
            return found
        filters = Filters.of(request.query_params)
        given = _int(request.query_params.get("after"))
        after: int = self.feed.last if given is None else given
        feed = self.feed
        sid = request.cookies.get(COOKIE, "")

        async def events() -> Any:
            nonlocal after
            yield b"retry: 2000\n\n"
            while True:
                arrived = await feed.wait(after, KEEPALIVE_S)
                # An open stream ends with its session: logout, expiry, a revoked token.
                if isinstance(self._live(sid), Response):
                    return
                if not arrived:
                    yield b": keep-alive\n\n"
                    continue
                items = feed.newer(after)
                if not items:
                    continue
                after = items[-1].seq
                chunks = [b"id: %d\ndata: %b\n\n" % (item.seq, item.as_bytes())
                          for item in items
                          if filters is None or filters.keep(item.as_row())]
                if chunks:
                    yield b"".join(chunks)
                # A page needs no more than a few frames a second: gathering what
                # arrives meanwhile into one write keeps 20 viewers cheap at 1,000/s.
                await asyncio.sleep(BATCH_S)

        return StreamingResponse(events(), media_type="text/event-stream", headers={
            "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    # -- hooks ---------------------------------------------------------------------------
    async def hooks(self, request: Request) -> Response:
        found = self._session(request, Role.READ)
        if isinstance(found, Response):
            return found
        stats = self.feed.hook_stats()
        breakers = self._breakers()
        out = []
        for e in (self.registry.hooks if self.registry is not None else []):
            out.append({
                "name": e.qualified_name, "source": e.source.label,
                "events": list(e.declared.events), "state": e.state, "enabled": e.enabled,
                "approved": e.approved, "needs_approval": e.needs_approval,
                "drift": e.needs_approval and not e.approved and self._was_approved(e),
                "on_error": e.definition.on_error or "default",
                "breaker": breakers.get(e.qualified_name, "closed"),
                **stats.get(e.qualified_name, {"calls": 0, "failures": 0, "error_rate": 0.0,
                                               "p50_ms": None, "p99_ms": None})})
        return JSON({"hooks": out, "revision": self.registry.revision
                           if self.registry is not None else 0,
                           "withheld": self.registry.withheld if self.registry else []})

    def _was_approved(self, e: Any) -> bool:
        assert self.registry is not None
        return e.key in self.registry.trust.approvals()

    def _breakers(self) -> dict[str, str]:
        if self.registry is None:
            return {}
        states: dict[str, str] = {}
        for breaker in self.registry.breakers.snapshot():
            states[breaker.key.hook] = str(breaker.state)
        return states

    async def hook_action(self, request: Request) -> Response:
        found = self._session(request, Role.ADMIN)
        if isinstance(found, Response):
            return found
        if self.registry is None:
            return _error(404, "this server has no registry")
        from interlock.engine.errors import ConfigError

        name = request.path_params["name"]
        action = request.path_params["action"]
        who = f"console:{found.token.name}"
        try:
            if action == "approve":
                done = self.registry.approve([name], by=who)
                if not done:
                    return _error(409, f"{name} needs no approval")
            elif action == "revoke":
                if not self.registry.revoke(name):
                    return _error(409, f"{name} was not approved")
            elif action in ("enable", "disable"):
                self.registry.set_enabled(name, action == "enable")
            else:
                return _error(404, f"unknown action {action!r}", field="action")
        except ConfigError as exc:
            return _error(409, exc.render())
        self._audit(who, action, name)
        return JSON({"ok": True, "action": action, "hook": name,
                           "revision": self.registry.revision})

    # -- dead letters ------------------------------------------------------------------
    async def dead_letters(self, request: Request) -> Response:
        found = self._session(request, Role.READ)
        if isinstance(found, Response):
            return found
        if self.store is None:
            return JSON({"records": []})
        import msgspec

        unresolved = request.query_params.get("all", "") not in ("1", "true")
        limit = min(max(_int(request.query_params.get("limit")) or 200, 1), 1000)
        # Store reads run on a worker thread: the serving loop answers bridges.
        records = await asyncio.to_thread(self.store.dead_letters, unresolved=unresolved,
                                          limit=limit,
                                          hook=request.query_params.get("hook") or None)
        return JSON({"records": msgspec.to_builtins(records)})

    async def resolve(self, request: Request) -> Response:
        found = self._session(request, Role.ADMIN)
        if isinstance(found, Response):
            return found
        if self.store is None:
            return _error(404, "this server has no dead-letter store")
        body = await _body(request)
        if isinstance(body, Response):
            return body
        note = str(body.get("note") or "")[:500] or None
        who = f"console:{found.token.name}"
        hook = body.get("hook")
        store = self.store
        ident = _int(str(request.path_params.get("ident", "")))
        if not (isinstance(hook, str) and hook) and ident is None:
            return _error(422, "name a dead letter id, or a hook to resolve all of")

        def resolve_them() -> tuple[list[int], list[int]]:
            ids = ([r.id for r in store.dead_letters(unresolved=True, hook=hook, limit=100_000)]
                   if isinstance(hook, str) and hook else [ident or 0])
            return ids, [i for i in ids if store.resolve(i, by=who, note=note)]

        ids, done = await asyncio.to_thread(resolve_them)
        if not done:
            return _error(404, "nothing unresolved to resolve")
        self._audit(who, "resolve", hook if isinstance(hook, str) and hook
                    else f"dead letter {ids[0]}", note=f"{len(done)} resolved")
        return JSON({"resolved": done})

    # -- health -----------------------------------------------------------------------
    async def health(self, request: Request) -> Response:
        found = self._session(request, Role.READ)
        if isinstance(found, Response):
            return found
        now = self._now()
        data: dict[str, Any] = {
            "revision": self.registry.revision if self.registry is not None else 0,
            "changes": self.changes[-50:],
            "agents": [{"platform": p, "last_seen": t, "ago_s": round(now - t, 1)}
                       for p, t in sorted(self.feed.agents.items(), key=lambda x: -x[1])],
            "breakers_open": [k for k, v in self._breakers().items() if v != "closed"],
            "viewers": self.feed.listeners, "live_window": self.feed.last}
        if self.store is not None:
            health = self.store.health()  # from memory: never waits on the database
            data["store"] = {"backend": self.store.location, "backlog": health["backlog"],
                             "ok": health["ok"], "problems": health["problems"],
                             "oldest_unwritten_age_s": health["oldest_unwritten_age_s"],
                             "unresolved": health["unresolved_dead_letters"]}
        return JSON(data)

    async def charts(self, request: Request) -> Response:
        """Per minute over the last hour: decisions by verdict, and p99 hook latency."""
        found = self._session(request, Role.READ)
        if isinstance(found, Response):
            return found
        now = self._now()
        start = (int(now) // 60 - 59) * 60
        minutes = [start + 60 * i for i in range(60)]
        counts: dict[str, list[int]] = {}
        latencies: list[list[float]] = [[] for _ in minutes]
        seen: set[str] = set()
        for entry in await asyncio.to_thread(self._audit_since, start):
            slot = int((entry.at - start) // 60)
            if not 0 <= slot < 60:
                continue
            if entry.latency_ms is not None:
                latencies[slot].append(entry.latency_ms)
            if entry.dispatch_id in seen:
                continue
            seen.add(entry.dispatch_id)
            counts.setdefault(entry.outcome, [0] * 60)[slot] += 1
        p99 = [round(sorted(v)[min(len(v) - 1, int(0.99 * len(v)))], 3) if v else None
               for v in latencies]
        return JSON({"minutes": minutes, "decisions": counts, "p99_ms": p99})

    def _audit_since(self, since: float) -> list[Any]:
        if self.store is None:
            return []
        from interlock.store import AuditQuery

        return self.store.audit(AuditQuery(since=since, limit=100_000))

    # -- the audit trail of actions ---------------------------------------------------
    def _audit(self, who: str, action: str, target: str, note: str | None = None) -> None:
        if self.store is not None:
            self.store.submit_action(who=who, action=action, target=target, note=note)

    def _note_reload(self, result: Any) -> None:
        if not (result.changed or result.error is not None or result.blocked):
            return
        self.changes.append({
            "at": self._now(), "revision": result.revision, "applied": bool(result.changed),
            "files": [str(p) for p in result.files][:20],
            "error": str(result.error) if result.error is not None else None,
            "blocked": result.blocked})
        del self.changes[:-200]

    def routes(self) -> list[Route]:
        return [
            Route("/ui", _redirect, methods=["GET"]),
            Route("/ui/", self.asset, methods=["GET"]),
            Route("/ui/{name:str}", self.asset, methods=["GET"]),
            Route("/ui/api/login", self.login, methods=["POST"]),
            Route("/ui/api/logout", self.logout, methods=["POST"]),
            Route("/ui/api/session", self.whoami, methods=["GET"]),
            Route("/ui/api/decisions", self.decisions, methods=["GET"]),
            Route("/ui/api/decisions/{seq:int}", self.decision, methods=["GET"]),
            Route("/ui/api/stream", self.stream, methods=["GET"]),
            Route("/ui/api/hooks", self.hooks, methods=["GET"]),
            Route("/ui/api/hooks/{name:str}/{action:str}", self.hook_action, methods=["POST"]),
            Route("/ui/api/deadletters", self.dead_letters, methods=["GET"]),
            Route("/ui/api/deadletters/resolve", self.resolve, methods=["POST"]),
            Route("/ui/api/deadletters/{ident:str}/resolve", self.resolve, methods=["POST"]),
            Route("/ui/api/health", self.health, methods=["GET"]),
            Route("/ui/api/charts", self.charts, methods=["GET"]),
        ]


async def _redirect(request: Request) -> Response:
    return Response(status_code=308, headers={"Location": "/ui/"})


async def _body(request: Request) -> dict[str, Any] | Response:
    """A POST's JSON object ({} when empty), or a ``4xx``: read at most MAX_BODY bytes
    (login is open to anyone who reaches the port), never a ``500`` for deep nesting."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return _error(413, f"the body is larger than {MAX_BODY} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return _error(400, "the body must be a JSON object, e.g. {\"token\": \"ilk_...\"}")
    if not isinstance(data, dict):
        return _error(400, "the body must be a JSON object, e.g. {\"token\": \"ilk_...\"}")
    return data


def _int(value: Any) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdecimal():
        return int(value)
    return None
