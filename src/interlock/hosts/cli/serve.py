"""`interlock serve`: the HTTP API on loopback and a Unix socket; `serve token ...`."""

from pathlib import Path
from typing import Annotated, Any

import typer


class StoreDeadLetters:
    """The store's dead letters, as the server's admin endpoints want them."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def list(self, *, unresolved: bool = False, limit: int = 100,
             before: int | None = None) -> list[dict[str, Any]]:
        import msgspec

        self.store.flush(1.0)  # what the hooks just failed is listed too (on a worker thread)
        records = self.store.dead_letters(unresolved=unresolved, limit=limit, before=before)
        out: list[dict[str, Any]] = msgspec.to_builtins(records)
        return out

    def resolve(self, record_id: str) -> bool:
        if not record_id.isdecimal():
            return False
        self.store.flush(1.0)
        return bool(self.store.resolve(int(record_id), by="serve-admin"))


def _load(project: Any, store: str | None = None,
          accept_hooks: bool = False) -> tuple[Any, Any, Any]:
    """(host, dead_letters, status): the project's host (interlock.hosts.assembly: the registry's
    engine with the extensions loaded, as `interlock run` has them), recording into the
    store; the registry is also the reloader (it swaps only its own hooks, so extension
    hooks survive a reload)."""
    from interlock.engine.errors import ConfigError
    from interlock.engine.redact import redact
    from interlock.hosts.assembly import Host
    from interlock.hosts.bridge._decide import unguarded

    host = Host.open(project, record=True, store=store, accept_hooks=accept_hooks)
    if unguarded(host.engine.hooks, host.rules):
        # A server with no hooks and no deny or ask rule would answer "allow" to
        # everything (docs/serve.md: hosts never run with no policy). Extension
        # hooks count; a project whose only policy is a deny rule is served, as
        # the bridge runs it (docs/one-policy.md, Permission rules).
        host.close()
        raise ConfigError(f"no hooks are configured for {host.project.root} "
                          f"(nor a deny or ask rule; {host.project.describe()})",
                          fix="add hooks to .interlock/config.toml, enable a bundled hook "
                              "with `interlock hooks enable NAME`, or add an extension")
    registry = host.registry
    assert registry.recording is not None

    def status() -> dict[str, Any]:
        # /v1/status already says how many hooks are active under "hooks".
        data = registry.status()
        data["hook_stats"] = data.pop("hooks")
        # A live edit that was refused: the last good revision answers meanwhile, and
        # an operator reading status must not take the edit for applied.
        error = registry.last_error
        data["config_error"] = redact(error.render()) if error is not None else None
        # A failed, unapproved or changed extension is visible here, not only in the log.
        data["extensions"] = [{"name": i.name, "source": i.source.label, "status": i.status,
                               "message": i.message, "guards": list(i.guards)}
                              for i in host.extension_infos]
        return data

    return host, StoreDeadLetters(registry.recording.store), status


def _root(project: Path | None) -> Path:
    """``--project`` as given, else the project found from here (as `serve` finds it)."""
    from interlock.hosts.assembly import Project

    return Project.discover(project).root


def _audit_gate(registry: Any, mode: str, payloads: bool = False) -> Any:
    """The store's commit wait for strict audit, or None for fast (shown in status)."""
    store = registry.recording.store
    store.audit_mode = mode
    store.audit_payloads = payloads
    return store.settled if mode == "strict" else None


def _ready(registry: Any, shared: Any) -> Any:
    """``GET /v1/ready``'s check, from memory: a replica's listener connection to
    PostgreSQL is up (it is pinged every 0.5 s: a replica that cannot reach the
    database refuses tokens and cannot commit, even with no record waiting), and
    the store commits. Records once refused stay in the health's problems for the
    operator; they do not keep a replica out of the balancer once writes succeed."""
    from interlock.store._store import STALE_AFTER

    def ready() -> str | None:
        if shared is not None and not shared.fleet.fresh():
            return "the fleet's database is not answering"
        recording = registry.recording
        if recording is None:
            return None
        health = recording.store.health()
        if health["failing"] or health["oldest_unwritten_age_s"] > STALE_AFTER:
            return "the audit store is not committing"
        return None

    return ready


def _console(engine: Any, registry: Any, tokens: Any) -> Any:
    """The web console (docs/console.md), fed by every decision the engine makes."""
    from interlock.hosts.server.console import Console
    from interlock.hosts.server.console_feed import DecisionFeed

    feed = DecisionFeed()
    engine.add_sink(feed)
    store = registry.recording.store if registry.recording is not None else None
    return Console(tokens=tokens, feed=feed, registry=registry, store=store)


def _policy_service(repo: Any, served: Any, registry: Any, secret_file: Path | None,
                    refresh: float | None, fleet: Any) -> Any:
    """The signed reload and the schedule of `serve --policy` (interlock.hosts.fleet.policy),
    serving ``served`` (open_policy's); with --fleet each new revision is in the revision
    history (a reload listener), and a switch is shared with every replica."""
    from interlock.hosts.fleet.policy import PolicyService, read_secret

    service = PolicyService(repo, served.ref, registry, served=served, fleet=fleet,
                            secret=read_secret(secret_file) if secret_file else None)
    service.follow()  # a switch made since this replica read the table
    if refresh is not None:
        service.schedule(refresh)
    return service


def _tokens(project: Path | None, fleet: bool, store: str | None) -> Any:
    """The project's token file, or with ``fleet`` the fleet's table in PostgreSQL."""
    if fleet:
        from interlock.hosts.fleet.attach import shared_tokens

        return shared_tokens(store)
    from interlock.hosts.server.auth import TokenStore
    from interlock.hosts.server.paths import ensure_private_dir, state_dir

    return TokenStore.for_state_dir(ensure_private_dir(state_dir(_root(project))))


def register(app: typer.Typer) -> None:
    serve_app = typer.Typer(help="Serve the hooks over HTTP and a Unix socket.",
                            invoke_without_command=True, no_args_is_help=False)
    token_app = typer.Typer(help="Bearer tokens for the server (stored hashed).",
                            no_args_is_help=True)
    serve_app.add_typer(token_app, name="token")
    app.add_typer(serve_app, name="serve")

    @serve_app.callback()
    def serve(
        ctx: typer.Context,
        project: Annotated[Path | None, typer.Option(
            help="Project root (default: the nearest folder holding .interlock/, from here "
                 "up to the repository root).")] = None,
        host: Annotated[str, typer.Option(help="TCP address (loopback by default).")] =
            "127.0.0.1",
        port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one.")] = 8787,
        socket_path: Annotated[Path | None, typer.Option(
            "--socket", help="Unix socket path (default: per project, in a 0700 dir).")] = None,
        no_socket: Annotated[bool, typer.Option("--no-socket", help="No Unix socket.")] = False,
        no_tcp: Annotated[bool, typer.Option("--no-tcp", help="Only the Unix socket.")] = False,
        allow_host: Annotated[list[str] | None, typer.Option(
            help="Extra Host header names to serve (beyond loopback).")] = None,
        allow_origin: Annotated[list[str] | None, typer.Option(
            help="Browser origins allowed to call the API (none by default).")] = None,
        store: Annotated[str | None, typer.Option(
            help="Audit and dead-letter store URL or SQLite path (default: $INTERLOCK_STORE, "
                 "else interlock.db in the state dir).", envvar="INTERLOCK_STORE")] = None,
        chat_model: Annotated[str | None, typer.Option(
            help="Run the chat gateway (/v1/chat) with this model: openai:NAME, "
                 "scripted:FILE or an extension's PREFIX:NAME.")] = None,
        base_url: Annotated[str | None, typer.Option(
            help="OpenAI-compatible base URL for --chat-model (default $OPENAI_BASE_URL).")]
            = None,
        api_key: Annotated[str | None, typer.Option(
            help="API key for --chat-model (default $OPENAI_API_KEY).")] = None,
        ask_timeout: Annotated[float, typer.Option(
            help="Seconds a chat question waits for the person; then it is denied.")] = 120.0,
        audit: Annotated[str, typer.Option(
            help="strict: a decision is answered only once its audit record has committed "
                 "(a 503 after 5 s if the store cannot write); fast: answer at once, up to "
                 "~50 ms of answered decisions can be lost on a crash. See "
                 "docs/reliability.md.", envvar="INTERLOCK_AUDIT")] = "strict",
        audit_payloads: Annotated[bool, typer.Option(
            "--audit-payloads", help="Keep each gate event's payload (redacted) beside its "
                                     "audit records, for `interlock policy diff --audit` "
                                     "(docs/fleet.md).",
            envvar="INTERLOCK_AUDIT_PAYLOADS")] = False,
        no_console: Annotated[bool, typer.Option(
            "--no-console", help="Do not serve the web console at /ui/.")] = False,
        log_format: Annotated[str | None, typer.Option(
            "--log-format", help="Write one line per request to stderr: text or json "
                                 "(method, path, status, time, decision and hook; never a "
                                 "body or a token). Off by default.")] = None,
        tls_cert: Annotated[Path | None, typer.Option(
            help="Serve HTTPS with this certificate (PEM; with --tls-key; no Unix socket). "
                 "See docs/fleet.md.")] = None,
        tls_key: Annotated[Path | None, typer.Option(help="The key of --tls-cert (PEM).")]
            = None,
        upstream: Annotated[str | None, typer.Option(
            help="Forward bridge calls from the Unix socket to this policy server over one "
                 "kept-alive connection, and load no hooks here (docs/fleet.md).")] = None,
        token_file: Annotated[Path | None, typer.Option(
            help="With --upstream: the 0600 file holding this machine's token.",
            envvar="INTERLOCK_SERVER_TOKEN_FILE")] = None,
        pin: Annotated[str | None, typer.Option(
            help="With --upstream: sha256:HEX of the server's certificate or public key.")]
            = None,
        ca: Annotated[Path | None, typer.Option(
            help="With --upstream: the CA file that signed the server's certificate.")]
            = None,
        fleet: Annotated[bool, typer.Option(
            "--fleet", help="A replica: share tokens, breakers, rate limits and the revision "
                            "history with the others through the PostgreSQL --store "
                            "(docs/fleet.md).", envvar="INTERLOCK_FLEET")] = False,
        policy: Annotated[str | None, typer.Option(
            help="Serve the policy of a git revision: git+https://HOST/REPO.git@COMMIT, "
                 "PATH@COMMIT (naming the commit approves its hooks; docs/fleet.md).")] = None,
        policy_secret_file: Annotated[Path | None, typer.Option(
            help="With --policy: a 0600 file holding the secret that signs "
                 "POST /v1/runtime/policy (switch to another revision).")] = None,
        policy_refresh: Annotated[float | None, typer.Option(
            help="With --policy: fetch the ref again every SECONDS and serve what it names.")]
            = None,
    ) -> None:
        """Serve POST /v1/events/{event} and friends; see docs/serve.md."""
        if ctx.invoked_subcommand is not None:
            return
        from interlock.hosts.cli._common import user_errors

        with user_errors():
            try:
                from interlock.hosts.server.app import create_app
                from interlock.hosts.server.auth import TokenStore
                from interlock.hosts.server.listen import Serving, serve_forever
                from interlock.hosts.server.paths import ensure_private_dir, state_dir
                from interlock.hosts.server.paths import socket_path as default_sock
            except ImportError as exc:
                from interlock.engine.errors import ConfigError, install_extra

                raise ConfigError(f"the server needs extra packages ({exc.name})",
                                  fix=install_extra("server")) from None
            if log_format not in (None, "text", "json"):
                from interlock.engine.errors import ConfigError

                raise ConfigError(f"unknown log format {log_format!r}", field="--log-format",
                                  fix="use --log-format text or --log-format json")
            if audit not in ("strict", "fast"):
                from interlock.engine.errors import ConfigError

                raise ConfigError(f"unknown audit mode {audit!r}", field="--audit",
                                  fix="use --audit strict or --audit fast")
            from interlock.hosts.assembly import Project

            if upstream is not None:
                from interlock.hosts.server.upstream import serve_upstream

                sock_at = socket_path or default_sock(_root(project))
                serve_upstream(upstream, token_file=token_file, pin=pin, ca=ca,
                               socket_path=sock_at)
                return
            if (tls_cert is None) != (tls_key is None):
                from interlock.engine.errors import ConfigError

                raise ConfigError("HTTPS needs both a certificate and its key",
                                  field="--tls-key" if tls_key is None else "--tls-cert",
                                  fix="give --tls-cert CERT.pem --tls-key KEY.pem")
            if tls_cert is not None:
                no_socket = True  # one TLS setting covers every listener (docs/fleet.md)
            repo = kept = None
            if policy is not None:
                from interlock.hosts.fleet.policy import open_policy

                repo, kept = open_policy(policy, ensure_private_dir(state_dir(None)) /
                                         "policies", store if fleet else None)
                project = repo.live
                typer.echo(f"interlock serve: policy {repo.repo}@{repo.commit}", err=True)
            found = Project.discover(project)
            root = found.root
            if host not in ("127.0.0.1", "::1", "localhost"):
                typer.echo(f"interlock serve: warning: listening on {host}, beyond loopback; "
                           "status and hooks then need a token from non-loopback clients",
                           err=True)
            state = ensure_private_dir(state_dir(root))
            tokens = TokenStore.for_state_dir(state)
            if fleet:
                from interlock.hosts.fleet.attach import fleet_url

                fleet_url(store)  # before anything starts: a fleet needs PostgreSQL
            loaded, dead, status = _load(found, store, accept_hooks=repo is not None)
            engine, registry = loaded.engine, loaded.registry
            shared = None
            if fleet:
                from interlock.hosts.fleet.attach import attach

                try:
                    shared = attach(store, registry, policy=lambda: (
                        f"{repo.repo}@{repo.commit}" if repo is not None else str(root)))
                except BaseException:
                    loaded.close()
                    raise
                tokens = shared.tokens
            typer.echo(f"interlock serve: {found.describe()}", err=True)
            sock = None if no_socket else (socket_path or default_sock(root))
            service = None
            try:
                gateway = None
                if chat_model is not None:
                    from interlock.hosts.server.gateway import build_gateway

                    # As in `interlock run`: extension tools are offered (to chat senders,
                    # denied unless a [[permissions]] rule names them) and extension
                    # providers serve PREFIX:NAME models. Their slash commands are not.
                    gateway = build_gateway(engine, project_root=root, model=chat_model,
                                            registry=registry, state_dir=state,
                                            base_url=base_url, api_key=api_key,
                                            ask_timeout=ask_timeout,
                                            providers=loaded.providers,
                                            extra_tools=list(loaded.tools.values()))
                console = None if no_console else _console(engine, registry, tokens)
                app = create_app(engine, project_root=root, tokens=tokens, reloader=registry,
                                 dead_letters=dead, status=status, socket_path=sock,
                                 allowed_hosts=[*(allow_host or []), host],
                                 allowed_origins=allow_origin or [], gateway=gateway,
                                 metrics=registry.metrics, console=console, live=loaded,
                                 audit_gate=_audit_gate(registry, audit, audit_payloads),
                                 ready=_ready(registry, shared),
                                 rules=lambda: registry.permissions,
                                 dispatch=registry.dispatch)
                if repo is not None:
                    service = _policy_service(repo, kept, registry, policy_secret_file,
                                              policy_refresh,
                                              shared.fleet if shared is not None else None)
                    app.add_route("/v1/runtime/policy", service.handler(), methods=["POST"])
                served: Any = app
                if log_format is not None:
                    from interlock.hosts.server.request_log import RequestLog

                    served = RequestLog(app, log_format)
                try:
                    serving = Serving(served, host=host, port=port, socket_path=sock,
                                      tcp=not no_tcp, tls_cert=tls_cert, tls_key=tls_key)
                except OSError as exc:
                    from interlock.hosts.cli._listen_errors import listen_error

                    raise listen_error(exc, host=host, port=port, socket_path=sock,
                                       tcp=not no_tcp) from None
                except ValueError as exc:  # TLS with a Unix socket
                    from interlock.engine.errors import ConfigError

                    raise ConfigError(str(exc), field="--tls-cert",
                                      fix="add --no-socket, or run a second, local serve "
                                          "for the bridges (docs/fleet.md)") from None
                if gateway is not None:
                    gateway.address = (f"http://{host}:{serving.port}" if not no_tcp
                                       else f"unix:{sock}")
                serve_forever(serving)
            except SystemExit as exc:  # SIGTERM: a clean stop, unless records were lost
                if exc.code not in (0, None):
                    raise
            finally:
                if service is not None:
                    service.close()
                if shared is not None:
                    shared.close()
                committed = loaded.close()
            if not committed:
                typer.echo("interlock serve: not every record was written to the store "
                           "(see above); exiting 1", err=True)
                raise typer.Exit(1)

    @token_app.command("create")
    def token_create(
        name: Annotated[str, typer.Argument(help="A name to revoke it by later.")],
        admin: Annotated[bool, typer.Option(
            help="Admin role (dead letters, reload, acting in the console).")] = False,
        read: Annotated[bool, typer.Option(
            help="Read role: may only view (the web console, status, hooks, metrics).")] = False,
        chat: Annotated[bool, typer.Option(help="Chat role: may use /v1/chat only.")] = False,
        sender: Annotated[str | None, typer.Option(
            help="With --chat: the sender id this token speaks for (default: its name).")]
            = None,
        project: Annotated[Path | None, typer.Option(help="Project root.")] = None,
        expires_days: Annotated[float | None, typer.Option(
            help="Days until the token is refused (default: never).")] = None,
        fleet: Annotated[bool, typer.Option(
            "--fleet", help="In the fleet's PostgreSQL --store, for every replica.")] = False,
        store: Annotated[str | None, typer.Option(
            help="With --fleet: the PostgreSQL store URL.", envvar="INTERLOCK_STORE")] = None,
    ) -> None:
        """Create a token and print it once; only its hash is stored."""
        from interlock.hosts.cli._common import user_errors
        from interlock.hosts.server.auth import Role

        with user_errors():
            if admin + chat + read > 1:
                from interlock.engine.errors import ConfigError

                raise ConfigError("a token has one role: --admin, --chat or --read",
                                  field="--read" if read else "--chat",
                                  fix="create one token per role")
            tokens = _tokens(project, fleet, store)
            role = (Role.ADMIN if admin else Role.CHAT if chat else Role.READ if read
                    else Role.EVENTS)
            token = tokens.create(name, role, sender=sender if chat else None,
                                 ttl=expires_days * 86400 if expires_days is not None else None)
        typer.echo(token)

    @token_app.command("list")
    def token_list(project: Annotated[Path | None, typer.Option(help="Project root.")] = None,
                   as_json: Annotated[bool, typer.Option(
                       "--json", help="JSON output (epoch seconds for the times).")]
                   = False,
                   fleet: Annotated[bool, typer.Option(
                       "--fleet", help="The fleet's tokens, in the PostgreSQL --store.")]
                   = False,
                   store: Annotated[str | None, typer.Option(
                       help="With --fleet: the PostgreSQL store URL.",
                       envvar="INTERLOCK_STORE")] = None) -> None:
        """List token names and roles (never the tokens)."""
        from interlock.hosts.cli._common import print_json, user_errors

        with user_errors():
            described = _tokens(project, fleet, store).describe()
            if as_json:
                print_json(described)
                return
            if not described:
                typer.echo("no tokens")
                return
            from interlock.hosts.cli._store import when
            from interlock.hosts.cli._table import render

            typer.echo(render(["NAME", "ROLE", "CREATED", "EXPIRES", "SENDER"],
                              [[str(t["name"]), str(t["role"]), when(t.get("created")),
                                when(t.get("expires")), str(t.get("sender") or "-")]
                               for t in described], drop=["SENDER", "EXPIRES"]))

    @token_app.command("revoke")
    def token_revoke(name: str,
                     project: Annotated[Path | None, typer.Option(help="Project root.")] = None,
                     fleet: Annotated[bool, typer.Option(
                         "--fleet", help="In the fleet's PostgreSQL --store: every replica "
                                         "refuses it within 2 s.")] = False,
                     store: Annotated[str | None, typer.Option(
                         help="With --fleet: the PostgreSQL store URL.",
                         envvar="INTERLOCK_STORE")] = None) -> None:
        """Revoke a token by name."""
        from interlock.hosts.cli._common import user_errors

        with user_errors():
            if not _tokens(project, fleet, store).revoke(name):
                typer.echo(f"interlock: error: no token named {name!r}", err=True)
                raise typer.Exit(2)
