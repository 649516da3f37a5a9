"""The composition root: turns ``Settings`` into a wired ``MemoryService``.

Backends are imported lazily so the embedded default never imports Google
clients and a Cloud Functions cold start never loads the ONNX model.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
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
    if settings.uses_openai:
        require_openai()
        from metacortex.providers.openai_client import OpenAIConnection

        OpenAIConnection.from_settings(settings)
        if settings.embeddings_kind == "openai":
            from metacortex.providers.openai_models import embedding_dimension

            embedding_dimension(settings)
    if settings.extracts_facts and settings.generation_kind == "none":
        asked = settings.metacortex_extraction
        raise ConfigurationError(
            f"METACORTEX_EXTRACTION={asked} needs a generation model, and none is configured: "
            "set METACORTEX_GENERATION=openai with OPENAI_BASE_URL (docs/openai.md), or "
            "METACORTEX_USE_GEMINI_GENERATION=true and GEMINI_API_KEY (or run the cloud "
            "deployment), or set METACORTEX_EXTRACTION=off"
        )
    if settings.metacortex_extraction == "gemini" and settings.generation_kind != "gemini":
        raise ConfigurationError(
            "METACORTEX_EXTRACTION=gemini needs Gemini generation, and "
            f"METACORTEX_GENERATION is {settings.generation_kind}: set METACORTEX_EXTRACTION=on"
        )
    if settings.metacortex_ocr == "on":
        from metacortex import ocr

        if not ocr.installed():
            raise ConfigurationError(
                f"METACORTEX_OCR=on, but OCR is not installed: {ocr.INSTALL_HINT}"
            )


def require_openai() -> None:
    """Refuse OpenAI-compatible providers when the ``openai`` package is missing."""
    try:
        found = importlib.util.find_spec("openai") is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        raise ConfigurationError(
            "OpenAI-compatible providers need the openai package: "
            "install it with `pip install 'metacortex[openai]'`"
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
    if settings.embeddings_kind == "openai":
        require_openai()
        from metacortex.providers.openai_models import OpenAIEmbedder

        return OpenAIEmbedder.from_settings(settings)
    from metacortex.providers.local import MiniLMEmbedder

    return MiniLMEmbedder.load()


@contextmanager
def embedder_loading_ahead(settings: Settings) -> Iterator[None]:
    """Inside: the local embedding model loads on a thread (a server's start, which has
    other work meanwhile); ``build_embedder`` waits for it. The block never ends before
    the load did, however it ends (a refusal, an error, Ctrl-C): a process that exits
    while the model is being built aborts inside onnxruntime, after its refusal was
    printed. Nothing to load ahead for Gemini."""
    if settings.embeddings_kind != "local":
        yield
        return
    from metacortex.providers.local import load_ahead

    loader = load_ahead()
    try:
        yield
    finally:
        loader.join()


def build_generation(settings: Settings) -> tuple[Merger, ImageDescriber | None]:
    """The merger (the chat model's, else the offline sentence merge) and what reads saved
    images: OCR where it is installed and on, plus a model's description where one is
    configured (None when neither is: image saves are then refused)."""
    merger: Merger = SentenceUnionMerger()
    vision: ImageDescriber | None = None
    if settings.generation_kind == "gemini":
        require_cloud_extra("Gemini generation (METACORTEX_GENERATION)", "gemini")
        from metacortex.providers.gemini import GeminiImageDescriber, GeminiMerger

        merger = GeminiMerger.from_settings(settings)
        vision = GeminiImageDescriber.from_settings(settings)
    elif settings.generation_kind == "openai":
        require_openai()
        from metacortex.providers.openai_models import OpenAIImageDescriber, OpenAIMerger

        merger = OpenAIMerger.from_settings(settings)
        if settings.describes_images:
            vision = OpenAIImageDescriber.from_settings(settings)
    return merger, image_reader(settings, vision)


def image_reader(settings: Settings, vision: ImageDescriber | None) -> ImageDescriber | None:
    """OCR beside ``vision`` where the extra is installed and METACORTEX_OCR is not off."""
    from metacortex import ocr

    if settings.metacortex_ocr == "off" or not ocr.installed():
        return vision
    return ocr.ImageReader(ocr.shared_engine(), vision)


def build_extractor(settings: Settings) -> Extractor | None:
    """Fact extraction on save_context: wherever it is on and a chat model is configured."""
    if not settings.extracts_facts:
        return None
    check_configuration(settings)
    if settings.generation_kind == "openai":
        from metacortex.providers.openai_models import OpenAIExtractor

        return OpenAIExtractor.from_settings(settings)
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
