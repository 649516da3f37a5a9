"""Time expressions: when a saved text says it happened, and what time a question names.

``reader.TimeReader`` finds and resolves them with ``dateparser`` (loaded on first use);
``stated`` turns what a text says into a memory's ``occurred_at``; ``question`` turns a
question's words into a range of time to search in. Nothing here knows any dataset's
format: a memory's text is whatever an agent saved.
"""
