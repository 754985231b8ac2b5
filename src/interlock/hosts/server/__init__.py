"""`interlock serve`: the HTTP API over the engine, on loopback and a Unix socket.

Modules (import the one you need; this package imports nothing heavy, so the
bridges can use :mod:`interlock.hosts.server.paths` without Starlette):

- :mod:`~interlock.hosts.server.paths`: where the state directory and socket live;
- :mod:`~interlock.hosts.server.auth`: bearer tokens, stored hashed;
- :mod:`~interlock.hosts.server.security`: Host/Origin checks and the socket peer's uid;
- :mod:`~interlock.hosts.server.app`: ``create_app(engine, ...)``, the ASGI app;
- :mod:`~interlock.hosts.server.gateway`: the chat gateway (``/v1/chat``, its WebSocket);
- :mod:`~interlock.hosts.server.openapi`: the published OpenAPI document;
- :mod:`~interlock.hosts.server.listen`: uvicorn on TCP and the Unix socket.
"""
