"""The composition root: turns ``Settings`` into a wired ``MemoryService``.

Backends are imported lazily so the embedded default never imports Google
clients and a Cloud Functions cold start never loads the ONNX model.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from metacortex.config import Settings
from metacortex.errors import ConfigurationError
from metacortex.providers.base import Embedder, Extractor, ImageDescriber, Merger
from metacortex.providers.offline_merge import SentenceUnionMerger
from metacortex.service import MemoryService, ServiceOptions
from metacortex.storage.base import MemoryStore

if TYPE_CHECKING:
    from metacortex.documents import DocumentLimits

_CLOUD_MODULES = {
    "firestore": "google.cloud.firestore",
    "gemini": "google.genai",
}


def require_cloud_extra(what: str, backend: str) -> None:
    """Refuse a cloud-only ``backend`` on a core install with the extra to install.

    ``pip install metacortex`` (the laptop install) has no Google libraries; a
    command or setting that needs them says so instead of ending in an ImportError.
    """
    module = _CLOUD_MODULES[backend]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        raise ConfigurationError(
            f"{what} needs the Google Cloud libraries ({module} is not installed): "
            "install them with `pip install 'metacortex[cloud]'`"
        )


def check_configuration(settings: Settings) -> None:
    """The checks ``build_service`` would fail on that need no I/O and no heavy import,
    so that a server starting in the background still refuses a bad configuration
    before it answers anything (ConfigurationError, saying what to set)."""
    if settings.store_kind == "firestore":
        require_cloud_extra("METACORTEX_STORE=firestore", "firestore")
    if settings.embeddings_kind == "gemini" or settings.uses_gemini_generation:
        require_cloud_extra("Gemini (METACORTEX_EMBEDDINGS=gemini or Gemini generation)", "gemini")
        from metacortex.providers.gemini_client import Connection

        Connection.from_settings(settings)
    if settings.extracts_facts and not settings.uses_gemini_generation:
        raise ConfigurationError(
            "METACORTEX_EXTRACTION=gemini needs a generation model, and none is configured: "
            "set METACORTEX_USE_GEMINI_GENERATION=true and GEMINI_API_KEY (or run the cloud "
            "deployment), or set METACORTEX_EXTRACTION=off"
        )


def build_store(settings: Settings) -> MemoryStore:
    if settings.store_kind == "firestore":
        require_cloud_extra("METACORTEX_STORE=firestore", "firestore")
        from metacortex.storage.firestore import FirestoreStore

        return FirestoreStore.from_settings(settings)
    from metacortex.storage.sqlite import SQLiteStore

    return SQLiteStore(settings.sqlite_path)


def build_embedder(settings: Settings) -> Embedder:
    if settings.embeddings_kind == "gemini":
        require_cloud_extra("METACORTEX_EMBEDDINGS=gemini", "gemini")
        from metacortex.providers.gemini import GeminiEmbedder

        return GeminiEmbedder.from_settings(settings)
    from metacortex.providers.local import MiniLMEmbedder

    return MiniLMEmbedder.load()


def load_embedder_ahead(settings: Settings) -> None:
    """Start loading the local embedding model on a thread (a server's start, which has
    other work meanwhile); ``build_embedder`` then waits for it. Nothing to load ahead
    for Gemini."""
    if settings.embeddings_kind == "local":
        from metacortex.providers.local import load_ahead

        load_ahead()


def build_generation(settings: Settings) -> tuple[Merger, ImageDescriber | None]:
    if settings.uses_gemini_generation:
        require_cloud_extra("Gemini generation (METACORTEX_USE_GEMINI_GENERATION)", "gemini")
        from metacortex.providers.gemini import GeminiImageDescriber, GeminiMerger

        return GeminiMerger.from_settings(settings), GeminiImageDescriber.from_settings(settings)
    return SentenceUnionMerger(), None


def build_extractor(settings: Settings) -> Extractor | None:
    """Fact extraction on save_context: only where it is on and a generation model is."""
    if not settings.extracts_facts:
        return None
    check_configuration(settings)
    from metacortex.providers.gemini_extract import GeminiExtractor

    return GeminiExtractor.from_settings(settings)


def service_options(settings: Settings) -> ServiceOptions:
    from datetime import timedelta

    return ServiceOptions(
        search_result_limit=settings.search_result_limit,
        dedupe_window=timedelta(seconds=settings.metacortex_dedupe_window_seconds),
        dense_weight=settings.metacortex_dense_weight,
        conversational_context=settings.metacortex_conversation_context,
        typo_tolerance=settings.metacortex_typo_tolerance,
        read_times=settings.metacortex_time_reading,
        time_languages=settings.metacortex_time_languages,
        strong_similarity=settings.metacortex_strong_similarity,
        document_limits=lambda: _document_limits(settings),
        passage_chars=settings.metacortex_document_passage_chars,
    )


def _document_limits(settings: Settings) -> DocumentLimits:
    from metacortex.documents import DocumentLimits

    return DocumentLimits.from_settings(settings)


def open_store(settings: Settings, *, load_vectors_ahead: bool = False) -> MemoryStore:
    """The configured store. ``load_vectors_ahead`` (a server's start): on the embedded
    default, the store reads its vectors on a thread while the model loads (and
    ``serve`` imports its app), instead of at the first search."""
    store = build_store(settings)
    if load_vectors_ahead and settings.embeddings_kind == "local":
        from metacortex.providers.local import IDENTITY
        from metacortex.storage.sqlite import SQLiteStore

        if isinstance(store, SQLiteStore):
            store.load_vectors_in_background(IDENTITY)
    return store


def build_service(
    settings: Settings, *, load_vectors_ahead: bool = False, store: MemoryStore | None = None
) -> MemoryService:
    """The service on the configured store (``store``, already open, or ``open_store``)
    and providers. On failure the store is closed, whoever opened it."""
    if store is None:
        store = open_store(settings, load_vectors_ahead=load_vectors_ahead)
    try:
        merger, describer = build_generation(settings)
        return MemoryService(
            store,
            build_embedder(settings),
            merger=merger,
            describer=describer,
            options=service_options(settings),
            extractor=build_extractor(settings),
        )
    except BaseException:
        store.close()
        raise
