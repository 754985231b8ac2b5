"""MCP as a host: the proxy and ``interlock mcp wrap`` (docs/mcp.md).

The proxy needs the ``mcp`` extra (README.md, Install: ``pip install -e '.[mcp]'``);
:mod:`interlock.hosts.mcp._gate` and :mod:`interlock.hosts.mcp.wrap` use only
the standard library and the engine. ``kind = "mcp"`` hooks are
:mod:`interlock.executors.mcp`. ``import interlock`` never imports any of them.
"""
