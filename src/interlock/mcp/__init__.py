"""MCP: the proxy, ``interlock mcp wrap`` and the policy of MCP calls (docs/mcp.md).

Needs the ``mcp`` extra (``pip install 'interlock[mcp]'``) for everything but
:mod:`interlock.mcp._gate` and :mod:`interlock.mcp.wrap`, which use only the
standard library and the engine. ``import interlock`` never imports this.
"""
