"""A realistic store for the console's layout tests and screenshots: hundreds of memories
over two months, long topics, long first lines (and unbroken URLs), multi-line notes,
drafts (some saying "Draft:"), deprecated chains, corrections, a consolidation, links
to erased records, an image, OAuth grants with long names, and two weeks of events from
many clients.

Bulk records and events are seeded by ``bench/console.py``'s own seeders (records
written with ``store.insert`` over 60 days in every state; events in the shape
``kernel/events.py`` writes, tool calls with ``top_score`` for searches and refusals, over
the 14 days the activity page reads), with this module's topics, texts and clients;
every lifecycle link (deprecate, correct, consolidate, erase) goes through
``MemoryService``, as the tools and the console do.
"""

from __future__ import annotations

import base64
import itertools
import random
from dataclasses import dataclass, replace
from typing import Any, Final

from bench.console import seed_events, seed_memories
from metacortex.domain import limits
from metacortex.service import Access, MemoryService
from tests.conftest import PNG_1X1

ADMIN: Final = Access.admin()
LONG_TOPICS: Final = (
    "clients/acme-international-holdings/platform-migration/2026-q3",
    "research:retrieval-augmented-generation/evaluation/longcontext",
    "household/maintenance/heating-ventilation-and-air-conditioning-x",
)
TOPICS: Final = (
    *LONG_TOPICS,
    "garden",
    "trip",
    "work",
    "reading-list",
    "health",
    "finance/taxes-2026",
    "recipes",
    "kmp-networking",
    "ui-settings",
    "standups",
    "family",
    "car",
    "home-server",
)
CLIENTS: Final = (
    "claude-code-on-the-build-server-with-a-long-profile-name",
    "chatgpt-connector",
    "codex",
    "cursor",
    "web",
    "reader",
    "nightly-import-agent",
    "vscode-copilot",
)
WORDS: Final = (
    "billing migration launch onboarding invoice meeting standup deadline review budget "
    "garden tomatoes hotel flight Lisbon station report heater landlord marathon recipe "
    "database index cache latency release roadmap customer support contract renewal "
    "furnace filter warranty dentist appointment passport renewal mortgage statement"
).split()
LONG_FIRST_LINE: Final = (
    "The platform migration steering group agreed that the billing service moves to the new "
    "cluster only after the invoice reconciliation job has run cleanly for three consecutive "
    "month-ends, that the legacy database stays read-only for ninety days afterwards, and that "
    "every customer-facing change is announced in the status page two weeks in advance"
)
LONG_URL: Final = (
    "https://docs.example.com/platform/migration/runbooks/2026/q3/"
    "billing-service-cutover-checklist-with-rollback-steps-and-owner-contacts-"
    "version-7-final-final-reviewed-by-the-infrastructure-team.html"
)


@dataclass(frozen=True)
class Corpus:
    """Ids worth opening: each is a page the layout tests visit."""

    bulk: list[str]
    drafts_topic: str
    chain: list[str]  # oldest first: each superseded by the next
    corrected: str  # deprecated as corrected; its correction is chain-free
    correction: str
    merged: str  # a consolidation with one erased source
    erased_source: str
    broken_chain: str  # superseded by a record later erased
    image: str
    long_line: str


def _sentence(rng: random.Random, number: int) -> str:
    picked = rng.sample(WORDS, 7)
    return (
        f"Note {number}: the {picked[0]} {picked[1]} needs {picked[2]} before the "
        f"{picked[3]}; ask about the {picked[4]} {picked[5]} and the {picked[6]}."
    )


def _content(rng: random.Random, number: int) -> str:
    if number % 29 == 0:
        return f"{LONG_FIRST_LINE}.\nDetails: {_sentence(rng, number)}"
    if number % 31 == 0:
        return f"Runbook: {LONG_URL}\nRead it before the cut-over."
    if number % 7 == 0:
        return f"Checklist {number}\n- {_sentence(rng, number)}\n- {_sentence(rng, number + 1)}"
    return _sentence(rng, number)


def seed_links(service: MemoryService) -> Corpus:
    """Lifecycle links made through the service, newest of all, so they open the listing."""

    def save(content: str, topic: str, **extra: Any) -> str:
        return str(service.save(ADMIN, content=content, topic=topic, **extra)["item"]["id"])

    long_topic = LONG_TOPICS[0]
    chain = [
        save(f"The cut-over window is {when}.", long_topic)
        for when in ("Saturday 02:00-06:00 UTC", "Sunday 01:00-05:00 UTC", "Sunday 03:00 UTC")
    ]
    for older, newer in itertools.pairwise(chain):
        service.deprecate(ADMIN, id=older, superseding_id=newer, supersession_reason="changed")
    corrected = save("The furnace filter is 16x20x1.", LONG_TOPICS[2])
    correction = service.correct(
        ADMIN, id=corrected, corrected_content="The furnace filter is 16x25x1 (MERV 11)."
    )["item"]["id"]
    sources = [
        save(text, "kmp-networking", draft=True)
        for text in (
            "Draft: retries use exponential backoff.",
            "Draft: the backoff is capped at 8 seconds.",
            "Draft: retries use exponential backoff. Jitter is added to every retry.",
        )
    ]
    merged = service.consolidate(ADMIN, topic="kmp-networking", source_ids=sources)["item"][
        "merged_id"
    ]
    service.erase(ADMIN, ids=[sources[1]], erased_by="owner (console)")
    broken = save("Standup is at 9:00 in room A.", "standups")
    replacement = save("Standup is at 9:30 in room B.", "standups")
    service.deprecate(ADMIN, id=broken, superseding_id=replacement, supersession_reason="changed")
    service.erase(ADMIN, ids=[replacement], erased_by="owner (console)")
    for text in (
        "Draft: we fly to Lisbon on May 3.",
        "Draft: the hotel is near Rossio station.",
        "We fly to Lisbon on May 3.",
        "Draft: book the airport transfer for 10:40.",
    ):
        save(text, "trip", draft=True)
    image = save(
        "Whiteboard from the planning meeting",
        "work",
        image_base64=base64.b64encode(PNG_1X1).decode(),
        image_mime_type="image/png",
        artifact_refs=[LONG_URL.replace("https://", "gs://")[:200]],
    )
    long_line = save(f"{LONG_FIRST_LINE}.", LONG_TOPICS[1])
    return Corpus(
        bulk=[],
        drafts_topic="trip",
        chain=chain,
        corrected=corrected,
        correction=str(correction),
        merged=str(merged),
        erased_source=sources[1],
        broken_chain=broken,
        image=image,
        long_line=long_line,
    )


def build(service: MemoryService, memories: int = 320, seed: int = 7) -> Corpus:
    for topic in TOPICS:
        limits.check_topic(topic)  # every topic is one a client could send
    rng = random.Random(seed)
    bulk = seed_memories(service, memories, rng, topics=TOPICS, write=_content)
    corpus = seed_links(service)
    seed_events(service, rng, per_day=60, clients=CLIENTS)
    return replace(corpus, bulk=bulk)
