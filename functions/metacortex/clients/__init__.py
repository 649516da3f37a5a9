"""The owner's management of credentials: client endpoints kept in the store, OAuth
grants, and the connection snippets that hand a credential to an application.

What a credential may do (its person, spaces, levels and tools) is decided in
``metacortex.access``; this package creates, changes and removes the records.

For an application (what ``metacortex init`` does)::

    created = ClientManager(store, settings).create("laptop-codex", tools=[...])
    endpoint = client_endpoint(base_url, created.client.id)
    print(created.token, snippet(endpoint, "codex").text)


The owner's Python API (the console's clients page, ``metacortex client ...``,
``metacortex init``):

- ``ClientManager(store, settings)``: ``create`` (the token is returned once, the
  store keeps its sha256), ``list``, ``get``, ``pause``, ``resume``, ``remove``;
  clients from ``MCP_CLIENT_PROFILES_JSON`` are listed as read-only;
- ``grants``: OAuth grants listed, paused, resumed and revoked, and the names the
  clients page gives every client (``client_labels``);
- ``snippets``: ``render(endpoint)`` (or ``snippet(endpoint, "codex")``), the
  ready-to-paste connection for ChatGPT, Claude, Claude Code, Codex, Cursor and
  VS Code, of ``client_endpoint(base_url, id)`` or any ``Endpoint(url, ...)``;
"""

from metacortex.clients.manage import ClientManager, ClientView, CreatedClient
from metacortex.clients.snippets import (
    Endpoint,
    Snippet,
    client_endpoint,
    render,
    snippet,
    token_variable_for,
)

__all__ = [
    "ClientManager",
    "ClientView",
    "CreatedClient",
    "Endpoint",
    "Snippet",
    "client_endpoint",
    "render",
    "snippet",
    "token_variable_for",
]
