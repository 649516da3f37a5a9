"""The server assembled: the Starlette app over HTTP and the stdio process.

``app.create_app`` composes the HTTP guard (``metacortex.guard``), the MCP
surface (``metacortex.mcp_surface``), the OAuth server (``metacortex.auth``), the
console (``metacortex.console``) and the owner's pages; ``stdio`` serves the same
MCP surface over stdin/stdout; ``lifecycle`` builds and closes the service around
either. Nothing imports this package but the entry points (``metacortex serve``
and ``stdio``, ``functions/main.py``, tests and benches): what the parts share is
``metacortex.kernel``, below them all.
"""
