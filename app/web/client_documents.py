"""Client ID Metadata Documents (MCP 2025-11-25 authorization §Client ID Metadata Documents): a client
whose `client_id` is an https URL is described by the JSON document at that URL, which the
authorization server fetches.

Fetching a URL a stranger names is a way to make the server reach what it can and they cannot (SSRF),
so the fetch keeps to these rules: https only, with a path, no user or fragment; the name resolved
first and every address it has checked (in hosting mode none may be loopback, private, link-local or
otherwise not global), then the connection made to that address only, with the certificate checked
against the name; no redirect followed; at most MAX_BYTES within TIMEOUT_S in all, the name's lookup
included, LOOKUPS_AT_ONCE lookups at a time. A document is kept as its
Cache-Control says (`no-store`: not at all), for at most MAX_CACHE_S.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import ssl
import time
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from app.web.redirects import redirect_problem

MAX_BYTES = 64 * 1024
TIMEOUT_S = 5.0
DEFAULT_CACHE_S = 300.0
MAX_CACHE_S = 24 * 3600.0
CACHE_ENTRIES = 1000
# Name lookups at once: each holds a thread while it waits, and a name whose server never answers
# would otherwise hold threads every page and query of the app waits for.
LOOKUPS_AT_ONCE = 4
_MAX_AGE = re.compile(r"max-age=(\d+)")


class DocumentError(Exception):
    """Why a client's metadata document cannot be used (said to the learner and the client)."""


def is_document_url(client_id: str) -> bool:
    """Whether a client_id names a metadata document: an https URL with a path."""
    try:
        parts = urlsplit(client_id)
    except ValueError:
        return False
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/")


class ClientDocuments:
    def __init__(self, allow_private: bool, ca_file: Path | None, scopes: str) -> None:
        self.allow_private = allow_private
        self.scopes = scopes  # what a client is registered for (app/web/oauth.py: every endpoint scope)
        self.tls = ssl.create_default_context()
        if ca_file is not None:
            self.tls.load_verify_locations(cafile=str(ca_file))
        self._cache: dict[str, tuple[float, OAuthClientInformationFull]] = {}
        self._lookups = anyio.CapacityLimiter(LOOKUPS_AT_ONCE)

    async def client(self, url: str) -> OAuthClientInformationFull:
        """The client the document at `url` describes; DocumentError says why there is none."""
        kept = self._cache.get(url)
        if kept is not None and kept[0] > time.monotonic():
            return kept[1]
        try:
            with anyio.fail_after(TIMEOUT_S):  # in all: a document that trickles in is stopped too
                body, keep_s = await self._fetch(url)
        except TimeoutError as exc:
            raise DocumentError(f"The client's document did not arrive within {TIMEOUT_S:g} s.") from exc
        info = self._read(url, body)
        if keep_s > 0:
            if len(self._cache) >= CACHE_ENTRIES:
                self._cache.clear()
            self._cache[url] = (time.monotonic() + keep_s, info)
        return info

    async def _fetch(self, url: str) -> tuple[bytes, float]:
        parts = urlsplit(url)
        if (
            parts.scheme != "https"
            or not parts.hostname
            or parts.username
            or parts.password
            or parts.fragment
        ):
            raise DocumentError("A client ID metadata document is an https URL with no user and no fragment.")
        host, port = parts.hostname, parts.port or 443
        address = await self._address(host, port)
        pinned = f"[{address}]" if address.version == 6 else str(address)
        target = parts._replace(netloc=f"{pinned}:{port}").geturl()
        host_header = parts.netloc.rpartition("@")[2]
        try:
            async with httpx2.AsyncClient(verify=self.tls, follow_redirects=False, timeout=TIMEOUT_S) as http:
                request = http.build_request("GET", target, headers={"Host": host_header, "Accept": "application/json"},
                                             extensions={"sni_hostname": host})  # fmt: skip
                response = await http.send(request, stream=True)
                try:
                    if response.is_redirect:
                        raise DocumentError(f"The client's document URL redirects ({response.status_code}); "
                                            "redirects are not followed.")  # fmt: skip
                    if response.status_code != 200:
                        raise DocumentError(f"The client's document URL answered {response.status_code}.")
                    body = b""
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_BYTES:
                            raise DocumentError(f"The client's document is over {MAX_BYTES // 1024} KiB.")
                finally:
                    await response.aclose()
        except httpx2.HTTPError as exc:
            raise DocumentError(f"The client's document could not be fetched: {type(exc).__name__}.") from exc
        return body, _keep_s(response.headers.get("cache-control", ""))

    async def _address(self, host: str, port: int) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        """The address to connect to: the name's first, once every address it has is allowed."""
        try:
            found = await anyio.to_thread.run_sync(
                lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM),
                abandon_on_cancel=True, limiter=self._lookups,
            )  # fmt: skip
        except OSError as exc:
            raise DocumentError(f"The client's document host {host} does not resolve.") from exc
        addresses = [ipaddress.ip_address(item[4][0]) for item in found]
        if not addresses:
            raise DocumentError(f"The client's document host {host} has no address.")
        if not self.allow_private and any(not address.is_global for address in addresses):
            raise DocumentError(f"The client's document host {host} resolves to an address this server "
                                "does not fetch from (loopback, private or link-local).")  # fmt: skip
        return addresses[0]

    def _read(self, url: str, body: bytes) -> OAuthClientInformationFull:
        try:
            document = json.loads(body)
        except ValueError as exc:
            raise DocumentError("The client's document is not JSON.") from exc
        if not isinstance(document, dict):
            raise DocumentError("The client's document is not a JSON object.")
        if document.get("client_id") != url:
            raise DocumentError("The client's document names another client_id than its own URL.")
        if not isinstance(document.get("client_name"), str) or not document.get("redirect_uris"):
            raise DocumentError("The client's document needs client_name and redirect_uris.")
        uris = document["redirect_uris"]
        problems = (
            [redirect_problem(uri) for uri in uris if isinstance(uri, str)] if isinstance(uris, list) else []
        )
        if problem := next((p for p in problems if p is not None), None):
            raise DocumentError(f"The client's document has a redirect URI that may not be used: {problem}")
        method = document.get("token_endpoint_auth_method", "none")
        if method != "none":
            raise DocumentError(f"This server takes documents of public clients only, not {method!r}.")
        try:
            return OAuthClientInformationFull(
                client_id=url, client_name=document["client_name"], redirect_uris=document["redirect_uris"],
                token_endpoint_auth_method="none", grant_types=["authorization_code", "refresh_token"],
                response_types=["code"], scope=self.scopes,
            )  # fmt: skip
        except ValidationError as exc:
            raise DocumentError("The client's document has a redirect URI that is not a URL.") from exc


def _keep_s(cache_control: str) -> float:
    words = cache_control.lower()
    if "no-store" in words or "no-cache" in words:
        return 0.0
    found = _MAX_AGE.search(words)
    return min(float(found.group(1)), MAX_CACHE_S) if found else DEFAULT_CACHE_S
