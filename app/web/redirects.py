"""What a client's redirect URI may be, however the client came (registered by its owner, by dynamic
registration, by a metadata document), and how the consent page's Content-Security-Policy names it.

https anywhere, http on loopback only, or an app's own scheme (OAuth 2.1; RFC 8252 for native apps;
the MCP authorization spec's "localhost URLs or HTTPS URLs"), with no fragment. The URI reaches a
response header (the consent page's `form-action`): a host must be a host name or an address, a
scheme a scheme, so that nothing in it can add a directive of its own.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

# Schemes that run or read something in the browser itself.
REFUSED_SCHEMES = ("javascript", "data", "file", "vbscript", "blob", "about", "filesystem")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")  # RFC 3986 §3.1, lower-cased
HOST_NAME = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")
WRONG_KIND = "A redirect URI is https, http on loopback, or an app's own scheme, without a fragment."


def redirect_problem(uri: str) -> str | None:
    """Why a redirect URI may not be registered, or None when it may."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return "The redirect URI is not a URL."
    scheme = parts.scheme.lower()
    if not SCHEME.fullmatch(scheme) or scheme in REFUSED_SCHEMES or parts.fragment:
        return WRONG_KIND
    if scheme not in ("http", "https"):
        return None
    host = parts.hostname
    if not host:
        return "The redirect URI names no host."
    if not _is_host(host) or parts.username is not None or port == 0:
        return "The redirect URI's host is not a host name or an address."
    if scheme == "http" and host not in LOOPBACK_HOSTS:
        return (
            "A redirect URI over http must be on loopback (127.0.0.1, localhost, ::1); use https elsewhere."
        )
    return None


def csp_source(uri: str) -> str | None:
    """A redirect URI as a CSP source (its origin, or an app's own scheme), or None for one that may
    not be registered (a client kept from before these rules)."""
    if redirect_problem(uri) is not None:
        return None
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return f"{scheme}:"
    host = parts.hostname or ""
    name = f"[{host}]" if ":" in host else host
    return f"{scheme}://{name}" + (f":{parts.port}" if parts.port is not None else "")


def _is_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return HOST_NAME.fullmatch(host) is not None
    return True
