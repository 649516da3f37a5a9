"""What every part of the running server shares, below them all.

- ``runtime``: the service, the profiles in effect and the start-up state of one
  process (``Runtime``), and the profile the guard put on a request;
- ``routes``: which paths exist (the MCP endpoints, health, OAuth, the owner's
  pages), recognised once for the guard and the router;
- ``rejections``: the shape of a refused request and what recording one may cost;
- ``bearer``: the seam between the guard and an OAuth resource server;
- ``events``: ``memory_events`` and ``retrieval_query_events``, written off the
  request path; ``logs``: structured log lines;
- ``domain_errors``: a domain error as an HTTP answer on every route but MCP's.

The guard, the MCP surface, the OAuth server, the owner's pages, the console and
the commands build on it; it imports none of them (``tests/test_module_imports.py``),
only what lies below (``metacortex.access``, the service, the store). The app that
puts the parts together is ``metacortex.server``.
"""
