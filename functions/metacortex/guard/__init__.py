"""The HTTP guard: every refusal a request can meet before a handler sees it.

``request_guard.RequestGuard`` is the one ASGI middleware: a list of named steps,
in the order its docstring gives (route, Host, preflight, credential, method,
Origin, content type, rate limit, body limit and deadline). Beside it, one concept
a module: ``routes`` (which paths exist), ``hosts`` (DNS-rebinding defence),
``addresses`` (the caller's address behind proxies), ``credentials`` (the token a
request carries, checked against static tokens), ``cors``, ``ratelimit``,
``refusals`` (each refusal's status and message), ``connections`` (slow bodies and
when a connection is closed), ``keepalive`` (saying so, and lingering to read what
a refused client still sends), ``rejections`` (the ``Rejection`` shape and what
recording one may cost) and ``bearer`` (the seam to the OAuth resource server in
``metacortex.auth``).

It depends on ``metacortex.kernel`` (the runtime, the routes, the ``Rejection``
shape and what recording one may cost, the ``bearer`` seam to the OAuth resource
server in ``metacortex.auth``, logs and events) and ``metacortex.access`` (the
profiles), and never on ``metacortex.mcp_surface``: a refusal is decided without
the MCP tools.
"""
