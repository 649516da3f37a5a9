"""A realistic store for the console's layout tests and screenshots: hundreds of memories
over two months, long topics, long first lines (and unbroken URLs), multi-line notes,
drafts (some saying "Draft:"), deprecated chains, corrections, a consolidation, links
to erased records, an image, OAuth grants with long names, and two weeks of events from
many clients.

Bulk records are written with ``store.insert`` (as ``bench/console.py`` seeds), so their
creation times spread over 60 days; every lifecycle link (deprecate, correct,
consolidate, erase) goes through ``MemoryService``, as the tools and the console do.
Events have the shape ``server/events.py`` writes (tool calls with ``top_score`` for
searches, refusals), spread over the 14 days the activity page reads.
"""

from __future__ import annotations

import base64
import itertools
import random
import secrets
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Final

from metacortex.domain import limits
from metacortex.domain.records import (
    BranchState,
    Memory,
    Modality,
    Origin,
    Provenance,
    new_memory_id,
    to_wire_time,
    utc_now,
)
from metacortex.service import Access, MemoryService
from metacortex.storage.base import Event
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


def seed_bulk(service: MemoryService, count: int, rng: random.Random) -> list[str]:
    """``count`` records over the last 60 days: 85 % active, 10 % drafts, 5 % deprecated."""
    store = service.store
    now = utc_now()
    texts = [_content(rng, number) for number in range(count)]
    vectors = service._embedder.embed_documents(texts)  # seeding in one batch, as bench does
    ids: list[str] = []
    for number, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        created = now - timedelta(minutes=(count - number) * 60 * 24 * 60 / count)
        roll = rng.random()
        state = (
            BranchState.ACTIVE
            if roll < 0.85
            else BranchState.WIP
            if roll < 0.95
            else BranchState.DEPRECATED
        )
        memory = Memory(
            id=new_memory_id(),
            content=text,
            retrieval_text=text,
            topic=TOPICS[number % len(TOPICS)],
            branch_state=state,
            modality=Modality.TEXT,
            created_at=created,
            updated_at=created,
            provenance=Provenance(origin=rng.choice(tuple(Origin))),
        )
        store.insert(memory, vector, secrets.token_hex(16), now)
        ids.append(memory.id)
    return ids


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


def seed_events(service: MemoryService, rng: random.Random, per_day: int = 60) -> None:
    """Tool calls of many clients over 14 days (searches with their top fused score; a
    share of them nonsense that still found something), refusals by reason."""
    now = utc_now()
    events: list[Event] = []
    for day in range(14):
        for _ in range(per_day):
            stamp = min(now, now - timedelta(days=day, seconds=rng.randrange(0, 86_400)))
            fields: dict[str, Any]
            if rng.random() < 0.06:
                fields = {
                    "client_id": None,
                    "event_type": "request_rejected",
                    "status": "rejected",
                    "reason": rng.choice(
                        ("unauthorized", "rate_limited", "origin_not_allowed", "host_not_allowed")
                    ),
                    "latency_ms": 0.4,
                }
            else:
                tool = rng.choice(("search_context", "save_context", "fetch_context"))
                response: dict[str, Any] = {}
                if tool == "search_context":
                    count = rng.choice((0, 5, 10, 20, 20))
                    top = round(rng.uniform(0.3, 1.0), 6) if count else None
                    response = {"result_count": count, "match_count": count, "top_score": top}
                fields = {
                    "client_id": rng.choice(CLIENTS),
                    "event_type": "tool_call",
                    "tool_name": tool,
                    "status": "ok",
                    "latency_ms": round(rng.lognormvariate(3.0, 0.6), 3),
                    "request": {},
                    "response": response,
                }
            fields["timestamp"] = to_wire_time(stamp)
            events.append(Event("memory_events", stamp, now + timedelta(days=90), fields))
    events.sort(key=lambda event: event.timestamp)
    service.store.record_events(events)


def build(service: MemoryService, memories: int = 320, seed: int = 7) -> Corpus:
    for topic in TOPICS:
        limits.check_topic(topic)  # every topic is one a client could send
    rng = random.Random(seed)
    bulk = seed_bulk(service, memories, rng)
    corpus = seed_links(service)
    seed_events(service, rng)
    return replace(corpus, bulk=bulk)
