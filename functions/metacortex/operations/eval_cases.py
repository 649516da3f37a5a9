"""Where evaluation cases live: a local NDJSON file, or Firestore's ``retrieval_eval_cases``.

The original MetaCortex kept its cases in Firestore; so does this one when the
store is Firestore and no file is named. Files stay the local way (and work with
either store). A case's Firestore document id is a digest of its query, topic and
expected ids, so importing the same evidence twice writes one document.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
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
    def save(self, cases: Sequence[Case]) -> None: ...

    def load(self) -> list[Case]: ...

    def describe(self) -> str: ...


class FileCases:
    def __init__(self, path: Path) -> None:
        self._path = path

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
        cases = []
        for snapshot in self._cases.order_by("saved_at").stream():
            raw = snapshot.to_dict() or {}
            cases.append(
                Case(
                    query=str(raw.get("query", "")),
                    expected_ids=tuple(raw.get("expected_ids") or ()),
                    topic=raw.get("topic"),
                    label=str(raw.get("label", "")),
                )
            )
        return [case for case in cases if case.query and case.expected_ids]

    def describe(self) -> str:
        return f"Firestore collection {self._name}"


def case_id(case: Case) -> str:
    key = json.dumps([case.query, case.topic, sorted(case.expected_ids)], ensure_ascii=False)
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
