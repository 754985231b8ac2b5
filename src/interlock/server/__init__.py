"""`interlock serve`: the HTTP API over the engine, on loopback and a Unix socket.

Modules (import the one you need; this package imports nothing heavy, so the
bridges can use :mod:`interlock.server.paths` without Starlette):

- :mod:`~interlock.server.paths`: where the state directory and socket live;
- :mod:`~interlock.server.auth`: bearer tokens, stored hashed;
- :mod:`~interlock.server.security`: Host/Origin checks and the socket peer's uid;
- :mod:`~interlock.server.app`: ``create_app(engine, ...)``, the ASGI app;
- :mod:`~interlock.server.gateway`: the chat gateway (``/v1/chat``, its WebSocket);
- :mod:`~interlock.server.openapi`: the published OpenAPI document;
- :mod:`~interlock.server.listen`: uvicorn on TCP and the Unix socket.
"""
