"""The playground's authorization server, for protected endpoints (docs/http.md, "Protected endpoints").

The MCP SDK's OAuth routes do the protocol: `/authorize` (the authorization code grant with PKCE S256
required, exact redirect URIs, `state`), `/token` (codes and refresh tokens), `/register` (dynamic
client registration, RFC 7591) and `/revoke`. This module is their provider, which keeps everything in
the progress store (so every replica shares a flow), the RFC 8414 metadata (its issuer is this site as
the client reached it, as an endpoint's URL is), and the clients an owner registers by hand. The consent
page, where only the endpoint's owner may allow a client, is app/web/consent.py.

A grant is stored by the hash of its secret only: a consent waiting for the owner, a code (single use,
under a minute), an access token (an hour at most, never past its endpoint's end) and a refresh token
(rotated at every use). Each names its endpoint: a token opens only the endpoint it was issued for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import InvalidScopeError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import Settings
from app.progress.store import EndpointInfo, OAuthGrant
from app.web import oauth_log
from app.web.client import client_key, site_url
from app.web.client_documents import ClientDocuments, is_document_url
from app.web.endpoints import token_hash
from app.web.registration import ADDRESS, SITE, NewClients, RegistrationGate, WithAddress, document_client
from app.web.state import get_state

# Every protected endpoint's scopes: reading (initialize, lists, reads) and calling tools.
READ_SCOPE = "mcp:read"
TOOLS_SCOPE = "mcp:tools"
SCOPES = (READ_SCOPE, TOOLS_SCOPE)
SCOPE_TEXT = {READ_SCOPE: "start sessions, list and read your server's tools, resources and prompts",
              TOOLS_SCOPE: "call your server's tools"}  # fmt: skip
CONSENT_LIFETIME_S = 600
CODE_LIFETIME_S = 50  # under a minute: a code is a bearer credential in a URL
ACCESS_LIFETIME_S = 3600
REFRESH_LIFETIME_S = 24 * 3600
# The SDK's routes that clients call; they read no cookie and are exempt from the cross-site check.
CLIENT_PATHS = ("/authorize", "/token", "/register", "/revoke")
METADATA_PATH = "/.well-known/oauth-authorization-server"
CONSENT_PATH = "/oauth/consent/"

router = APIRouter()
log = logging.getLogger(__name__)


# RFC 6749 §3.3: a scope is printable ASCII without space, '"' or '\\'.
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,64}")


def tool_scopes(info: EndpointInfo) -> dict[str, str]:
    """The scope each of the endpoint's tools needs besides mcp:tools, as its owner set them."""
    try:
        found = json.loads(info.tool_scopes)
    except ValueError:
        return {}
    return (
        {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}
        if isinstance(found, dict)
        else {}
    )


def endpoint_scopes(info: EndpointInfo) -> list[str]:
    """Every scope a token for this endpoint may carry: the two of every endpoint, then its owner's."""
    return [*SCOPES, *sorted(set(tool_scopes(info).values()) - set(SCOPES))]


class PlaygroundClient(OAuthClientInformationFull):
    """A client as the SDK's routes see it. Which scopes it may ask for depends on the endpoint it
    asks for (its owner may add some), which the provider's `authorize` checks; here, only that each
    is a scope at all (RFC 6749 §3.3)."""

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        if requested_scope is None:
            return None
        requested = requested_scope.split(" ")
        if not all(SCOPE_TOKEN.fullmatch(scope) for scope in requested):
            raise InvalidScopeError("A scope is printable ASCII without spaces or quotes.")
        return requested


def secret_hash(secret: str) -> str:
    return hashlib.sha256(b"playground-oauth:" + secret.encode("utf-8", errors="surrogatepass")).hexdigest()


def endpoint_token(resource: str) -> str | None:
    """The endpoint token in a resource URL (`<site>/mcp/<token>`, as its Protected Resource Metadata
    names it: no query, no fragment (RFC 8707 §2), no other path), or None."""
    try:
        parts = urlsplit(resource)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or parts.query or parts.fragment or "#" in resource:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    _, found, token = parts.path.partition("/mcp/")
    return token if found and parts.path.startswith("/mcp/") and token and "/" not in token else None


class Provider:
    """The SDK's `OAuthAuthorizationServerProvider`, over the progress store."""

    def __init__(self, flows: oauth_log.FlowLog, documents: ClientDocuments | None = None,
                 new_clients: NewClients | None = None) -> None:  # fmt: skip
        self.flows = flows  # each endpoint's flow, for its owner to watch
        self.store = flows.store
        self.documents = documents  # clients by metadata document (the routes' provider has them)
        self.new_clients = new_clients  # ... and how many new ones each address may add

    async def _call(self, function: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(function, *args)

    # --- clients -----------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if self.documents is not None and is_document_url(client_id):
            found = await document_client(self.store, self.documents, self.new_clients, client_id)
            return PlaygroundClient.model_validate(found.model_dump()) if found is not None else None
        info = await self._call(self.store.oauth_client, client_id)
        return PlaygroundClient.model_validate_json(info) if info else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None  # the SDK's registration handler names every client
        # Registered for every scope (the answer says so): each authorization asks for what it needs,
        # and a client that asked for `mcp:read` first may step up to `mcp:tools` later.
        client_info.scope = " ".join(SCOPES)
        address, kept = ADDRESS.get(), self.new_clients.unused_kept if self.new_clients is not None else 0
        let_go = await self._call(self.store.save_oauth_client, client_info.client_id,
                                  client_info.model_dump_json(), None, address, kept)  # fmt: skip
        if let_go:
            log.info("registration: the address's oldest unused client let go for a new one")

    # --- authorization: a consent for the endpoint's owner -----------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if not params.resource:
            raise AuthorizeError("invalid_request", "The resource parameter (RFC 8707) names the endpoint.")
        # The resource is the URL the endpoint's metadata names: this site as the client reaches it,
        # then `/mcp/<token>` (another host with the token in its path names no endpoint of ours).
        site, token = SITE.get(), endpoint_token(params.resource)
        named = site is None or params.resource == f"{site}/mcp/{token}"
        info = await self.protected_endpoint(params.resource) if named else None
        if info is None:
            raise AuthorizeError("invalid_target", "The resource is not a live protected endpoint here.")
        allowed = endpoint_scopes(info)
        scopes = params.scopes or list(SCOPES)
        if not set(scopes) <= set(allowed):
            raise AuthorizeError("invalid_scope", f"This endpoint's scopes are {' '.join(allowed)}.")
        consent = secrets.token_urlsafe(24)
        assert client.client_id is not None
        data = {"scopes": scopes, "state": params.state, "code_challenge": params.code_challenge,
                "redirect_uri": str(params.redirect_uri), "resource": params.resource,
                "explicit": params.redirect_uri_provided_explicitly}  # fmt: skip
        grant = OAuthGrant(secret_hash(consent), "consent", client.client_id, info.id, json.dumps(data),
                           time.time() + CONSENT_LIFETIME_S)  # fmt: skip
        await self._call(self.store.add_oauth_grant, grant)
        await self.flows.record(info.id, "authorize", "GET /authorize", 302, client_id=client.client_id,
                                client_name=client.client_name, registration=registration_kind(client.client_id),
                                registered_at=client.client_id_issued_at,
                                auth_method=client.token_endpoint_auth_method, scopes=scopes,
                                redirect_uri=str(params.redirect_uri), state=params.state is not None,
                                code_challenge_method="S256")  # fmt: skip
        return CONSENT_PATH + consent

    async def protected_endpoint(self, resource: str) -> EndpointInfo | None:
        """The live protected endpoint a resource URL names, or None."""
        token = endpoint_token(resource)
        return None if token is None else await self.protected_by_token(token)

    async def protected_by_token(self, token: str) -> EndpointInfo | None:
        info = await self._call(self.store.endpoint_by_token_hash, token_hash(token))
        if info is None or info.auth != "oauth" or not info.live(time.time()):
            return None
        return info

    # --- codes and tokens ----------------------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        grant = await self._call(self.store.oauth_grant, secret_hash(authorization_code), "code")
        if grant is None:
            await self._replayed(secret_hash(authorization_code), "code", client)
        if grant is None or grant.client_id != client.client_id:
            return None
        data = json.loads(grant.data)
        return AuthorizationCode(code=authorization_code, scopes=data["scopes"], expires_at=grant.expires_at,
                                 client_id=grant.client_id, code_challenge=data["code_challenge"],
                                 redirect_uri=data["redirect_uri"],
                                 redirect_uri_provided_explicitly=data["explicit"], resource=data["resource"],
                                 subject=grant.endpoint_id)  # fmt: skip

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        grant = await self._call(self.store.use_oauth_grant, secret_hash(authorization_code.code), "code")
        if grant is None:  # used already (only one exchange ever gets it), or gone meanwhile
            raise TokenError("invalid_grant", "The code was used already or has expired.")
        tokens = await self._issue(grant.client_id, grant.endpoint_id, authorization_code.scopes,
                                   authorization_code.resource, family=grant.key_hash)  # fmt: skip
        await self._issued(grant, "token", tokens, code=oauth_log.masked(authorization_code.code))
        return tokens

    async def _issued(self, grant: OAuthGrant, step: str, tokens: OAuthToken, **detail: Any) -> None:
        assert grant.endpoint_id is not None
        await self.flows.record(grant.endpoint_id, step, "POST /token", 200, client_id=grant.client_id,
                                scope=tokens.scope, expires_in=tokens.expires_in,
                                access_token=oauth_log.masked(tokens.access_token),
                                refresh_token=oauth_log.masked(tokens.refresh_token), **detail)  # fmt: skip

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        grant = await self._call(self.store.oauth_grant, secret_hash(refresh_token), "refresh")
        if grant is None:
            await self._replayed(secret_hash(refresh_token), "refresh", client)
        if grant is None or grant.client_id != client.client_id:
            return None
        data = json.loads(grant.data)
        return RefreshToken(token=refresh_token, client_id=grant.client_id, scopes=data["scopes"],
                            expires_at=int(grant.expires_at), resource=data["resource"],
                            subject=grant.endpoint_id)  # fmt: skip

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        grant = await self._call(self.store.use_oauth_grant, secret_hash(refresh_token.token), "refresh")
        if grant is None:
            raise TokenError("invalid_grant", "The refresh token was used already or has expired.")
        data = json.loads(grant.data)
        await self._call(self.store.revoke_oauth_grants, [data["access"]])  # rotated
        tokens = await self._issue(grant.client_id, grant.endpoint_id, scopes, refresh_token.resource,
                                   family=data.get("family") or grant.key_hash)  # fmt: skip
        await self._issued(grant, "refresh", tokens, presented=oauth_log.masked(refresh_token.token))
        return tokens

    async def _replayed(self, key_hash: str, kind: str, client: OAuthClientInformationFull) -> None:
        """A code or refresh token that was used already, presented again by its client: someone else
        may hold a copy (a code travels in a URL). Every token issued from it goes, the newest pair of
        a refresh token's line too: whoever holds the real one authorizes again (RFC 6749 §4.1.2;
        RFC 9700 §4.14.2). An expired one, not used, has nothing issued from it, or nothing alive."""
        grant = await self._call(self.store.any_oauth_grant, key_hash)
        if (
            grant is None
            or grant.kind != kind
            or grant.client_id != client.client_id
            or grant.endpoint_id is None
        ):
            return
        family = key_hash if kind == "code" else json.loads(grant.data).get("family")
        if not family or not await self._call(self.store.revoke_oauth_family, grant.endpoint_id, family):
            return
        await self.flows.record(grant.endpoint_id, "replayed", "POST /token", 400, kind=kind,
                                client_id=grant.client_id)  # fmt: skip

    async def _issue(
        self, client_id: str, endpoint_id: str | None, scopes: list[str], resource: str | None, family: str
    ) -> OAuthToken:
        info = await self.protected_endpoint(resource or "")
        if info is None or info.id != endpoint_id:
            raise TokenError("invalid_grant", "The endpoint has ended.")
        now = time.time()
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        access_until = min(now + ACCESS_LIFETIME_S, info.expires_at)
        pair = {"scopes": scopes, "resource": resource, "family": family}  # family: the code it began with
        grants = [
            OAuthGrant(secret_hash(access), "access", client_id, endpoint_id,
                       json.dumps({**pair, "refresh": secret_hash(refresh)}), access_until),
            OAuthGrant(secret_hash(refresh), "refresh", client_id, endpoint_id,
                       json.dumps({**pair, "access": secret_hash(access)}),
                       min(now + REFRESH_LIFETIME_S, info.expires_at)),
        ]  # fmt: skip
        for grant in grants:
            await self._call(self.store.add_oauth_grant, grant)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=max(int(access_until - now), 1),
                          scope=" ".join(scopes), refresh_token=refresh)  # fmt: skip

    async def load_access_token(self, token: str) -> AccessToken | None:
        grant = await self._call(self.store.oauth_grant, secret_hash(token), "access")
        if grant is None:
            return None
        data = json.loads(grant.data)
        return AccessToken(token=token, client_id=grant.client_id, scopes=data["scopes"],
                           expires_at=int(grant.expires_at), resource=data["resource"],
                           subject=grant.endpoint_id)  # fmt: skip

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """Revoking either of a pair revokes both (RFC 7009 lets the server do so)."""
        kind = "access" if isinstance(token, AccessToken) else "refresh"
        grant = await self._call(self.store.oauth_grant, secret_hash(token.token), kind)
        if grant is None:
            return
        other = json.loads(grant.data)["refresh" if kind == "access" else "access"]
        await self._call(self.store.revoke_oauth_grants, [grant.key_hash, other])
        if grant.endpoint_id is not None:
            await self.flows.record(grant.endpoint_id, "revoke", "POST /revoke", 200, kind=kind,
                                    presented=oauth_log.masked(token.token))  # fmt: skip

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: Any
    ) -> OAuthToken:
        raise TokenError(
            "unsupported_grant_type", "Only authorization codes and refresh tokens are granted here."
        )


def client_routes(
    flows: oauth_log.FlowLog, settings: Settings, refused: Callable[[], None] = lambda: None
) -> list[BaseRoute]:
    """The SDK's routes for clients, over our provider. Its metadata route (whose issuer is fixed when
    made) is replaced by ours (the issuer is the site as each client reaches it)."""
    documents = ClientDocuments(settings.client_documents_from_private, settings.client_documents_ca_file,
                                " ".join(SCOPES))  # fmt: skip
    new_clients = NewClients(settings.client_documents_per_hour, refused, settings.unused_clients_per_address)
    provider = Provider(flows, documents, new_clients)
    routes = create_auth_routes(
        provider,
        issuer_url=AnyHttpUrl("http://localhost"),  # used only by the metadata route left out below
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=list(SCOPES), default_scopes=list(SCOPES)
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    kept: list[BaseRoute] = []
    for route in routes:
        path = getattr(route, "path", None)
        if path == METADATA_PATH:
            continue
        if path == "/token":  # its refusals are steps to watch too; a route is an ASGI app of its own
            route = Route(path, endpoint=oauth_log.TokenWatch(WithAddress(route), flows, secret_hash))
        elif path == "/authorize":
            route = Route(
                path,
                endpoint=oauth_log.AuthorizeWatch(WithAddress(route), flows, provider.protected_endpoint),
            )
        elif path == "/register":
            route = Route(path, endpoint=oauth_log.RegistrationWatch(RegistrationGate(route), flows))
        elif path == "/revoke":
            route = Route(path, endpoint=PublicRevocation(route))
        kept.append(route)
    return kept


def registration_kind(client_id: str) -> str:
    """How a client came to be known here, for the flow's reader."""
    if is_document_url(client_id):
        return "client ID metadata document"
    if client_id.startswith(HAND_CLIENT_PREFIX):
        return "registered by the owner (pre-registration)"
    return "dynamic client registration"


class PublicRevocation:
    """Around the SDK's `/revoke` route, whose request model requires a `client_secret` field: a public
    client (RFC 7009 §2.1: `token` and `client_id` only) gets an empty one added, which its
    authentication ignores. A client with a secret is authenticated as before."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await oauth_log.whole_body(receive)
        if "client_secret" not in parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True):
            body += b"&client_secret=" if body else b"client_secret="
        await self.app(scope, oauth_log.replaying(body, receive), send)


@router.get(METADATA_PATH)
async def metadata(request: Request) -> JSONResponse:
    issuer = AnyHttpUrl(site_url(request))
    data = build_metadata(issuer, None, ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES)),
                          RevocationOptions(enabled=True))  # fmt: skip
    body = data.model_dump(mode="json", exclude_none=True)
    body["issuer"] = site_url(request)  # as the client reached it, with no trailing slash added
    body["authorization_response_iss_parameter_supported"] = True  # RFC 9207
    # Public clients (dynamic registration with `none`, metadata documents) authenticate with none.
    for methods in ("token_endpoint_auth_methods_supported", "revocation_endpoint_auth_methods_supported"):
        body[methods] = [*body.get(methods, []), "none"]
    body["client_id_metadata_document_supported"] = True  # app/web/client_documents.py
    flows = get_state(request).flows
    if (endpoint_id := flows.endpoint_read_by(client_key(request.scope))) is not None:
        await flows.record(endpoint_id, "server_metadata", f"GET {METADATA_PATH}", 200)
    return JSONResponse(body, headers={"Access-Control-Allow-Origin": "*", "Cache-Control": "no-store"})


# --- clients the owner registers by hand (pre-registration): app/web/oauth_owner.py ---------------

HAND_CLIENT_PREFIX = "playground-"  # the ids of clients registered in the panel
