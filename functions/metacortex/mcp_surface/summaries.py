"""Compact, body-free summaries of tool requests and responses for ``memory_events``.

Events are kept for months and read by operators, so they carry shapes, not
contents: a memory body or an image becomes its length and a short hash
prefix (enough to tell two writes apart or spot a retry), a query its length.
Full queries go only to ``retrieval_query_events``, and only when enabled.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from metacortex.usecases.erase import event_summary

# Free text that may hold private content: never stored verbatim.
_TEXT_FIELDS: Final = frozenset(
    {"content", "query", "keyword", "image_base64", "corrected_content", "content_base64"}
)
_MAX_VERBATIM_CHARS: Final = 128
_HASH_PREFIX_CHARS: Final = 12


def _fingerprint(text: str) -> dict[str, Any]:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return {"chars": len(text), "sha256_prefix": digest[:_HASH_PREFIX_CHARS]}


def summarize_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for key, value in arguments.items():
        if value is None:
            continue
        if isinstance(value, str) and (key in _TEXT_FIELDS or len(value) > _MAX_VERBATIM_CHARS):
            summary[key] = _fingerprint(value)
        elif isinstance(value, str | bool | int | float):
            summary[key] = value
        elif isinstance(value, list | tuple):
            summary[key] = {"count": len(value)}
        else:
            summary[key] = {"type": type(value).__name__}
    return summary


def summarize_result(tool_name: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Ids, counts and states only. The original MetaCortex's keys are kept (``result_count``
    and ``result_ids`` for search; ``topic``, ``branch_state``, ``modality`` for save;
    ``superseding_id`` for deprecate) beside this server's own."""
    if tool_name == "save_context":
        item = payload["item"]
        meta = item["metadata"]
        return {
            "id": item["id"],
            "write_status": payload["write_status"],
            "topic": meta["topic"],
            "branch_state": meta["branch_state"],
            "modality": meta["modality"],
        } | _extraction(payload)
    if tool_name == "search_context":
        matches = payload["matches"]
        return {
            "result_count": len(matches),
            "result_ids": [match["id"] for match in matches],
            "match_count": len(matches),
            "top_score": matches[0]["score"] if matches else None,
            # Matches judged strong on their own evidence (retrieval/relevance.py).
            "strong_count": sum(match.get("relevance") == "strong" for match in matches),
        }
    if tool_name == "fetch_context":
        item = payload["item"]
        return {"id": item["id"], "branch_state": item["metadata"]["branch_state"]}
    if tool_name == "list_context":
        return {"item_count": len(payload["items"]), "has_more": payload["next_cursor"] is not None}
    if tool_name == "deprecate_context":
        item = payload["item"]
        return {
            "id": item["id"],
            "previous_state": payload["previous_state"],
            "superseding_id": item["superseded_by"],
        } | _contested(payload)
    if tool_name == "promote_context":
        return {"id": payload["item"]["id"], "previous_state": payload["previous_state"]}
    if tool_name == "set_default_space":
        return {
            "default_space": payload["default_space"],
            "previous_default_space": payload["previous_default_space"],
        }
    if tool_name == "consolidate_context":
        return {
            "merged_id": payload["item"]["merged_id"],
            "source_count": payload["source_count"],
        } | _contested(payload)
    if tool_name == "list_spaces":
        return {"space_count": len(payload["spaces"]), "default_space": payload["default_space"]}
    if tool_name == "who_am_i":
        return {"person_id": payload["person"]["id"], "space_count": len(payload["spaces"])}
    if tool_name == "erase_context":
        return event_summary(payload)
    if tool_name == "create_document":
        document = payload["document"]
        return {
            "document_id": document["id"],
            "write_status": payload["write_status"],
            "media_type": document["media_type"],
            "size": document["size"],
            "version": document["version"],
        } | {f"passages_{key}": count for key, count in payload["passages"].items()}
    if tool_name == "list_documents":
        return {
            "document_count": len(payload["documents"]),
            "has_more": payload["next_cursor"] is not None,
        }
    if tool_name == "get_document":
        return {
            "document_id": payload["document"]["id"],
            "offset": payload["offset"],
            "chars": len(payload["text"]),
        }
    return {}


def _extraction(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Where extraction is on: its status and cost (model calls, tokens), its counts, why
    it did not run, and the memories of others the text updates."""
    report = payload.get("extraction")
    return ({"extraction": dict(report)} if report else {}) | _contested(payload)


def _contested(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The memories of others a call left in place (the relation the call asserted)."""
    contested = payload.get("contested_ids")
    return {"contested_ids": list(contested)} if contested else {}
