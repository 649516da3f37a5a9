"""The owner's memory console at ``/console``: see, search and curate what agents remember.

Server-rendered pages (Starlette's Jinja2 templates, one local stylesheet, no
script, no third-party asset) behind the owner's sign-in (``metacortex.owner``):

- ``/console``: topics with counts per state, newest first with keyset paging,
  filters (topic, state, origin, validity instant);
- ``/console/memories/{id}``: one record with its metadata, provenance,
  supersession chain, consolidation lineage, image description and artifact refs;
  curation forms (deprecate, correct, promote, erase);
- ``/console/search``: the tools' hybrid search with each score's breakdown;
- ``/console/consolidate``: a topic's drafts merged, previewed then confirmed;
- ``/console/erase``: one memory, a selection or a topic erased for good, after a
  confirmation that says how many (``console.erase``);
- ``/console/clients``: profiles and OAuth grants with their last use; revoke;
- ``/console/activity``: SVG charts from the events; ``/console/export``: a backup.

Every read and write goes through ``MemoryService`` with the admin's access, so the
tools' rules apply; every change is recorded as a ``memory_events`` event with
initiator ``owner``. Every form carries the session's CSRF token.
"""

from metacortex.console.web import Console

__all__ = ["Console"]
