"""`interlock serve`: the HTTP API on loopback and a Unix socket; `serve token ...`."""

from __future__ import annotations

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
        if not record_id.isdigit():
            return False
        self.store.flush(1.0)
        return bool(self.store.resolve(int(record_id), by="serve-admin"))


def _load(project: Any, store: str | None = None) -> tuple[Any, Any, Any]:
    """(host, dead_letters, status): the project's host (interlock.hosts.assembly: the registry's
    engine with the extensions loaded, as `interlock run` has them), recording into the
    store; the registry is also the reloader (it swaps only its own hooks, so extension
    hooks survive a reload)."""
    from interlock.engine.errors import ConfigError
    from interlock.hosts.assembly import Host

    host = Host.open(project, record=True, store=store)
    if not host.engine.hooks:
        # A server with no hooks would answer "allow" to everything (docs/serve.md:
        # hosts never run with no hooks). Extension hooks count.
        host.close()
        raise ConfigError(f"no hooks are configured for {host.project.root} "
                          f"({host.project.describe()})",
                          fix="add hooks to .interlock/config.toml, enable a bundled hook "
                              "with `interlock hooks enable NAME`, or add an extension")
    registry = host.registry
    assert registry.recording is not None

    def status() -> dict[str, Any]:
        # /v1/status already says how many hooks are active under "hooks".
        data = registry.status()
        data["hook_stats"] = data.pop("hooks")
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


def _audit_gate(registry: Any, mode: str) -> Any:
    """The store's commit wait for strict audit, or None for fast (shown in status)."""
    store = registry.recording.store
    store.audit_mode = mode
    return store.settled if mode == "strict" else None


def _console(engine: Any, registry: Any, tokens: Any) -> Any:
    """The web console (docs/console.md), fed by every decision the engine makes."""
    from interlock.hosts.server.console import Console
    from interlock.hosts.server.console_feed import DecisionFeed

    feed = DecisionFeed()
    engine.add_sink(feed)
    store = registry.recording.store if registry.recording is not None else None
    return Console(tokens=tokens, feed=feed, registry=registry, store=store)


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
        no_console: Annotated[bool, typer.Option(
            "--no-console", help="Do not serve the web console at /ui/.")] = False,
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
                from interlock.engine.errors import ConfigError

                raise ConfigError(f"the server needs extra packages ({exc.name})",
                                  fix="pip install 'interlock[server]'") from None
            if audit not in ("strict", "fast"):
                from interlock.engine.errors import ConfigError

                raise ConfigError(f"unknown audit mode {audit!r}", field="--audit",
                                  fix="use --audit strict or --audit fast")
            from interlock.hosts.assembly import Project

            found = Project.discover(project)
            root = found.root
            if host not in ("127.0.0.1", "::1", "localhost"):
                typer.echo(f"interlock serve: warning: listening on {host}, beyond loopback; "
                           "status and hooks then need a token from non-loopback clients",
                           err=True)
            state = ensure_private_dir(state_dir(root))
            tokens = TokenStore.for_state_dir(state)
            loaded, dead, status = _load(found, store)
            engine, registry = loaded.engine, loaded.registry
            typer.echo(f"interlock serve: {found.describe()}", err=True)
            sock = None if no_socket else (socket_path or default_sock(root))
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
                                 audit_gate=_audit_gate(registry, audit))
                serving = Serving(app, host=host, port=port, socket_path=sock,
                                  tcp=not no_tcp)
                if gateway is not None:
                    gateway.address = (f"http://{host}:{serving.port}" if not no_tcp
                                       else f"unix:{sock}")
                serve_forever(serving)
            finally:
                loaded.close()

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
    ) -> None:
        """Create a token and print it once; only its hash is stored."""
        from interlock.hosts.cli._common import user_errors
        from interlock.hosts.server.auth import Role, TokenStore
        from interlock.hosts.server.paths import ensure_private_dir, state_dir

        with user_errors():
            if admin + chat + read > 1:
                from interlock.engine.errors import ConfigError

                raise ConfigError("a token has one role: --admin, --chat or --read",
                                  field="--read" if read else "--chat",
                                  fix="create one token per role")
            store = TokenStore.for_state_dir(ensure_private_dir(state_dir(_root(project))))
            role = (Role.ADMIN if admin else Role.CHAT if chat else Role.READ if read
                    else Role.EVENTS)
            token = store.create(name, role, sender=sender if chat else None)
        typer.echo(token)

    @token_app.command("list")
    def token_list(project: Annotated[Path | None, typer.Option(help="Project root.")] = None,
                   as_json: Annotated[bool, typer.Option(
                       "--json", help="JSON output (the only format; accepted for scripts).")]
                   = False) -> None:
        """List token names and roles (never the tokens), as JSON."""
        from interlock.hosts.cli._common import print_json, user_errors
        from interlock.hosts.server.auth import TokenStore
        from interlock.hosts.server.paths import state_dir

        with user_errors():
            print_json(TokenStore.for_state_dir(state_dir(_root(project))).describe())

    @token_app.command("revoke")
    def token_revoke(name: str,
                     project: Annotated[Path | None, typer.Option(help="Project root.")] = None
                     ) -> None:
        """Revoke a token by name."""
        from interlock.hosts.cli._common import user_errors
        from interlock.hosts.server.auth import TokenStore
        from interlock.hosts.server.paths import state_dir

        with user_errors():
            store = TokenStore.for_state_dir(state_dir(_root(project)))
            if not store.revoke(name):
                typer.echo(f"interlock: error: no token named {name!r}", err=True)
                raise typer.Exit(2)
