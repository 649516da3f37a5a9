"""The OAuth grants as clients: listed, paused, resumed and revoked by the owner.

A grant (``auth.tokens``) is what the owner approved on the consent page. Pausing
sets ``paused`` on the grant record, which every request with one of its access
tokens reads already (``auth.resource``): refused at once on every instance, at
no extra read, and its refresh tokens keep the family alive for ``resume``.
Revoking deletes the grant, and every token it issued stops working.

Events name a grant's requests ``oauth-<grant id>``; ``client_labels`` turns those
ids into the names the clients page shows, for the activity charts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from metacortex.access.model import DEFAULT_SPACE, OWNER_ID
from metacortex.auth.tokens import GRANT
from metacortex.domain.records import to_wire_time, utc_now
from metacortex.errors import NotFound
from metacortex.storage.base import MemoryStore

PREFIX: Final = "oauth-"  # access.grants.grant_profile names a grant's profile so


@dataclass(frozen=True, slots=True)
class GrantView:
    id: str
    client_name: str
    redirect_host: str | None
    resource: str | None
    preset: str | None
    scopes: tuple[str, ...]
    created_at: str | None
    paused: bool
    # Who approved it (a person's id, ``owner``) and the spaces they gave it; a grant
    # approved before spaces existed is the owner's, on the default space at write.
    person: str = OWNER_ID
    spaces: Mapping[str, str] = field(default_factory=lambda: {DEFAULT_SPACE: "write"})
    default_space: str = DEFAULT_SPACE

    @property
    def client_id(self) -> str:
        """The name its requests carry in events (``client_id``)."""
        return PREFIX + self.id

    def spaces_words(self) -> str:
        """``family:read, work:write (default family)``."""
        levels = ", ".join(f"{key}:{level}" for key, level in sorted(self.spaces.items()))
        return f"{levels} (default {self.default_space})"

    @property
    def label(self) -> str:
        return (
            f"{self.client_name} ({self.redirect_host})"
            if self.redirect_host
            else (self.client_name)
        )


def _view(grant_id: str, data: Mapping[str, Any]) -> GrantView:
    name = data.get("client_name") or data.get("client_id") or "(unnamed)"
    host = data.get("redirect_host")
    return GrantView(
        id=grant_id,
        client_name=str(name),
        redirect_host=str(host) if host else None,
        resource=str(data["resource"]) if data.get("resource") else None,
        preset=str(data["preset"]) if data.get("preset") else None,
        scopes=tuple(str(scope) for scope in data.get("scopes", ())),
        created_at=str(data["created_at"]) if data.get("created_at") else None,
        paused=data.get("paused") is True,
        **_who(data),
    )


def _who(data: Mapping[str, Any]) -> dict[str, Any]:
    """The approver and spaces of a grant record (``auth/consent_spaces.py``), when it
    has them."""
    spaces = data.get("spaces")
    if not isinstance(spaces, dict):
        return {}
    return {
        "person": str(data.get("person") or OWNER_ID),
        "spaces": {str(key): str(level) for key, level in spaces.items()},
        "default_space": str(data.get("default_space") or DEFAULT_SPACE),
    }


def list_grants(store: MemoryStore) -> list[GrantView]:
    return [_view(key, data) for key, data in store.auth_list(GRANT)]


def pause_grant(store: MemoryStore, grant_id: str) -> GrantView:
    return _set_paused(store, grant_id, paused=True)


def resume_grant(store: MemoryStore, grant_id: str) -> GrantView:
    return _set_paused(store, grant_id, paused=False)


def _set_paused(store: MemoryStore, grant_id: str, *, paused: bool) -> GrantView:
    # An atomic update: a grant revoked meanwhile stays revoked.
    changed = store.auth_update(
        GRANT,
        grant_id,
        {"paused": paused, "paused_at": to_wire_time(utc_now()) if paused else None},
    )
    if changed is None:
        raise NotFound(f"no grant with id {grant_id!r}")
    return _view(grant_id, changed)


def set_grant_default(store: MemoryStore, grant_id: str, key: str) -> GrantView:
    """Make ``key``, one of the spaces the grant was given, its default. Every request
    reads its grant record (``auth.resource``), so every instance acts there at once."""
    data = store.auth_get(GRANT, grant_id)
    spaces = data.get("spaces") if data is not None else None
    if data is None:
        raise NotFound(f"no grant with id {grant_id!r}")
    if not isinstance(spaces, dict) or key not in spaces:
        raise NotFound(f"grant {grant_id!r} was not given the space {key!r}")
    # An atomic update: a grant revoked meanwhile stays revoked.
    changed = store.auth_update(GRANT, grant_id, {"default_space": key})
    if changed is None:
        raise NotFound(f"no grant with id {grant_id!r}")
    return _view(grant_id, changed)


def revoke_grant(store: MemoryStore, grant_id: str) -> None:
    if not store.auth_delete(GRANT, grant_id):
        raise NotFound(f"no grant with id {grant_id!r}")


def client_labels(profile_ids: Iterable[str], grants: Iterable[GrantView]) -> dict[str, str]:
    """The name of each client as the clients page shows it, by the ``client_id`` its
    events carry: a profile by its id, a grant by its client's name and redirect host
    (with the grant id when two grants would read alike)."""
    labels = {profile_id: profile_id for profile_id in profile_ids}
    grants = list(grants)
    seen: dict[str, int] = {}
    for grant in grants:
        seen[grant.label] = seen.get(grant.label, 0) + 1
    for grant in grants:
        unique = seen[grant.label] == 1 and grant.label not in labels.values()
        labels[grant.client_id] = grant.label if unique else f"{grant.label} · {grant.id}"
    return labels


def label_of(client_id: str, labels: Mapping[str, str]) -> str:
    """A client's name for the charts: a revoked grant's requests keep a readable name."""
    if client_id in labels:
        return labels[client_id]
    if client_id.startswith(PREFIX):
        return f"revoked OAuth grant {client_id[len(PREFIX) :]}"
    return client_id
