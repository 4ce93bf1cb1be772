"""What a client unknown to the authorization server may cost: anyone may register one, by dynamic
client registration (RFC 7591, `POST /register`) or by naming a client ID metadata document at
`/authorize`, without signing in, and every client is a row in the database. So a client's metadata
is held to a size a real client never comes near, and the clients one client address (IPv6: its /64)
brought that were never used are at most `Settings.unused_clients_per_address`: past it the address's
oldest unused one goes. Nothing is refused for that count: a class shares one NAT address, and a
refusal would let one member of it keep the others from registering (a real client asks for an
authorization at once, and is used from then on). A document's fetch is work done for the asker, so
an address adds at most `Settings.client_documents_per_hour` new document clients an hour. The store
lets go of clients nobody uses (`OAUTH_CLIENT_UNUSED_S`). A registration's refusals are JSON, as the
SDK's own are, with what to do next.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from contextvars import ContextVar

import anyio
from mcp.shared.auth import OAuthClientInformationFull
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from app.progress.store import ProgressStore
from app.relay.rates import KeyedRate
from app.web.client import client_key, site_url
from app.web.client_documents import ClientDocuments, DocumentError
from app.web.oauth_log import client_refused, replaying
from app.web.redirects import redirect_problem

log = logging.getLogger(__name__)

# A client's metadata as it registers: a real one (a name, a few redirect URIs, grant types, an auth
# method) is well under 2 KiB.
METADATA_BYTES = 8 * 1024
WINDOW_S = 3600.0

# The client address of the request the authorization server's routes are handling (`WithAddress`),
# for the provider, which the SDK calls with a client ID only; and this site as that client reached it
# (a resource must name an endpoint of it).
ADDRESS: ContextVar[str | None] = ContextVar("oauth_client_address", default=None)
SITE: ContextVar[str | None] = ContextVar("oauth_site", default=None)


class NewClients:
    """How many new document clients each address has made the server fetch and keep in the last hour,
    and how many unused clients of an address are kept."""

    def __init__(self, per_hour: int, refused: Callable[[], None] = lambda: None,
                 unused_kept: int = 300) -> None:  # fmt: skip
        self.rate = KeyedRate(per_hour, WINDOW_S)
        self.refused = refused  # told of each refusal (the metrics count them)
        self.unused_kept = unused_kept

    @property
    def limit(self) -> int:
        return self.rate.limit

    def wait(self, address: str) -> float | None:
        """None when `address` may add one more (and it is counted), else the seconds until it may."""
        wait = self.rate.wait(address)
        if wait is not None:
            self.refused()
        return wait

    def refund(self, address: str) -> None:
        self.rate.refund(address)


class WithAddress:
    """Around one of the SDK's routes: the request's client address in `ADDRESS` while it runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        http = scope["type"] == "http"
        token = ADDRESS.set(client_key(scope) if http else None)
        site = SITE.set(site_url(Request(scope)) if http else None)
        try:
            await self.app(scope, receive, send)
        finally:
            SITE.reset(site)
            ADDRESS.reset(token)


async def document_client(store: ProgressStore, documents: ClientDocuments, new_clients: NewClients | None,
                          client_id: str) -> OAuthClientInformationFull | None:  # fmt: skip
    """A client named by its metadata document, fetched (or from the fetcher's cache) and kept beside
    registered clients, so that pages without the fetcher can name it; None, logged, when it may not
    be. One the store does not hold yet counts as a new client of the request's address."""
    address = ADDRESS.get()
    counter = new_clients if address is not None else None  # who counts this client, if it is new
    if counter is not None and address is not None:
        if await anyio.to_thread.run_sync(store.oauth_client, client_id) is not None:
            counter = None  # kept already: not new
        elif counter.wait(address) is not None:
            log.info("client %s: its address has added too many clients this hour", client_id[:200])
            client_refused(f"This address has added {counter.limit} new clients in the last hour; a client "
                           "it used before still works. Try this one again later.")  # fmt: skip
            return None
    try:
        found: OAuthClientInformationFull | None = await documents.client(client_id)
    except DocumentError as exc:
        log.info("client %s: %s", client_id[:200], exc)
        client_refused(str(exc))
        found = None
    info = found.model_dump_json() if found is not None else ""
    if len(info) > METADATA_BYTES:
        log.info("client %s: its metadata is over %d bytes", client_id[:200], METADATA_BYTES)
        client_refused(f"The client's metadata is over {METADATA_BYTES // 1024} KiB.")
        found = None
    if found is None:
        if counter is not None and address is not None:
            counter.refund(address)  # nothing was kept
        return None
    unused_kept = new_clients.unused_kept if new_clients is not None else 0
    await anyio.to_thread.run_sync(store.save_oauth_client, client_id, info, None, address, unused_kept)
    return found


def _redirects_problem(body: bytes) -> str | None:
    """Why the redirect URIs of a registration's metadata may not be kept (the SDK reads the rest)."""
    try:
        uris = json.loads(body).get("redirect_uris")
    except (ValueError, AttributeError):
        return None  # not a JSON object: the SDK refuses it in its own words
    if not isinstance(uris, list):
        return None
    return next(
        (problem for uri in uris if isinstance(uri, str) and (problem := redirect_problem(uri))), None
    )


class RegistrationGate:
    """Around the SDK's `/register` route: the body's size first, then its redirect URIs (app/web/
    redirects.py). The client's address is in `ADDRESS` while the SDK registers it (the provider
    keeps it with the client)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = WithAddress(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await _body(receive, METADATA_BYTES)
        if body is None:
            await _refuse(send, 400, "invalid_client_metadata",
                          f"The client's metadata is over {METADATA_BYTES // 1024} KiB; a client needs a name, "
                          "its redirect URIs and a few fields more.")  # fmt: skip
            return
        if (problem := _redirects_problem(body)) is not None:
            await _refuse(send, 400, "invalid_redirect_uri", problem)  # RFC 7591 §3.2.2
            return
        await self.app(scope, replaying(body, receive), send)


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The request's body, or None once it goes past `limit` (the rest is left unread)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _refuse(send: Send, status: int, error: str, description: str) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store")]  # fmt: skip
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
