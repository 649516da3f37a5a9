"""The tool catalogue: the one place each tool is described.

Every list of tools the server keeps is read from here: the order ``tools/list``
shows them in, what a profile may name in ``allowedTools``, what the admin
endpoint offers, what ``metacortex client add`` grants when no tools are named,
what each consent-page preset grants, the OAuth scope each tool needs, whether it
only reads, which tools the resources need, and the words the consent page uses.
What a model reads about a tool (title, description, schemas, hints) and the code
that runs it are in ``mcp_surface/tools.py``, keyed by these names; adding a tool
is one entry here and one ``ToolSpec`` there.

A tool needs a scope for an OAuth token to call it: one with none (``scope``
left out) is refused to every OAuth token (``access/scopes.py``), so a tool added
without thinking about OAuth fails closed. ``erase_context`` has none on purpose.

The lists are read when they are used (a catalogue of a few entries costs nothing
to walk), so a tool added to ``CATALOGUE`` is everywhere at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Group(StrEnum):
    """What kind of thing a tool does; where it is offered follows from it."""

    READING = "reading"  # reads memories: search, fetch, list (the resources need one)
    SAVING = "saving"  # adds memories
    CURATING = "curating"  # retires, promotes or merges memories
    LINKS = "links"  # follows the links between memories
    SPACES = "spaces"  # what the credential holds (granted to credentials made since spaces)
    CREDENTIAL = "credential"  # changes the calling credential's own record, not memory
    DOCUMENTS = "documents"  # adds, lists and reads documents
    OWNER = "owner"  # the owner's: admin endpoint only, when the operator turns it on
    CHATGPT = "chatgpt"  # ChatGPT's data-only shapes of a reading tool


# The OAuth scopes a tool may need (``access/scopes.py`` grants them).
READ: Final = "memory:read"
WRITE: Final = "memory:write"
# The consent page's presets (``access/grants.py`` gives each its title and states).
READ_PRESET: Final = "read"
READ_WRITE_PRESET: Final = "read-write"
CURATOR_PRESET: Final = "curator"
_EVERY_PRESET: Final = frozenset({READ_PRESET, READ_WRITE_PRESET, CURATOR_PRESET})
_WRITING_PRESETS: Final = frozenset({READ_WRITE_PRESET, CURATOR_PRESET})
_CURATOR: Final = frozenset({CURATOR_PRESET})


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    group: Group
    # Changes nothing (the model sees ``readOnlyHint``).
    read_only: bool
    # The OAuth scope a token needs to call it; None: no OAuth token may.
    scope: str | None = None
    # Granted by ``metacortex client add`` (and the console) when no tools are named.
    default: bool = False
    # The consent-page presets that grant it.
    presets: frozenset[str] = frozenset()
    # How the consent page says what it lets a grant do ("search", "deprecate").
    verb: str | None = None
    # For a ChatGPT shape: the tool it stands for (the profile must allow that one).
    stands_for: str | None = None

    @property
    def changes_memory(self) -> bool:
        """Whether it changes what a space holds: a credential that may write in no
        space is refused it, so it is not listed there."""
        return not self.read_only and self.group is not Group.CREDENTIAL


# In the order tools/list presents them.
# fmt: off
CATALOGUE: Final[dict[str, Tool]] = {
    tool.name: tool
    for tool in (
        Tool(
            "save_context", Group.SAVING, read_only=False, scope=WRITE, default=True,
            presets=_WRITING_PRESETS,
        ),
        Tool(
            "search_context", Group.READING, read_only=True, scope=READ, default=True,
            presets=_EVERY_PRESET, verb="search",
        ),
        Tool(
            "fetch_context", Group.READING, read_only=True, scope=READ, default=True,
            presets=_EVERY_PRESET, verb="read",
        ),
        Tool(
            "list_context", Group.READING, read_only=True, scope=READ, presets=_CURATOR,
            verb="list",
        ),
        # A default tool: a writer retires their own memories (the .NET server's
        # "forget"); someone else's stays, named in contested_ids (Access.contested).
        Tool(
            "deprecate_context", Group.CURATING, read_only=False, scope=WRITE, default=True,
            presets=_CURATOR, verb="deprecate",
        ),
        Tool(
            "promote_context", Group.CURATING, read_only=False, scope=WRITE,
            presets=_CURATOR, verb="promote",
        ),
        Tool(
            "consolidate_context", Group.CURATING, read_only=False, scope=WRITE,
            presets=_CURATOR, verb="consolidate",
        ),
        Tool(
            "related_context", Group.LINKS, read_only=True, scope=READ, default=True,
            presets=_EVERY_PRESET,
        ),
        # Granted to an OAuth grant made since spaces exist whatever its preset.
        Tool("list_spaces", Group.SPACES, read_only=True, scope=READ, default=True),
        Tool("who_am_i", Group.SPACES, read_only=True, scope=READ, default=True),
        # A change on the server, so not a read token's; a credential's own default
        # space, among those it holds (the spaces view's "Make default").
        Tool(
            "set_default_space", Group.CREDENTIAL, read_only=False, scope=WRITE,
            default=True, presets=_WRITING_PRESETS,
        ),
        # Adding a document (up to a 720 KiB file and a thousand passages a call) is
        # granted by name, as `metacortex ingest` is the owner's way for files; reading
        # them is what an agent answering from them needs.
        Tool(
            "create_document", Group.DOCUMENTS, read_only=False, scope=WRITE,
            presets=_WRITING_PRESETS,
        ),
        Tool(
            "list_documents", Group.DOCUMENTS, read_only=True, scope=READ, default=True,
            presets=_EVERY_PRESET,
        ),
        Tool(
            "get_document", Group.DOCUMENTS, read_only=True, scope=READ, default=True,
            presets=_EVERY_PRESET,
        ),
        # The owner's (METACORTEX_ADMIN_ERASE_TOOL); never an OAuth token's: no scope.
        Tool("erase_context", Group.OWNER, read_only=False),
        Tool("search", Group.CHATGPT, read_only=True, scope=READ, stands_for="search_context"),
        Tool("fetch", Group.CHATGPT, read_only=True, scope=READ, stands_for="fetch_context"),
    )
}
# fmt: on
# Offered beside the others on their own terms (Profile.tools, Profile.chatgpt_tools).
_APART: Final = frozenset({Group.OWNER, Group.CHATGPT})


def _names(keep: Callable[[Tool], bool]) -> tuple[str, ...]:
    return tuple(tool.name for tool in CATALOGUE.values() if keep(tool))


def entry(name: str) -> Tool | None:
    return CATALOGUE.get(name)


def model_tools() -> tuple[str, ...]:
    """The tools a profile may name in ``allowedTools``, in tools/list order."""
    return _names(lambda tool: tool.group not in _APART)


def in_group(*groups: Group) -> tuple[str, ...]:
    return _names(lambda tool: tool.group in groups)


def default_tools() -> tuple[str, ...]:
    """What ``metacortex client add`` grants when no tools are named."""
    return _names(lambda tool: tool.default)


def preset_tools(preset: str) -> tuple[str, ...]:
    """The tools a consent-page preset grants, in tools/list order."""
    return _names(lambda tool: preset in tool.presets)


def scope_of(name: str) -> str | None:
    """The OAuth scope a token needs to call ``name``; None for a tool no OAuth token
    may call (no scope, or no such tool)."""
    found = CATALOGUE.get(name)
    return found.scope if found is not None else None
