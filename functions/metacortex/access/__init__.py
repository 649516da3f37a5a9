"""Who may do what: credentials, people, spaces, levels and tools, decided in one place.

"Can Ann's laptop write to ``work``?" is answered here, in this order:

1. The credential: the laptop's token is a client profile (``profiles``: the
   ``MCP_CLIENT_PROFILES_JSON`` entry format, checked by ``client_profile``), kept
   in the environment or in the store (``stored_clients``); an OAuth token's grant
   is a profile too (``grants.grant_profile``: a consent-page preset's tools and
   states within the endpoint's own profile). A profile names its person (an email
   or ``owner``), the tools it may call (read from ``metacortex.tool_catalogue``),
   the states it reads, and its grants: ``space -> read | write`` and a default.
2. The person and their spaces: ``registry`` keeps spaces and people in the store
   (``read_directory`` gives a ``model.Directory``); a person has a role (owner,
   writer, reader) and is a member of some spaces at a level (``model``).
3. The level: ``model.effective_levels`` is the lowest of the person's role, their
   membership and the credential's grant, only in spaces that exist, none for an
   inactive person; ``profiles.with_directory`` computes it for a profile (an OAuth
   grant's is also capped by its endpoint's, space by space: ``grants``).
4. The call: ``Profile.access`` is the ``rules.Access`` every use case is handed;
   ``Access.space("work", Level.WRITE)`` answers, refusing a space held at read
   (forbidden) and one not held (exactly a missing one). ``Access`` also says which
   records the caller sees and whether retiring one is contested.

``client_directory`` keeps the profiles in effect in one server process (the
environment's and the store's, with the spaces and people), re-read within
``METACORTEX_CLIENT_REFRESH_SECONDS`` of a change (``marker``); ``scopes`` is what
an OAuth token may do whatever its grant lists. The web pages that change these
records live elsewhere: the consent page in ``metacortex.auth``, the owner's
sign-in in ``metacortex.owner``, the console's pages in ``metacortex.console``;
the owner's API over client records in ``metacortex.clients``. ``docs/SPACES.md``
is the guide.

This package imports nothing above the store: the use cases, the server and the
pages read it, never the reverse (``tests/test_module_imports.py``).
"""
