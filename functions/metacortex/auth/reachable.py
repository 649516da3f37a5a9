"""Which addresses the server may connect to on a client's behalf (its metadata
document, its key set): globally reachable ones only, as the IANA special-purpose
address registries define them (RFC 6890's "Globally Reachable" column).

IPv4: reachable unless the most specific registry block holding the address says
otherwise; multicast (224.0.0.0/4, in its own registry) is refused too.

IPv6: only global unicast (2000::/3) and NAT64's well-known prefix can be reachable.
Three forms carry an IPv4 address that a packet ends up at, and answer as that
address does: NAT64 ``64:ff9b::/96`` (RFC 6052), 6to4 ``2002::/16`` (RFC 3056) and
Teredo ``2001::/32`` (RFC 4380; its server and its client address). Inside global
unicast the registry's unreachable blocks are refused (the reachable ones inside them,
such as AMT, answer yes). Everything else is refused whatever it carries: IPv4-mapped
``::ffff:0:0/96``, IPv4-translated ``::ffff:0:0:0/96`` (RFC 2765), IPv4-compatible
``::/96``, local-use NAT64 ``64:ff9b:1::/48`` (RFC 8215), unique-local, link-local,
site-local, multicast and whatever IANA has not allocated for unicast.

The tables are the registries', not Python's ``is_global``: that changed in 3.11.10,
3.12.4 and 3.13 and lags the registries (5f00::/16). ``tests/auth/test_reachable_addresses.py``
holds both registries row by row and checks every row and every IPv6 form of them.
"""

from __future__ import annotations

import ipaddress
from typing import Final

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _networks(*blocks: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(block) for block in blocks)


_IPV4_NOT_REACHABLE: Final = _networks(
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8",  # private use
    "100.64.0.0/10",  # shared address space (carrier-grade NAT)
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link local (the cloud metadata address among them)
    "172.16.0.0/12",  # private use
    "192.0.0.0/24",  # IETF protocol assignments (DS-Lite, NAT64 discovery, ...)
    "192.0.2.0/24",  # documentation
    "192.88.99.0/24",  # 6to4 relay anycast (deprecated), 6a44 relay
    "192.168.0.0/16",  # private use
    "198.18.0.0/15",  # benchmarking
    "198.51.100.0/24",  # documentation
    "203.0.113.0/24",  # documentation
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, limited broadcast
)
_IPV4_REACHABLE_INSIDE: Final = _networks(
    "192.0.0.9/32",  # Port Control Protocol anycast
    "192.0.0.10/32",  # TURN anycast
)
_IPV6_GLOBAL_UNICAST: Final = ipaddress.IPv6Network("2000::/3")
_NAT64_WELL_KNOWN: Final = ipaddress.IPv6Network("64:ff9b::/96")
_IPV6_NOT_REACHABLE: Final = _networks(
    "2001::/23",  # IETF protocol assignments (benchmarking, the deprecated ORCHID, ...)
    "2001:db8::/32",  # documentation
    "3fff::/20",  # documentation
    "5f00::/16",  # segment routing (SRv6) SIDs
)
_IPV6_REACHABLE_INSIDE: Final = _networks(
    "2001:1::1/128",  # Port Control Protocol anycast
    "2001:1::2/128",  # TURN anycast
    "2001:1::3/128",  # DNS-SD service registration protocol anycast
    "2001:3::/32",  # AMT
    "2001:4:112::/48",  # AS112-v6
    "2001:20::/28",  # ORCHIDv2
    "2001:30::/28",  # drone remote ID entity tags
)


def globally_reachable(address: str) -> bool:
    """Whether ``address`` (IPv4 or IPv6, a zone index ignored) is globally reachable."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv4Address):
        return _ipv4_reachable(ip)
    carried = _carried_ipv4(ip)
    if carried is not None:
        return all(_ipv4_reachable(inner) for inner in carried)
    if ip not in _IPV6_GLOBAL_UNICAST:
        return False
    if any(ip in net for net in _IPV6_REACHABLE_INSIDE):
        return True
    return not any(ip in net for net in _IPV6_NOT_REACHABLE)


def _ipv4_reachable(ip: ipaddress.IPv4Address) -> bool:
    if any(ip in net for net in _IPV4_REACHABLE_INSIDE):
        return True
    return not any(ip in net for net in _IPV4_NOT_REACHABLE)


def _carried_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...] | None:
    """The IPv4 addresses a packet to ``ip`` ends up at, for the forms that answer as
    those addresses do (NAT64's well-known prefix, 6to4, Teredo); None for the rest."""
    if ip in _NAT64_WELL_KNOWN:
        return (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF),)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        return ip.teredo
    return None
