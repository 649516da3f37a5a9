"""Which addresses a client metadata document (or a client's key set) may be fetched from:
every row of the IANA special-purpose address registries, and every IPv6 form that
carries an IPv4 address, not a handful of examples (issue 28: the IPv4-translated form
``::ffff:0:7f00:1`` reached 127.0.0.1).

The registries are data here, row by row, as IANA publishes them
(https://www.iana.org/assignments/iana-ipv4-special-registry/ and
https://www.iana.org/assignments/iana-ipv6-special-registry/, RFC 6890's columns
"Address Block", "Name" and "Globally Reachable"). They were transcribed without network
access here and cross-checked against CPython's ``ipaddress`` tables and Rust's
``Ipv6Addr::is_global`` (which add 5f00::/16); a row IANA adds later is one more line.

For each row the first, middle and last address get the answer of the most specific row
holding them (2001::/23 is not reachable, 2001:1::1 inside it is). "N/A" and a blank
(deprecated blocks) are not reachable, except the forms that carry an IPv4 address, which
answer as that address does: NAT64's well-known prefix (registry: reachable), 6to4 and
Teredo (N/A). Every IPv4 address tested is also tried inside each of those forms, and
inside the forms that are never fetched whatever they carry: IPv4-mapped
(``::ffff:0:0/96``, not reachable), IPv4-translated (``::ffff:0:0:0/96``, RFC 2765) and
IPv4-compatible (``::/96``, deprecated), the local-use NAT64 prefix at every RFC 6052
length (RFC 8215: not reachable) and anything else outside global unicast (2000::/3).
The answer must not depend on Python's version: its tables changed in 3.11.10, 3.12.4 and
3.13.
"""

from __future__ import annotations

import ipaddress
from typing import Final

import pytest

from metacortex.auth.reachable import globally_reachable

V4 = ipaddress.IPv4Address
V6 = ipaddress.IPv6Address
NA: Final = None  # "N/A" or blank in the registry's Globally Reachable column

IPV4_REGISTRY: Final[tuple[tuple[str, str, bool | None], ...]] = (
    ("0.0.0.0/8", '"This network"', False),
    ("0.0.0.0/32", '"This host on this network"', False),
    ("10.0.0.0/8", "Private-Use", False),
    ("100.64.0.0/10", "Shared Address Space", False),
    ("127.0.0.0/8", "Loopback", False),
    ("169.254.0.0/16", "Link Local", False),
    ("172.16.0.0/12", "Private-Use", False),
    ("192.0.0.0/24", "IETF Protocol Assignments", False),
    ("192.0.0.0/29", "IPv4 Service Continuity Prefix", False),
    ("192.0.0.8/32", "IPv4 dummy address", False),
    ("192.0.0.9/32", "Port Control Protocol Anycast", True),
    ("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", True),
    ("192.0.0.170/32", "NAT64/DNS64 Discovery", False),
    ("192.0.0.171/32", "NAT64/DNS64 Discovery", False),
    ("192.0.2.0/24", "Documentation (TEST-NET-1)", False),
    ("192.31.196.0/24", "AS112-v4", True),
    ("192.52.193.0/24", "AMT", True),
    ("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", NA),
    ("192.88.99.2/32", "6a44-relay anycast address", False),
    ("192.168.0.0/16", "Private-Use", False),
    ("192.175.48.0/24", "Direct Delegation AS112 Service", True),
    ("198.18.0.0/15", "Benchmarking", False),
    ("198.51.100.0/24", "Documentation (TEST-NET-2)", False),
    ("203.0.113.0/24", "Documentation (TEST-NET-3)", False),
    ("240.0.0.0/4", "Reserved", False),
    ("255.255.255.255/32", "Limited Broadcast", False),
)

IPV6_REGISTRY: Final[tuple[tuple[str, str, bool | None], ...]] = (
    ("::1/128", "Loopback Address", False),
    ("::/128", "Unspecified Address", False),
    ("::ffff:0:0/96", "IPv4-mapped Address", False),
    ("64:ff9b::/96", "IPv4-IPv6 Translat.", True),
    ("64:ff9b:1::/48", "IPv4-IPv6 Translat.", False),
    ("100::/64", "Discard-Only Address Block", False),
    ("100:0:0:1::/64", "Dummy IPv6 Prefix", False),
    ("2001::/23", "IETF Protocol Assignments", False),
    ("2001::/32", "TEREDO", NA),
    ("2001:1::1/128", "Port Control Protocol Anycast", True),
    ("2001:1::2/128", "Traversal Using Relays around NAT Anycast", True),
    ("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast Address", True),
    ("2001:2::/48", "Benchmarking", False),
    ("2001:3::/32", "AMT", True),
    ("2001:4:112::/48", "AS112-v6", True),
    ("2001:10::/28", "Deprecated (previously ORCHID)", NA),
    ("2001:20::/28", "ORCHIDv2", True),
    ("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", True),
    ("2001:db8::/32", "Documentation", False),
    ("2002::/16", "6to4", NA),
    ("2620:4f:8000::/48", "Direct Delegation AS112 Service", True),
    ("3fff::/20", "Documentation", False),
    ("5f00::/16", "Segment Routing (SRv6) SIDs", False),
    ("fc00::/7", "Unique-Local", False),
    ("fe80::/10", "Link-Local Unicast", False),
)

# Outside the special-purpose registries: public unicast, multicast (its own registries),
# and IPv6 outside global unicast that no row names.
IPV4_CONTROLS: Final = (
    ("8.8.8.8", True),
    ("1.1.1.1", True),
    ("128.0.0.1", True),
    ("223.255.255.254", True),
    ("224.0.0.1", False),  # multicast
    ("239.255.255.250", False),  # multicast (SSDP)
)
IPV6_CONTROLS: Final = (
    ("2001:4860:4860::8888", True),  # Google Public DNS
    ("2606:4700:4700::1111", True),  # Cloudflare
    ("ff02::1", False),  # multicast, link scope
    ("ff0e::1", False),  # multicast, global scope
    ("fec0::1", False),  # site-local (deprecated, still routed inside some networks)
    ("4000::1", False),  # reserved by the IETF: no unicast address may be there
    ("100:1::1", False),  # 100::/8 outside the registry's two rows
    ("::2", False),  # ::/8 outside the registry's rows
)


def _samples(block: str) -> list[str]:
    net = ipaddress.ip_network(block)
    first, last = int(net.network_address), int(net.broadcast_address)
    values = {first, first + (last - first) // 2, last}
    make = type(net.network_address)  # ip_address(1) would be IPv4's 0.0.0.1
    return [str(make(value)) for value in sorted(values)]


def _most_specific(address: str) -> tuple[str, bool | None] | None:
    ip = ipaddress.ip_address(address)
    registry = IPV4_REGISTRY if ip.version == 4 else IPV6_REGISTRY
    rows = [row for row in registry if ip in ipaddress.ip_network(row[0])]
    if not rows:
        return None
    block, _, reachable = max(rows, key=lambda row: ipaddress.ip_network(row[0]).prefixlen)
    return block, reachable


def _ipv4_expected(address: str) -> bool:
    row = _most_specific(address)
    if row is not None:
        return row[1] is True
    return not V4(address).is_multicast


def _teredo(server: V4, client: V4) -> V6:
    # 2001:0:<server>:<flags>:<port, obfuscated>:<client, obfuscated>
    return V6((0x20010000 << 96) | (int(server) << 64) | (0xFFFFFFFF ^ int(client)))


def _carrying_forms(ipv4: str) -> dict[str, V6]:
    """``ipv4`` inside each IPv6 form that carries an IPv4 address and answers as it does."""
    inner = int(V4(ipv4))
    public = V4("8.8.8.8")
    return {
        "NAT64 well-known prefix 64:ff9b::/96": V6((0x0064FF9B << 96) | inner),
        "6to4 2002::/16": V6((0x2002 << 112) | (inner << 80) | 1),
        "Teredo server": _teredo(V4(ipv4), public),
        "Teredo client": _teredo(public, V4(ipv4)),
    }


def _rfc6052(prefix: int, length: int, ipv4: int) -> V6:
    """``ipv4`` after a /``length`` prefix as RFC 6052 §2.2 places it: bits 64-71 stay
    zero, so an address that would cover them is split around them."""
    if length >= 64:
        return V6(prefix | (ipv4 << (128 - max(length, 72) - 32)))
    high_bits = 64 - length
    high, low = ipv4 >> (32 - high_bits), ipv4 & ((1 << (32 - high_bits)) - 1)
    return V6(prefix | (high << 64) | (low << (128 - 72 - (32 - high_bits))))


def _never_fetched_forms(ipv4: str) -> dict[str, V6]:
    """``ipv4`` inside forms outside global unicast: refused whatever they carry."""
    inner = int(V4(ipv4))
    local = 0x0064FF9B0001 << 80  # 64:ff9b:1::/48, RFC 8215
    forms = {
        "IPv4-mapped ::ffff:0:0/96": V6((0xFFFF << 32) | inner),
        "IPv4-translated ::ffff:0:0:0/96": V6((0xFFFF << 48) | inner),
        "IPv4-compatible ::/96": V6(inner),
    }
    for length in (48, 56, 64, 96):
        forms[f"local-use NAT64 64:ff9b:1::/{length}"] = _rfc6052(local, length, inner)
    return forms


IPV4_SAMPLES: Final = sorted(
    {address for block, _, _ in IPV4_REGISTRY for address in _samples(block)}
    | {address for address, _ in IPV4_CONTROLS},
    key=lambda address: int(V4(address)),
)


def test_the_registries_are_transcribed_whole() -> None:
    assert len(IPV4_REGISTRY) == 26
    assert len(IPV6_REGISTRY) == 25
    for block, _, _ in IPV4_REGISTRY + IPV6_REGISTRY:
        ipaddress.ip_network(block)  # each a valid prefix, host bits clear


@pytest.mark.parametrize(("block", "name", "reachable"), IPV4_REGISTRY)
def test_an_ipv4_special_purpose_block_is_fetched_only_where_the_registry_says_reachable(
    block: str, name: str, reachable: bool | None
) -> None:
    for address in _samples(block):
        assert globally_reachable(address) is _ipv4_expected(address), (address, name)


@pytest.mark.parametrize(("block", "name", "reachable"), IPV6_REGISTRY)
def test_an_ipv6_special_purpose_block_is_fetched_only_where_the_registry_says_reachable(
    block: str, name: str, reachable: bool | None
) -> None:
    for address in _samples(block):
        row = _most_specific(address)
        assert row is not None
        carried = _ipv4_inside(address)
        expected = all(_ipv4_expected(str(v4)) for v4 in carried) if carried else row[1] is True
        assert globally_reachable(address) is expected, (address, name)


def _ipv4_inside(address: str) -> list[V4]:
    """The IPv4 addresses the carrying forms (NAT64 well-known, 6to4, Teredo) lead to."""
    ip = V6(address)
    if ip in ipaddress.ip_network("64:ff9b::/96"):
        return [V4(int(ip) & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    return list(ip.teredo) if ip.teredo is not None else []


@pytest.mark.parametrize("ipv4", IPV4_SAMPLES)
def test_every_ipv6_form_of_an_ipv4_address_answers_as_the_address_or_is_refused(
    ipv4: str,
) -> None:
    expected = _ipv4_expected(ipv4)
    assert globally_reachable(ipv4) is expected
    for form, address in _carrying_forms(ipv4).items():
        assert globally_reachable(str(address)) is expected, (form, str(address))
    for form, address in _never_fetched_forms(ipv4).items():
        assert globally_reachable(str(address)) is False, (form, str(address))


@pytest.mark.parametrize(("address", "reachable"), IPV4_CONTROLS + IPV6_CONTROLS)
def test_addresses_outside_the_registries_public_unicast_only(
    address: str, reachable: bool
) -> None:
    assert globally_reachable(address) is reachable


def test_a_zone_index_does_not_change_the_answer() -> None:
    assert globally_reachable("fe80::1%eth0") is False
    assert globally_reachable("2001:4860:4860::8888%1") is True
