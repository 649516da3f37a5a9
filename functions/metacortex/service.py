"""``MemoryService``: the memory use cases behind one facade.

Each use case lives in a module of its own under ``metacortex.usecases`` (save,
search, reading, overview, lifecycle, undo, consolidation, erase, spaces, documents); this
class builds them over one store and one set of models and exposes their
methods, so the server, the
console, the CLI, operations and benches call ``service.save(...)``,
``service.search(...)`` and so on. Every rule of the tool contract
(``docs/SERVER.md``, "Tools and results") lives in those modules or in ``domain``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from metacortex.access.rules import Access
from metacortex.providers.base import Embedder, Extractor, ImageDescriber, Merger
from metacortex.storage.base import MemoryStore
from metacortex.timeline.reader import TimeReader
from metacortex.usecases.consolidation import Consolidation
from metacortex.usecases.document_erase import DocumentErasure
from metacortex.usecases.documents import Documents, DocumentSlots
from metacortex.usecases.erase import Erasure
from metacortex.usecases.extraction import FactExtraction
from metacortex.usecases.lifecycle import Lifecycle
from metacortex.usecases.options import ServiceOptions
from metacortex.usecases.overview import Overview
from metacortex.usecases.reading import Reading
from metacortex.usecases.relation_edits import RelationEditing
from metacortex.usecases.relations import Linking, graph
from metacortex.usecases.save import Saving
from metacortex.usecases.search import Searching
from metacortex.usecases.space_move import SpaceMoving
from metacortex.usecases.spaces import Spaces
from metacortex.usecases.undo import Undoing

if TYPE_CHECKING:
    from metacortex.documents import DocumentLimits

__all__ = ["Access", "MemoryService", "ServiceOptions"]


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        merger: Merger,
        describer: ImageDescriber | None = None,
        options: ServiceOptions | None = None,
        extractor: Extractor | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._options = options or ServiceOptions()
        store.bind_embedding(embedder.identity)
        # Time expressions in saved texts and in questions (dateparser loads on first use).
        self.times = TimeReader(self._options.time_languages) if self._options.read_times else None

        window = self._options.dedupe_window
        # save_context splits texts into facts where a model is configured; a correction
        # (the lifecycle's own save, ``Saving.save_as_given``) is saved as given.
        extraction = (
            FactExtraction(store, embedder, extractor, window) if extractor is not None else None
        )
        saving = Saving(store, embedder, describer, window, after_save=extraction, times=self.times)
        self.save = saving.save

        self.search = Searching(store, embedder, self._options, self.times).search

        reading = Reading(store)
        self.fetch = reading.fetch
        self.memory = reading.memory
        self.list_memories = reading.list_memories
        self.page = reading.page
        self.matching = reading.matching

        overview = Overview(store)
        self.topics = overview.topics
        self.recent = overview.recent

        lifecycle = Lifecycle(store, saving, window)
        self.deprecate = lifecycle.deprecate
        self.promote = lifecycle.promote
        self.correct = lifecycle.correct
        # The owner's (console) variants: each also returns how to undo it.
        self.deprecate_undoable = lifecycle.deprecate_undoable
        self.promote_undoable = lifecycle.promote_undoable
        self.correct_undoable = lifecycle.correct_undoable
        self.move = lifecycle.move
        self.move_to_space = SpaceMoving(store).move_to_space
        self.undo = Undoing(store).undo

        consolidation = Consolidation(store, embedder, merger)
        self.consolidate = consolidation.consolidate
        self.preview_consolidation = consolidation.preview_consolidation

        erasure = Erasure(store)
        self.plan_erase = erasure.plan_erase
        self.erase = erasure.erase

        self.related_context = Linking(store).related_context
        self.graph = partial(graph, store)
        editing = RelationEditing(store)
        self.relate = editing.relate
        self.invalidate_relation = editing.invalidate_relation

        spaces = Spaces(store)
        self.list_spaces = spaces.list_spaces
        self.who_am_i = spaces.who_am_i

        documents = Documents(
            store,
            embedder,
            self._options.document_limits,
            self._options.passage_chars,
        )
        self._documents = documents
        self.create_document = documents.create_document
        self.create_timed_document = documents.create_timed_document
        self.list_documents = documents.list_documents
        self.get_document = documents.get_document
        self.document = documents.document
        self.document_passages = documents.passages
        self.search_document = documents.search_document
        self.erase_document = DocumentErasure(store).erase_document

    @property
    def document_limits(self) -> DocumentLimits:
        """What one document may cost to read (the readers load on first use)."""
        return self._documents.limits

    @property
    def document_slots(self) -> DocumentSlots:
        """The documents being read and embedded here now (bounded by the limits)."""
        return self._documents.slots

    @property
    def store(self) -> MemoryStore:
        return self._store

    @property
    def embedding_key(self) -> str:
        """``model:dimension`` of the embedder (what a portable backup names as its source)."""
        return self._embedder.identity.key()
