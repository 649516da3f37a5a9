"""metacortex.documents is pure: it reads files and cuts passages, and knows nothing of
storage, the service or the server (the integration imports it, never the reverse)."""

from __future__ import annotations

import ast
from pathlib import Path

import metacortex.documents

PACKAGE = Path(metacortex.documents.__file__).parent
# metacortex.ocr reads scanned pages (documents/pdf_ocr.py); it is as pure (below).
ALLOWED = ("metacortex.documents", "metacortex.errors", "metacortex.ocr")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return {name for name in names if name.startswith("metacortex")}


def test_the_documents_package_imports_only_itself_and_the_domain_errors() -> None:
    outside = {
        f"{path.name}: {name}"
        for path in PACKAGE.glob("*.py")
        for name in _imports(path)
        # metacortex itself: where the package sits, for the reader host's path
        if not name.startswith(ALLOWED) and name not in {"metacortex", "metacortex.config"}
    }
    assert outside == set()


def test_the_ocr_module_the_reader_uses_imports_only_the_domain_errors() -> None:
    ocr = PACKAGE.parent / "ocr.py"
    tree = ast.parse(ocr.read_text(encoding="utf-8"))
    run_time = [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("metacortex")
    ]
    assert [node.module for node in run_time] == ["metacortex.errors"]


def test_settings_are_read_only_to_build_the_limits_never_at_run_time() -> None:
    source = (PACKAGE / "limits.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    guarded = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
    ]
    assert any("metacortex.config" in ast.unparse(node) for node in guarded)
    users = [p.name for p in PACKAGE.glob("*.py") if "metacortex.config" in _imports(p)]
    assert users == ["limits.py"]
