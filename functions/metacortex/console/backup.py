"""Export: the portable backup, from the main menu.

``GET /console/backup`` says what the backup holds and how to restore it;
``GET /console/export`` downloads it (``metacortex backup``'s format, one zip: the
records as NDJSON and a manifest with their sha256, no vectors; restoring re-embeds).
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from metacortex.console.base import ConsoleBase, access_for, page_headers
from metacortex.domain.records import utc_now
from metacortex.operations.backup import export_portable
from metacortex.owner import Session


async def backup_page(console: ConsoleBase, request: Request, session: Session) -> Response:
    # The backup holds every space: count them all.
    total = topics = 0
    for space in access_for(request).readable_spaces():
        counts = await console.call(console.service.store.topic_counts, space=space)
        total += sum(sum(by_state.values()) for by_state in counts.values())
        topics += len(counts)
    return console.render(
        request,
        session,
        "backup.html",
        {"title": "Export", "total": total, "topics": topics},
    )


async def export(console: ConsoleBase, request: Request, session: Session) -> Response:
    """The portable backup (``metacortex backup``'s format) as one zip download."""
    service = console.service

    def build() -> tuple[bytes, str]:
        with tempfile.TemporaryDirectory(prefix="metacortex-export-") as folder:
            summary = export_portable(service.store, Path(folder), service.embedding_key)
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in sorted(Path(folder).iterdir()):
                    archive.write(path, path.name)
            return buffer.getvalue(), summary.sha256

    body, sha256 = await console.call(build)
    stamp = utc_now().strftime("%Y%m%dT%H%M%SZ")
    headers = {
        **page_headers(),
        "content-disposition": f'attachment; filename="metacortex-backup-{stamp}.zip"',
        "x-backup-sha256": sha256,
    }
    return Response(body, media_type="application/zip", headers=headers)
