"""The memories page's listing: newest first over one space or, for the owner's "All
spaces", several, each read from the store page by page and merged by time; optionally
only what one person wrote or one client saved.

Why it is built here, and what it costs:

- **All spaces.** The store has no query across spaces, by design (``docs/SPACES.md``):
  each space is read on its own (``list_page`` with that space's filter) and the pages
  are merged by (created_at, id), the order every space already uses, so one position
  (the last record shown) pages through all of them both ways. A page reads at most
  ``PAGE + 1`` records from each space, and the total beside it is one count per space.
  At most ``MAX_SPACES`` spaces are read (by key, ``default`` first); the page says so
  when some are left out.
- **Written by, and client.** The store filters by space, topic, state, origin,
  validity and creation date itself (``MemoryFilter``); it has no index of who wrote a
  record (an index per filter combination would double the Firestore indexes for each
  field added, ``storage/firestore_queries.py``). The person and client filters are
  matched on the records read, newest first, in batches of ``SCAN_BATCH`` per space, until
  a page is full or ``SCAN_LIMIT`` records were read; the page then says how many it read
  and continues from there ("Older"). So the total of such a listing is not known: the
  page says how many of the records read matched.
- **Containing words** (the keyword box): each space's best keyword matches (at most
  ``limit``), merged by keyword score and cut to ``limit``; the person and client filters
  then keep theirs among them.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from metacortex.domain import limits
from metacortex.domain.records import Memory, to_wire_time
from metacortex.errors import InvalidArgument
from metacortex.storage.base import ListOrder, MemoryFilter, MemoryStore, PageKey

# The owner's "All spaces" reads at most this many spaces per page.
MAX_SPACES: Final = 20
# A page filtered by person or client reads at most this many records.
SCAN_LIMIT: Final = 500
SCAN_BATCH: Final = 100
# ``Author.person`` for memories written before attribution (no author recorded).
NOBODY: Final = "unattributed"


@dataclass(frozen=True, slots=True)
class Author:
    """Who wrote the memories to list: a person's id (or ``NOBODY``) and a client (the
    credential that saved them: ``created_by.via``); None means any."""

    person: str | None = None
    client: str | None = None

    @property
    def active(self) -> bool:
        return self.person is not None or self.client is not None

    def matches(self, memory: Memory) -> bool:
        author = memory.created_by
        if self.person == NOBODY:
            if author is not None:
                return False
        elif self.person is not None and (author is None or author.person != self.person):
            return False
        return self.client is None or (author is not None and author.via == self.client)


@dataclass(frozen=True, slots=True)
class Listing:
    """One page, newest first, and where the pages beside it start."""

    memories: list[Memory]
    older: PageKey | None  # the next page down starts strictly older than this
    newer: PageKey | None  # the page above starts strictly newer than this
    total: int | None  # records the store's filters match (None: filtered by author)
    read: int = 0  # records read to fill the page (by author: the ones matched among)
    cut_short: bool = False  # the author filter stopped at SCAN_LIMIT records read


def encode_position(key: PageKey) -> str:
    raw = json.dumps({"c": to_wire_time(key.created_at), "i": key.id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_position(text: str) -> PageKey:
    bad = InvalidArgument("this page's link is not valid; start again from the newest memories")
    try:
        payload = json.loads(base64.urlsafe_b64decode((text + "=" * (-len(text) % 4)).encode()))
        created = limits.parse_instant(str(payload["c"]), "position")
        memory_id = str(payload["i"])
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError, InvalidArgument):
        raise bad from None
    if created is None or not limits.ID_PATTERN.fullmatch(memory_id):
        raise bad
    return PageKey(created, memory_id)


def key_of(memory: Memory, order: ListOrder = "created") -> PageKey:
    """Where ``memory`` stands in a listing of ``order`` (``PageKey``)."""
    at = memory.occurrence.at if order == "occurred" else memory.created_at
    return PageKey(at, memory.id)


def _order(memory: Memory, order: ListOrder) -> tuple[object, str]:
    key = key_of(memory, order)
    return (key.created_at, key.id)


@dataclass
class _Stream:
    """One space's records in listing order, read ``batch`` at a time."""

    store: MemoryStore
    where: MemoryFilter
    after: PageKey | None
    ascending: bool
    batch: int
    order: ListOrder = "created"
    buffer: list[Memory] = field(default_factory=list)
    done: bool = False

    def head(self) -> Memory | None:
        if not self.buffer and not self.done:
            found = self.store.list_page(
                self.where, self.batch, self.after, oldest_first=self.ascending, order=self.order
            )
            self.done = len(found) < self.batch
            if found:
                self.after = key_of(found[-1], self.order)
            self.buffer = found
        return self.buffer[0] if self.buffer else None

    def pop(self) -> Memory:
        return self.buffer.pop(0)


def page(
    store: MemoryStore,
    wheres: Sequence[MemoryFilter],
    *,
    size: int,
    position: PageKey | None = None,
    newer: bool = False,
    author: Author = Author(),
    order: ListOrder = "created",
) -> Listing:
    """A page of ``size`` records newest first from the spaces of ``wheres`` (one filter
    per space), strictly older than ``position`` (``newer``: the ``size`` records just
    newer than it, still shown newest first); only ``author``'s when given. ``order``:
    by when they were saved, or when they happened (``occurred``)."""
    batch = SCAN_BATCH if author.active else size + 1
    streams = [_Stream(store, where, position, newer, batch, order) for where in wheres]
    kept: list[Memory] = []
    read = 0
    last: Memory | None = None
    cut_short = False
    while len(kept) <= size:
        heads = [(memory, stream) for stream in streams if (memory := stream.head()) is not None]
        if not heads:
            break
        pick = min if newer else max
        _, stream = pick(heads, key=lambda pair: _order(pair[0], order))
        last = stream.pop()
        read += 1
        if author.matches(last):
            kept.append(last)
        if author.active and read >= SCAN_LIMIT and len(kept) <= size:
            cut_short = any(s.buffer or not s.done for s in streams)
            break
    shown = kept[:size]
    # Beyond the page in the direction read: the record after the last one shown, or,
    # when the author filter stopped early, the last record read.
    onward: PageKey | None = None
    if len(kept) > size:
        onward = key_of(shown[-1], order)
    elif cut_short and last is not None:
        onward = key_of(last, order)
    total = None if author.active else sum(store.count_memories(where) for where in wheres)
    if newer:
        # Read oldest first from ``position``: shown newest first; older pages follow.
        shown.reverse()
        back = key_of(shown[-1], order) if shown else position
        return Listing(shown, back, onward, total, read, cut_short)
    ahead = (key_of(shown[0], order) if shown else position) if position is not None else None
    return Listing(shown, onward, ahead, total, read, cut_short)


def word_matches(
    search: Callable[[MemoryFilter], list[tuple[Memory, float]]],
    wheres: Sequence[MemoryFilter],
    *,
    limit: int,
    author: Author = Author(),
) -> list[Memory]:
    """The best keyword matches of every space (``search``: one space's, best first),
    merged by score and cut to ``limit``; only ``author``'s when given."""
    hits = [hit for where in wheres for hit in search(where)]
    hits.sort(key=lambda hit: -hit[1])
    return [memory for memory, _ in hits if author.matches(memory)][:limit]
