"""Shared memory: spaces, the people who use them, and what each credential may do there.

``model`` holds the values (``Space``, ``Person``, ``Role``, ``Level``, ``Grants``
and ``effective_levels``); ``registry`` keeps spaces and people in the store and
is the owner's API over them (console, ``metacortex space`` and ``metacortex
person``). The effective levels reach every tool, resource, prompt and page
through ``usecases.access.Access``, built once per caller (``server.profiles``).
``docs/SPACES.md`` is the guide.
"""
