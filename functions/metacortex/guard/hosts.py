"""Host-header allow-list: the defence of a loopback-bound server against DNS rebinding.

A web page can make a browser send requests to ``127.0.0.1`` under a hostname
the attacker controls; the Host header then names that hostname, not a
loopback name, and the request is refused. Deployments behind a front end list
their public host names in ``METACORTEX_ALLOWED_HOSTS``: ``example.com`` (any
port), ``example.com:8443`` (that port only), ``*.run.app`` (any subdomain), or
``*`` (any host: only where something in front already pins the host).

The cloud deployment is not loopback-bound and sits behind Google's front
end, so there the check applies only once ``METACORTEX_ALLOWED_HOSTS`` is set.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Final

LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})


_NAME = re.compile(r"[a-z0-9.-]+|\[[0-9a-f:.]+\]")
_PORT = re.compile(r"[0-9]{1,5}")


def _split(host_header: str) -> tuple[str, str | None] | None:
    """(host, port) of a Host header value, lowercased, IPv6 brackets removed.

    ``None`` when the value is not ``name``, ``name:port``, ``[v6]`` or ``[v6]:port``
    with a numeric port: ``[::1]evil.com`` and ``[::1]:x`` are malformed, not loopback.
    """
    value = host_header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
    if not _NAME.fullmatch(name):
        return None
    if not rest:
        return name.strip("[]"), None
    if rest.startswith(":") and _PORT.fullmatch(rest[1:]):
        return name.strip("[]"), rest[1:]
    return None


class HostPolicy:
    def __init__(self, extra_hosts: Iterable[str] = (), *, enforce: bool = True) -> None:
        self._any = not enforce
        self._names: set[str] = set(LOOPBACK_HOSTS)
        self._with_port: set[tuple[str, str]] = set()
        self._suffixes: list[str] = []
        for raw in extra_hosts:
            entry = raw.strip().lower()
            if not entry:
                continue
            if entry == "*":
                self._any = True
            elif entry.startswith("*."):
                self._suffixes.append(entry[1:])
            else:
                parsed = _split(entry)
                if parsed is None:
                    raise ValueError(f"METACORTEX_ALLOWED_HOSTS: {raw!r} is not host or host:port")
                host, port = parsed
                if port is None:
                    self._names.add(host)
                else:
                    self._with_port.add((host, port))

    def allows(self, host_header: str | None) -> bool:
        if self._any:
            return True
        if not host_header:
            return False
        parsed = _split(host_header)
        if parsed is None:
            return False
        host, port = parsed
        if host in self._names:
            return True
        if port is not None and (host, port) in self._with_port:
            return True
        return any(host.endswith(suffix) for suffix in self._suffixes)


_LOOPBACK_ORIGIN = re.compile(r"http://(localhost|127\.0\.0\.1|\[::1\])(:[0-9]{1,5})?")


def is_loopback_origin(origin: str) -> bool:
    """``http://localhost[:port]``, ``http://127.0.0.1[:port]`` or ``http://[::1][:port]``."""
    return _LOOPBACK_ORIGIN.fullmatch(origin) is not None


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``): this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
