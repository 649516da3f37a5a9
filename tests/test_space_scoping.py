"""Every read and write of the use cases names its space, read from their source.

The store's methods default to the space ``default`` (so a store of one space,
and the tests of one, read as before). A use case that forgot to pass the space
it resolved would silently read the default space: this test refuses that shape
in ``metacortex.usecases`` and the other modules that call the store for a caller.
"""

from __future__ import annotations

import ast
from pathlib import Path

import metacortex

PACKAGE = Path(metacortex.__file__).parent
# Store methods that act in one space and take it as an argument (``storage.base``).
SPACED = frozenset(
    {
        "get",
        "get_many",
        "transaction",
        "topic_counts",
        "superseded_by_any",
        "erase",
        "tombstones",
        "derived_from_any",
        # documents (issue 31)
        "get_document",
        "find_document",
        "list_documents",
        "document_text",
        "document_bytes",
        "document_passages",
        "remove_document",
    }
)
CHECKED = ("usecases",)


def _offences(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        keywords = {keyword.arg for keyword in node.keywords}
        func = node.func
        if isinstance(func, ast.Name) and func.id == "MemoryFilter" and "space" not in keywords:
            found.append(f"{path.name}:{node.lineno} MemoryFilter without space=")
        if (
            isinstance(func, ast.Attribute)
            and func.attr in SPACED
            and isinstance(func.value, ast.Name | ast.Attribute)
            and ast.unparse(func.value).endswith("store")
            and "space" not in keywords
        ):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(func)}() without space=")
    return found


def test_every_store_call_of_the_use_cases_names_its_space() -> None:
    offences = [
        offence
        for folder in CHECKED
        for path in sorted((PACKAGE / folder).glob("*.py"))
        for offence in _offences(path)
    ]
    assert offences == []


def test_the_check_finds_a_read_that_forgot_its_space(tmp_path: Path) -> None:
    """The finder itself, on the shape it exists to refuse."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def read(self, key):\n"
        "    self._store.get(key)\n"
        "    self._store.get(key, space=key)\n"
        "    self._store.tombstones([key], space=key).get(key)\n"
        "    MemoryFilter(states=())\n",
        encoding="utf-8",
    )
    assert _offences(sample) == [
        "sample.py:2 self._store.get() without space=",
        "sample.py:5 MemoryFilter without space=",
    ]
