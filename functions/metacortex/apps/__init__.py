"""MCP Apps views: what a person sees of MetaCortex inside the conversation.

A host that implements the MCP Apps extension (``io.modelcontextprotocol/ui``,
specification 2026-01-26) renders a tool's result as an interactive view: the
tool's ``_meta.ui.resourceUri`` names a ``ui://`` HTML resource, the host reads
it, shows it in a sandboxed iframe and talks to it over ``postMessage``
JSON-RPC. ``views`` is the registry (which tool links which view, the
resources and their ``_meta.ui``), ``documents`` assembles each view's one
self-contained HTML document from the package data in ``static/``, and
``caller`` is what a view is told about the caller's credential (in the
result's ``_meta``, never in ``content`` or ``structuredContent``).

It depends on nothing of the MCP surface; ``metacortex.mcp_surface`` wires it
in (tools/list, resources/read, tools/call, the server's capability).
"""
