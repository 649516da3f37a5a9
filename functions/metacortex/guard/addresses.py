"""Who is asking: the one place a request's client address is decided.

Rate limits, log lines and events all need the client's address, and all of them
must agree on it and must not take it from the client's word. The guard resolves
it once per request (``AddressResolver.remember``); everything after the guard
reads it with ``client_address(request)``.

Forwarded headers are trusted only as far as ``METACORTEX_TRUSTED_PROXY_HOPS``
says (``Settings.trusted_proxy_hops``):

* ``0`` (the default of ``metacortex serve``): the socket peer. ``X-Forwarded-For``
  is ignored, whoever sends it; anyone can write one.
* ``N >= 1``: the N-th ``X-Forwarded-For`` entry from the right. Each proxy
  appends the address its connection came from, so the right-most N entries were
  written by the N proxies in front of us and everything left of them by the
  client. Google's front end (Cloud Functions, Cloud Run) appends the address it
  received the request from, so behind it N = 1, the cloud deployment's default;
  an external load balancer in front of that appends its own, making N = 2.
  With fewer entries than N, the left-most is taken (every entry came from a
  trusted proxy); with none, the peer.

An entry that is not an IP address (``unknown``, an obfuscated ``_hidden`` name,
a 30 KB string) resolves to ``unknown``: bounded, and one shared bucket.

``ClientAddress.bucket`` is the key limiters use: the address for IPv4, its /64
network for IPv6, since one subscriber is routinely given a whole /64.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from starlette.types import Scope

SCOPE_KEY: Final = "metacortex.client_address"
UNKNOWN: Final = "unknown"
_FORWARDED_FOR: Final = b"x-forwarded-for"
_IPV6_BUCKET_PREFIX: Final = 64
# A longer entry is no address; no need to parse it.
_MAX_ENTRY_CHARS: Final = 64


@dataclass(frozen=True, slots=True)
class ClientAddress:
    """A resolved client address: ``ip`` is a normalised IP address or ``unknown``."""

    ip: str

    @property
    def bucket(self) -> str:
        """The rate-limit key of this address (``ip:<v4>``, ``ip:<v6 /64>`` or ``ip:unknown``)."""
        if ":" not in self.ip:
            return f"ip:{self.ip}"
        network = ipaddress.ip_network(f"{self.ip}/{_IPV6_BUCKET_PREFIX}", strict=False)
        return f"ip:{network.compressed}"


class AddressResolver:
    """Resolves the client address of a request under one forwarded-header policy."""

    def __init__(self, trusted_hops: int) -> None:
        if trusted_hops < 0:
            raise ValueError("trusted_hops must be 0 or more")
        self._hops = trusted_hops

    def resolve(self, scope: Scope) -> ClientAddress:
        if self._hops > 0:
            entries = _forwarded_for(scope)
            if entries:
                chosen = entries[-self._hops] if len(entries) >= self._hops else entries[0]
                return ClientAddress(_normalised(chosen))
        return ClientAddress(_peer(scope))

    def remember(self, scope: Scope) -> ClientAddress:
        """Resolve and keep the address in the ASGI scope for ``client_address``."""
        address = self.resolve(scope)
        scope[SCOPE_KEY] = address
        return address


def client_address(request: Any) -> ClientAddress:
    """The address the guard resolved for this request (a Starlette request or a scope)."""
    scope: Mapping[str, Any] | None = getattr(request, "scope", request)
    address = scope.get(SCOPE_KEY) if isinstance(scope, Mapping) else None
    if not isinstance(address, ClientAddress):
        raise RuntimeError("the request did not pass the guard: no client address resolved")
    return address


def _forwarded_for(scope: Scope) -> list[str]:
    """Every X-Forwarded-For entry, in order, over all the header's lines."""
    values = [value for name, value in scope.get("headers", ()) if name == _FORWARDED_FOR]
    joined = b",".join(values).decode("latin-1")
    return [entry.strip() for entry in joined.split(",") if entry.strip()]


def _peer(scope: Scope) -> str:
    client = scope.get("client")
    return _normalised(str(client[0])) if client else UNKNOWN


def _normalised(entry: str) -> str:
    """An IP address in canonical form (the port and brackets dropped), else ``unknown``."""
    if len(entry) > _MAX_ENTRY_CHARS:
        return UNKNOWN
    text = entry
    if text.startswith("["):  # [v6] or [v6]:port
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # v4:port
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return UNKNOWN
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return ipaddress.IPv6Address(int(address)).compressed  # without a %zone
    return address.compressed
