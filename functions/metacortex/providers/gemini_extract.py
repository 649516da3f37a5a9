"""Fact extraction with Gemini: a saved text split into atomic facts, each related to
at most one of a few similar memories, in one ``generate_content`` call with a JSON
response schema (structured output).

The schema lists the candidates' ids as an enum, so the model is constrained to them;
the use case still drops any other id (``usecases/extraction.py``). An answer that is
not the JSON asked for is returned as ``unusable`` with the reason, never the model's
text (it may quote the memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from metacortex.errors import Unavailable
from metacortex.providers.base import (
    Candidate,
    ExtractorAnswer,
    ModelUsage,
)
from metacortex.providers.gemini import GenerationModel
from metacortex.providers.gemini_client import generated_text
from metacortex.providers.prompts import (
    EXTRACT_INSTRUCTION,
    MAX_FACTS,
    RELATION_TYPES,
    extraction_prompt,
    parse_facts,
)

if TYPE_CHECKING:
    from google import genai
    from google.genai import types

# Bounds what one save may cost in output (thinking included on models that think).
MAX_OUTPUT_TOKENS: Final = 4096


class GeminiExtractor(GenerationModel):
    """``Extractor`` over a Gemini generation model (``GEMINI_EXTRACTION_MODEL``)."""

    model_setting = "gemini_extraction_model"

    @property
    def method(self) -> str:
        return f"gemini:{self._model}"

    def extract(self, text: str, candidates: Sequence[Candidate]) -> ExtractorAnswer:
        from google.genai import types

        model = self._model
        ids = [candidate.id for candidate in candidates]
        config = types.GenerateContentConfig(
            system_instruction=EXTRACT_INSTRUCTION,
            temperature=0.0,
            response_mime_type="application/json",
            response_schema=response_schema(ids),
            max_output_tokens=MAX_OUTPUT_TOKENS,
        )
        prompt = extraction_prompt(text, candidates)

        def request(client: genai.Client) -> types.GenerateContentResponse:
            return client.models.generate_content(model=model, contents=prompt, config=config)

        response = self._client.call("fact extraction", request)
        usage = usage_of(response)
        try:
            answer, finish = generated_text(response, "fact extraction")
        except Unavailable as refused:  # blocked, stopped, empty: billed, but unusable
            return ExtractorAnswer((), usage, refused.message)
        if finish == "MAX_TOKENS":
            return ExtractorAnswer((), usage, "the answer was cut off at the output limit")
        try:
            facts = parse_facts(answer)
        except ValueError as malformed:
            return ExtractorAnswer((), usage, f"malformed answer: {malformed}")
        return ExtractorAnswer(facts, usage)


def response_schema(candidate_ids: Sequence[str]) -> types.Schema:
    """The answer's shape: ``{"facts": [{"text", "relation": {"id", "type", "note"}}]}``;
    no ``relation`` property when there is no candidate to relate to."""
    from google.genai import types

    properties = {"text": types.Schema(type=types.Type.STRING)}
    if candidate_ids:
        properties["relation"] = types.Schema(
            type=types.Type.OBJECT,
            nullable=True,
            properties={
                "id": types.Schema(type=types.Type.STRING, enum=list(candidate_ids)),
                "type": types.Schema(type=types.Type.STRING, enum=list(RELATION_TYPES)),
                "note": types.Schema(type=types.Type.STRING),
            },
            required=["id", "type", "note"],
            property_ordering=["id", "type", "note"],
        )
    fact = types.Schema(
        type=types.Type.OBJECT,
        properties=properties,
        required=["text"],
        property_ordering=list(properties),
    )
    return types.Schema(
        type=types.Type.OBJECT,
        properties={"facts": types.Schema(type=types.Type.ARRAY, items=fact, max_items=MAX_FACTS)},
        required=["facts"],
    )


def usage_of(response: types.GenerateContentResponse) -> ModelUsage:
    """One call and the tokens its ``usageMetadata`` reports (thinking counted as output)."""
    usage = response.usage_metadata
    if usage is None:
        return ModelUsage(calls=1)
    output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    return ModelUsage(calls=1, prompt_tokens=usage.prompt_token_count or 0, output_tokens=output)
