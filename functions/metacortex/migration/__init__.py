"""Moving from the TypeScript MetaCortex: its client profiles and its Firestore corpus.

``metacortex migrate profiles`` and ``metacortex migrate firestore`` (cli/migrate.py)
are the operator's entry points; docs/MIGRATING.md says what changes and why.
"""
