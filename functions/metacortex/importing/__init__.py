"""Importing conversation history: a ChatGPT or Claude data export becomes documents, one
per conversation, whose passages are its messages at their own times (docs/importing.md).

``archive`` opens the export within ``limits`` (refusing hostile archives before anything
is written), ``chatgpt`` and ``claude`` read its ``conversations.json`` into the
``conversation`` model, and ``run`` adds the conversations through the documents use case
and sums up what was imported and what was skipped, and why."""
