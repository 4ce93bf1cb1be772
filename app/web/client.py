"""Where a request comes from: the client's address and whether it reached us over HTTPS.

The one place that reads X-Forwarded-For and X-Forwarded-Proto: only from a trusted proxy
(PLAYGROUND_TRUSTED_PROXIES; uvicorn's forwarded-allow-ips is the model, and uvicorn's own header
handling is off). The outermost middleware stores both in the scope for everything after it.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send


class TrustedProxies:
    def __init__(self, entries: Iterable[str]) -> None:
        self.any = False
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in entries:
            if entry.strip() == "*":
                self.any = True
            else:
                self.networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        # Every request asks at least twice (its address, then whether it came over HTTPS), and parsing
        # an address costs more than the rest of the answer. Bounded, so a flood of new addresses only
        # churns it.
        self._trusts = functools.lru_cache(maxsize=1024)(self._trusts_uncached)

    def __contains__(self, address: str) -> bool:
        return self.any or self._trusts(address)

    def _trusts_uncached(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.networks)


def peer(scope: Scope) -> str:
    client = scope.get("client")
    return client[0] if client else "unknown"


def resolve_address(scope: Scope, trusted: TrustedProxies) -> str:
    """The peer, or behind a trusted proxy the last X-Forwarded-For hop that is not a trusted proxy."""
    direct = peer(scope)
    if direct not in trusted:
        return direct
    header = Headers(scope=scope).get("x-forwarded-for")
    if not header:
        return direct
    for hop in reversed([h.strip() for h in header.split(",")]):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return direct  # a garbled header names nobody: count the proxy itself
        if hop not in trusted:
            return hop
    return direct


def resolve_https(scope: Scope, trusted: TrustedProxies) -> bool:
    """Reached over HTTPS: directly, or through a trusted proxy that says so."""
    if scope.get("scheme") in ("https", "wss"):
        return True
    if peer(scope) not in trusted:
        return False
    proto = Headers(scope=scope).get("x-forwarded-proto", "")
    return proto.split(",")[0].strip().lower() == "https"


def client_address(scope: Scope) -> str:
    return scope.get("client_address") or peer(scope)


@functools.lru_cache(maxsize=4096)  # asked for every connection and request; parsing is the cost
def address_key(address: str) -> str:
    """Whose address this is, where clients are counted by address: an IPv4 address itself, an IPv6
    address by its /64 (what one subscriber is usually given: counted one by one, a client would have
    2**64 of them)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address  # a Unix socket's peer ("") or anything else: one key each
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip)


def client_key(scope: Scope) -> str:
    """Whose request this is, where requests are counted per address (caps, throttles, new
    identities): the client's address, or its /64 for IPv6."""
    return address_key(client_address(scope))


def is_https(scope: Scope) -> bool:
    return bool(scope.get("client_https"))


def site_url(request: Any) -> str:
    """This site's address as the client reached it, for links the learner copies (an endpoint URL,
    a resume or join link): https when the request came over HTTPS, even through a trusted proxy
    that ends TLS (the app itself then sees plain HTTP)."""
    base = str(request.base_url).rstrip("/")
    if is_https(request.scope) and base.startswith("http://"):
        return "https://" + base.removeprefix("http://")
    return base


class ClientMiddleware:
    def __init__(self, app: ASGIApp, trusted: TrustedProxies) -> None:
        self.app = app
        self.trusted = trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope["client_address"] = resolve_address(scope, self.trusted)
            scope["client_https"] = resolve_https(scope, self.trusted)
        await self.app(scope, receive, send)
