"""What the configured models are and what fact extraction costs, in words: said by
``metacortex serve``'s banner and the deploy preflight, so an operator sees that every
save calls a chat model before the first bill does. Reads ``Settings`` only; imports
no provider."""

from __future__ import annotations

from typing import Final

from metacortex.config import Settings

# Measured on LoCoMo's dev conversation 26 with the extraction prompt (docs/gemini.md,
# "Cost"): the instruction, the saved text and 5 candidates' summaries.
EXTRACTION_COST: Final = (
    "one chat call per save_context (about 600 prompt tokens, and 50-90 output tokens "
    "per fact, more on models that think), plus one embedding request when a text holds "
    "several facts; counted per save in its event (docs/gemini.md, Cost). "
    "METACORTEX_EXTRACTION=off turns it off."
)


def _openai_model(settings: Settings, model: str) -> str:
    prefix = "azure-openai" if settings.azure_openai_endpoint else "openai"
    return f"{prefix}:{model}"


def embedding_model(settings: Settings) -> str:
    if settings.embeddings_kind == "gemini":
        return f"gemini:{settings.gemini_embedding_model} ({settings.gemini_embedding_dimensions})"
    if settings.embeddings_kind == "openai":
        return _openai_model(settings, settings.openai_embedding_model)
    return "all-MiniLM-L6-v2-int8 (local)"


def chat_model(settings: Settings) -> str | None:
    """The model merges and extraction use; None without one."""
    if settings.generation_kind == "gemini":
        return f"gemini:{settings.gemini_merge_model}"
    if settings.generation_kind == "openai":
        return _openai_model(settings, settings.openai_chat_model)
    return None


def extraction_model(settings: Settings) -> str | None:
    if not settings.extracts_facts:
        return None
    if settings.generation_kind == "gemini":
        return f"gemini:{settings.gemini_extraction_model}"
    if settings.generation_kind == "openai":
        model = settings.openai_extraction_model or settings.openai_chat_model
        return _openai_model(settings, model)
    return None


def image_readers(settings: Settings, *, ocr_installed: bool) -> str:
    readers: list[str] = []
    if settings.metacortex_ocr != "off" and ocr_installed:
        readers.append("OCR (local)")
    if settings.generation_kind == "gemini":
        readers.append(f"gemini:{settings.gemini_multimodal_model}")
    elif settings.describes_images and settings.openai_vision_model:
        readers.append(_openai_model(settings, settings.openai_vision_model))
    return " + ".join(readers) if readers else "none (image saves are refused)"


def models_summary(settings: Settings, *, ocr_installed: bool) -> list[str]:
    """Lines for the banner and the preflight: the models, then whether extraction is
    on and what it costs per save. None for the offline default (the local model, no
    model service: nothing is billed, and the first start's banner keeps to a screen)."""
    chat = chat_model(settings)
    if chat is None and settings.embeddings_kind == "local":
        return []
    lines = [
        f"embeddings {embedding_model(settings)}; "
        f"merges {chat or 'offline sentence merge'}; "
        f"images {image_readers(settings, ocr_installed=ocr_installed)}"
    ]
    extraction = extraction_model(settings)
    if extraction is None:
        reason = "METACORTEX_EXTRACTION=off" if chat else "no chat model configured"
        lines.append(f"fact extraction off ({reason})")
    else:
        lines.append(f"fact extraction ON with {extraction}: {EXTRACTION_COST}")
    return lines
