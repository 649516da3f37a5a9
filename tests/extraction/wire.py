"""Gemini's structured output as the REST API returns it, for the extraction tests.

A ``generateContent`` answer to a request with ``responseMimeType: application/json``
carries the JSON as the text of its one part, and ``usageMetadata`` with the prompt,
candidate and (on thinking models) thought token counts. The fake counts tokens with
``wire_tokens`` (words and punctuation marks) over what the request really sent.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from tests.gemini_wire import FakeGemini, Json, Reply, wire_tokens

MODEL = "gemini-test-extract"


def request_text(body: Json) -> str:
    """Every text the request sent the model: system instruction and contents."""
    parts = [part for content in body.get("contents", []) for part in content["parts"]]
    parts += body.get("systemInstruction", {}).get("parts", [])
    return "\n".join(str(part.get("text", "")) for part in parts)


def structured_reply(answer: Any, *, thoughts: int = 0, finish: str = "STOP") -> Reply:
    """The answer ``answer`` (an object sent as JSON, or a raw string sent as is)."""

    def reply(request: httpx2.Request) -> httpx2.Response:
        body = FakeGemini.body(request)
        text = answer if isinstance(answer, str) else json.dumps(answer, indent=2)
        prompt, output = wire_tokens(request_text(body)), wire_tokens(text)
        usage: Json = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output + thoughts,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        }
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        return httpx2.Response(
            200,
            json={
                "candidates": [
                    {
                        "content": {"parts": [{"text": text}], "role": "model"},
                        "finishReason": finish,
                        "index": 0,
                    }
                ],
                "usageMetadata": usage,
                "modelVersion": MODEL,
                "responseId": "fake-response-1",
            },
        )

    return reply


def facts(*entries: tuple[str, dict[str, str] | None]) -> Json:
    """``{"facts": [...]}`` from (text, relation-or-None) pairs."""
    return {
        "facts": [
            {"text": text} | ({"relation": relation} if relation is not None else {})
            for text, relation in entries
        ]
    }


def ran_report(body: Json, answer: Json, *, thoughts: int = 0, **counts: int) -> Json:
    """The ``extraction`` report of a save whose one call sent ``body`` and was answered
    ``answer`` (with ``thoughts`` thinking tokens) by ``structured_reply``."""
    return {
        "status": "ran",
        "model": f"gemini:{MODEL}",
        "model_calls": 1,
        "prompt_tokens": wire_tokens(request_text(body)),
        "output_tokens": wire_tokens(json.dumps(answer, indent=2)) + thoughts,
        **counts,
    }
