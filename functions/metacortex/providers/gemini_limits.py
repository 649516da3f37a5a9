"""What one embedding request may carry on each Gemini route, and what of a text is sent.

Documented limits (docs/gemini.md, "Request limits"):

- Gemini API ``batchEmbedContents``: at most 100 texts per request.
- Vertex AI: ``gemini-embedding-001`` (and the other ``gemini-*`` embedding models,
  which the SDK sends to ``embedContent``) take ONE text per request; the older
  ``:predict`` models take at most 250 texts and 20,000 tokens per request.
- Every route: 2,048 tokens per text; the service silently truncates longer text.

Rather than rely on that silent truncation, the embedder sends an explicit leading
window of each text (``leading_window``); keyword search still indexes the whole text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

GEMINI_API_MAX_TEXTS: Final = 100
VERTEX_PREDICT_MAX_TEXTS: Final = 250
VERTEX_PREDICT_MAX_TOKENS: Final = 20_000
MAX_TEXT_TOKENS: Final = 2_048
# About 2,000 tokens of English prose (~4 characters a token). Token-dense text (code,
# CJK) can still exceed 2,048 tokens in this window: the service then keeps the first
# 2,048 tokens, i.e. still a leading part of the window.
EMBED_WINDOW_CHARS: Final = 8_000
# Texts per :predict request so that even full windows stay under 20,000 tokens.
VERTEX_PREDICT_TEXTS: Final = VERTEX_PREDICT_MAX_TOKENS // (EMBED_WINDOW_CHARS // 2)


@dataclass(frozen=True, slots=True)
class EmbedRoute:
    """How many texts go in one request and how many requests run at once."""

    name: str
    texts_per_request: int
    concurrency: int

    @classmethod
    def for_model(cls, *, vertexai: bool, model: str, concurrency: int) -> EmbedRoute:
        if concurrency < 1:
            raise ValueError("embedding concurrency must be at least 1")
        if not vertexai:
            return cls("gemini-api", GEMINI_API_MAX_TEXTS, concurrency)
        model_id = model.rsplit("/", 1)[-1]
        if "gemini" in model_id:
            return cls("vertex-embed-content", 1, concurrency)
        return cls("vertex-predict", VERTEX_PREDICT_TEXTS, concurrency)


def leading_window(text: str, limit: int = EMBED_WINDOW_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, at the last whitespace when there is one."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[:cut].rstrip() if cut > limit // 2 else head
