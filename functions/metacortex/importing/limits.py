"""What an export may hold before it is read (``config.Settings``, ``METACORTEX_IMPORT_*``),
and the refusal of one that holds more, or that is not an export at all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from metacortex.errors import InvalidArgument

if TYPE_CHECKING:
    from metacortex.config import Settings

MIB: Final = 1024 * 1024


class ImportRefused(InvalidArgument):
    """The export is refused whole: nothing of it was written."""


@dataclass(frozen=True, slots=True)
class ImportLimits:
    max_entries: int = 50_000
    max_bytes: int = 10 * 1024 * MIB
    max_json_bytes: int = 256 * MIB
    max_conversations: int = 50_000
    max_messages: int = 10_000

    @classmethod
    def from_settings(cls, settings: Settings) -> ImportLimits:
        return cls(
            max_entries=settings.metacortex_import_max_entries,
            max_bytes=settings.metacortex_import_max_bytes,
            max_json_bytes=settings.metacortex_import_max_json_bytes,
            max_conversations=settings.metacortex_import_max_conversations,
            max_messages=settings.metacortex_import_max_messages,
        )

    def check_entries(self, entries: int) -> None:
        if entries > self.max_entries:
            raise ImportRefused(
                f"the archive holds {entries:,} entries; the limit is {self.max_entries:,} "
                "(METACORTEX_IMPORT_MAX_ENTRIES): nothing was imported"
            )

    def check_bytes(self, total: int) -> None:
        if total > self.max_bytes:
            raise ImportRefused(
                f"the archive unpacks to {total:,} bytes; the limit is {self.max_bytes:,} "
                "(METACORTEX_IMPORT_MAX_BYTES): nothing was imported"
            )

    def json_refusal(self, name: str) -> ImportRefused:
        return ImportRefused(
            f"{name} is larger than {self.max_json_bytes:,} bytes, the limit "
            "(METACORTEX_IMPORT_MAX_JSON_BYTES): nothing was imported"
        )

    def check_conversations(self, count: int) -> None:
        if count > self.max_conversations:
            raise ImportRefused(
                f"the export holds {count:,} conversations; the limit is "
                f"{self.max_conversations:,} (METACORTEX_IMPORT_MAX_CONVERSATIONS): "
                "nothing was imported"
            )

    def messages_refusal(self, count: int) -> str:
        """Why one conversation is skipped (the others are imported)."""
        return (
            f"more than {self.max_messages:,} messages (METACORTEX_IMPORT_MAX_MESSAGES)"
            if count > self.max_messages
            else ""
        )
