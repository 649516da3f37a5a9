"""Where evaluation cases live: a local NDJSON file, or Firestore's ``retrieval_eval_cases``.

The original MetaCortex kept its cases in Firestore; so does this one when the
store is Firestore and no file is named, and the original's own cases (its shape:
``positive_ids``, ``filters``, epoch-ms ``created_at``) load beside this server's.
Files stay the local way (and work with either store). A case's Firestore
document id is a digest of its query, topic and expected ids (and state, when
one is named), so importing the same evidence twice writes one document.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from metacortex.config import Settings
from metacortex.domain.records import utc_now
from metacortex.errors import ConfigurationError
from metacortex.operations.evaluation import Case, load_cases, save_cases

if TYPE_CHECKING:  # the Google library is the cloud extra; the file cases never need it
    from google.cloud import firestore

EVAL_CASES_COLLECTION: Final = "retrieval_eval_cases"
_BATCH: Final = 400


class CaseStore(Protocol):
    skipped: list[str]  # what the last ``load`` could not read as a case

    def save(self, cases: Sequence[Case]) -> None: ...

    def load(self) -> list[Case]: ...

    def describe(self) -> str: ...


class FileCases:
    def __init__(self, path: Path) -> None:
        self._path = path
        self.skipped: list[str] = []  # a bad line is an error here, never skipped

    def save(self, cases: Sequence[Case]) -> None:
        save_cases(cases, self._path)

    def load(self) -> list[Case]:
        if not self._path.exists():
            raise ConfigurationError(f"no cases file at {self._path}")
        return load_cases(self._path)

    def describe(self) -> str:
        return str(self._path)


class FirestoreCases:
    def __init__(self, client: firestore.Client, collection: str = EVAL_CASES_COLLECTION) -> None:
        self._client = client
        self._cases = client.collection(collection)
        self._name = collection
        self.skipped: list[str] = []  # ids of documents ``load`` could not read as a case

    def save(self, cases: Sequence[Case]) -> None:
        now = utc_now()
        for start in range(0, len(cases), _BATCH):
            batch = self._client.batch()
            for case in cases[start : start + _BATCH]:
                data: dict[str, Any] = asdict(case)
                data["expected_ids"] = list(case.expected_ids)
                batch.set(self._cases.document(case_id(case)), {**data, "saved_at": now})
            batch.commit()

    def load(self) -> list[Case]:
        """Every case, oldest first: this server's (``saved_at``) and the original's
        (``created_at`` in epoch ms, ``positive_ids``; no ``saved_at``, so not ordered by it
        in the query, which would leave them out)."""
        from metacortex.migration.original_evaluation import original_case

        dated: list[tuple[float, str, Case]] = []
        self.skipped = []
        for snapshot in self._cases.stream():
            raw = snapshot.to_dict() or {}
            if "expected_ids" in raw:
                case: Case | None = Case(
                    query=str(raw.get("query", "")),
                    expected_ids=tuple(raw.get("expected_ids") or ()),
                    topic=raw.get("topic"),
                    label=str(raw.get("label", "")),
                    state=raw.get("state"),
                )
                saved = raw.get("saved_at")
                when = saved.timestamp() if isinstance(saved, datetime) else 0.0
            else:
                case = original_case(snapshot.id, raw)
                created = raw.get("created_at")
                when = created / 1000 if isinstance(created, int | float) else 0.0
            if case is None or not case.query or not case.expected_ids:
                self.skipped.append(snapshot.id)
                continue
            dated.append((when, snapshot.id, case))
        return [case for _, _, case in sorted(dated, key=lambda item: item[:2])]

    def describe(self) -> str:
        return f"Firestore collection {self._name}"


def case_id(case: Case) -> str:
    parts: list[Any] = [case.query, case.topic, sorted(case.expected_ids)]
    if case.state is not None:
        parts.append(case.state)
    key = json.dumps(parts, ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


def case_store(settings: Settings, path: Path | None) -> CaseStore:
    """The named file; without one, ``retrieval_eval_cases`` when the store is Firestore."""
    if path is not None:
        return FileCases(path)
    if settings.store_kind == "firestore":
        from metacortex.composition import require_cloud_extra

        require_cloud_extra("cases in Firestore's retrieval_eval_cases", "firestore")
        from metacortex.storage.firestore import open_client

        return FirestoreCases(open_client(settings))
    raise ConfigurationError(
        "name a cases file (e.g. eval-cases.ndjson): the embedded store keeps cases in files; "
        "on Firestore they go to retrieval_eval_cases when no file is named"
    )
