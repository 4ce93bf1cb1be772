"""The playground's authorization server, for protected endpoints (docs/http.md, "Protected endpoints").

The MCP SDK's OAuth routes do the protocol: `/authorize` (the authorization code grant with PKCE S256
required, exact redirect URIs, `state`), `/token` (codes and refresh tokens), `/register` (dynamic
client registration, RFC 7591) and `/revoke`. This module is their provider, which keeps everything in
the progress store (so every replica shares a flow), the RFC 8414 metadata (its issuer is this site as
the client reached it, as an endpoint's URL is), and the consent page, where only the endpoint's owner
may allow a client.

A grant is stored by the hash of its secret only: a consent waiting for the owner, a code (single use,
under a minute), an access token (an hour at most, never past its endpoint's end) and a refresh token
(rotated at every use). Each names its endpoint: a token opens only the endpoint it was issued for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

import anyio
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.routing import BaseRoute, Route

from app.config import Settings
from app.progress.store import EndpointInfo, OAuthGrant, ProgressStore
from app.web import oauth_log
from app.web.client import is_https, site_url
from app.web.client_documents import ClientDocuments, DocumentError, is_document_url
from app.web.endpoints import token_hash
from app.web.guard import CONTENT_SECURITY_POLICY
from app.web.guesses import wrong
from app.web.learner import has_identity, learner_id
from app.web.state import get_state
from app.web.templating import page

# Every protected endpoint's scopes: reading (initialize, lists, reads) and calling tools.
READ_SCOPE = "mcp:read"
TOOLS_SCOPE = "mcp:tools"
SCOPES = (READ_SCOPE, TOOLS_SCOPE)
SCOPE_TEXT = {READ_SCOPE: "start sessions, list and read your server's tools, resources and prompts",
              TOOLS_SCOPE: "call your server's tools"}  # fmt: skip
CONSENT_LIFETIME_S = 600
CODE_LIFETIME_S = 60
ACCESS_LIFETIME_S = 3600
REFRESH_LIFETIME_S = 24 * 3600
# The SDK's routes that clients call; they read no cookie and are exempt from the cross-site check.
CLIENT_PATHS = ("/authorize", "/token", "/register", "/revoke")
METADATA_PATH = "/.well-known/oauth-authorization-server"
CONSENT_PATH = "/oauth/consent/"

router = APIRouter()
log = logging.getLogger(__name__)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(b"playground-oauth:" + secret.encode("utf-8", errors="surrogatepass")).hexdigest()


def endpoint_token(resource: str) -> str | None:
    """The endpoint token in a resource URL (`<site>/mcp/<token>`), or None."""
    try:
        path = urlsplit(resource).path
    except ValueError:
        return None
    _, found, token = path.partition("/mcp/")
    return token if found and token and "/" not in token else None


class Provider:
    """The SDK's `OAuthAuthorizationServerProvider`, over the progress store."""

    def __init__(self, store: ProgressStore, documents: ClientDocuments | None = None) -> None:
        self.store = store
        self.documents = documents  # clients by metadata document (the routes' provider has them)

    async def _call(self, function: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(function, *args)

    # --- clients -----------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if self.documents is not None and is_document_url(client_id):
            try:
                found = await self.documents.client(client_id)
            except DocumentError as exc:
                log.info("client %s: %s", client_id[:200], exc)
                return None
            # Kept beside registered clients, so that pages without the fetcher can name it.
            await self._call(self.store.save_oauth_client, client_id, found.model_dump_json())
            return found
        info = await self._call(self.store.oauth_client, client_id)
        return OAuthClientInformationFull.model_validate_json(info) if info else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None  # the SDK's registration handler names every client
        # Registered for every scope (the answer says so): each authorization asks for what it needs,
        # and a client that asked for `mcp:read` first may step up to `mcp:tools` later.
        client_info.scope = " ".join(SCOPES)
        await self._call(self.store.save_oauth_client, client_info.client_id, client_info.model_dump_json())

    # --- authorization: a consent for the endpoint's owner -----------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if not params.resource:
            raise AuthorizeError("invalid_request", "The resource parameter (RFC 8707) names the endpoint.")
        info = await self.protected_endpoint(params.resource)
        if info is None:
            raise AuthorizeError("invalid_target", "The resource is not a live protected endpoint here.")
        scopes = params.scopes or list(SCOPES)
        if not set(scopes) <= set(SCOPES):
            raise AuthorizeError("invalid_scope", f"The scopes here are {' '.join(SCOPES)}.")
        consent = secrets.token_urlsafe(24)
        assert client.client_id is not None
        data = {"scopes": scopes, "state": params.state, "code_challenge": params.code_challenge,
                "redirect_uri": str(params.redirect_uri), "resource": params.resource,
                "explicit": params.redirect_uri_provided_explicitly}  # fmt: skip
        grant = OAuthGrant(secret_hash(consent), "consent", client.client_id, info.id, json.dumps(data),
                           time.time() + CONSENT_LIFETIME_S)  # fmt: skip
        await self._call(self.store.add_oauth_grant, grant)
        await oauth_log.record(self.store, info.id, "authorize", "GET /authorize", 302, client_id=client.client_id,
                               client_name=client.client_name, registered_at=client.client_id_issued_at,
                               auth_method=client.token_endpoint_auth_method, scopes=scopes,
                               redirect_uri=str(params.redirect_uri), state=params.state is not None,
                               code_challenge_method="S256")  # fmt: skip
        return CONSENT_PATH + consent

    async def protected_endpoint(self, resource: str) -> EndpointInfo | None:
        token = endpoint_token(resource)
        if token is None:
            return None
        info = await self._call(self.store.endpoint_by_token_hash, token_hash(token))
        if info is None or info.auth != "oauth" or not info.live(time.time()):
            return None
        return info

    # --- codes and tokens ----------------------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        grant = await self._call(self.store.oauth_grant, secret_hash(authorization_code), "code")
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
                                   authorization_code.resource)  # fmt: skip
        await self._issued(grant, "token", tokens, code=oauth_log.masked(authorization_code.code))
        return tokens

    async def _issued(self, grant: OAuthGrant, step: str, tokens: OAuthToken, **detail: Any) -> None:
        assert grant.endpoint_id is not None
        await oauth_log.record(self.store, grant.endpoint_id, step, "POST /token", 200, client_id=grant.client_id,
                               scope=tokens.scope, expires_in=tokens.expires_in,
                               access_token=oauth_log.masked(tokens.access_token),
                               refresh_token=oauth_log.masked(tokens.refresh_token), **detail)  # fmt: skip

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        grant = await self._call(self.store.oauth_grant, secret_hash(refresh_token), "refresh")
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
        await self._call(self.store.revoke_oauth_grants, [json.loads(grant.data)["access"]])  # rotated
        tokens = await self._issue(grant.client_id, grant.endpoint_id, scopes, refresh_token.resource)
        await self._issued(grant, "refresh", tokens, presented=oauth_log.masked(refresh_token.token))
        return tokens

    async def _issue(
        self, client_id: str, endpoint_id: str | None, scopes: list[str], resource: str | None
    ) -> OAuthToken:
        info = await self.protected_endpoint(resource or "")
        if info is None or info.id != endpoint_id:
            raise TokenError("invalid_grant", "The endpoint has ended.")
        now = time.time()
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        access_until = min(now + ACCESS_LIFETIME_S, info.expires_at)
        pair = {"scopes": scopes, "resource": resource}
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
            await oauth_log.record(self.store, grant.endpoint_id, "revoke", "POST /revoke", 200, kind=kind,
                                   presented=oauth_log.masked(token.token))  # fmt: skip

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: Any
    ) -> OAuthToken:
        raise TokenError(
            "unsupported_grant_type", "Only authorization codes and refresh tokens are granted here."
        )


def client_routes(store: ProgressStore, settings: Settings) -> list[BaseRoute]:
    """The SDK's routes for clients, over our provider. Its metadata route (whose issuer is fixed when
    made) is replaced by ours (the issuer is the site as each client reaches it)."""
    documents = ClientDocuments(settings.client_documents_from_private, settings.client_documents_ca_file,
                                " ".join(SCOPES))  # fmt: skip
    routes = create_auth_routes(
        Provider(store, documents),
        issuer_url=AnyHttpUrl("http://localhost"),  # used only by the metadata route left out below
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=list(SCOPES), default_scopes=list(SCOPES)
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    kept: list[BaseRoute] = [route for route in routes if getattr(route, "path", None) != METADATA_PATH]
    for route in kept:
        if isinstance(route, Route) and route.path == "/token":  # its refusals are steps to watch too
            route.app = oauth_log.TokenWatch(route.app, store, secret_hash)
    return kept


@router.get(METADATA_PATH)
async def metadata(request: Request) -> JSONResponse:
    issuer = AnyHttpUrl(site_url(request))
    data = build_metadata(issuer, None, ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES)),
                          RevocationOptions(enabled=True))  # fmt: skip
    body = data.model_dump(mode="json", exclude_none=True)
    body["issuer"] = site_url(request)  # as the client reached it, with no trailing slash added
    body["authorization_response_iss_parameter_supported"] = True  # RFC 9207
    body["client_id_metadata_document_supported"] = True  # app/web/client_documents.py
    return JSONResponse(body, headers={"Access-Control-Allow-Origin": "*", "Cache-Control": "no-store"})


# --- the consent page ------------------------------------------------------------------------------


async def _consent(request: Request, consent: str) -> tuple[OAuthGrant, dict[str, Any], EndpointInfo] | None:
    state = get_state(request)
    grant = await anyio.to_thread.run_sync(state.progress.oauth_grant, secret_hash(consent), "consent")
    if grant is None:
        return None
    data = json.loads(grant.data)
    info = await Provider(state.progress).protected_endpoint(data["resource"])
    if info is None or info.id != grant.endpoint_id:
        return None
    return grant, data, info


def _owner(request: Request, info: EndpointInfo) -> bool:
    """Whether the visitor is the endpoint's owner (a visitor without an identity is nobody's owner,
    and is given none here)."""
    return has_identity(request) and learner_id(request) == info.learner_id


@router.get(CONSENT_PATH + "{consent}", response_class=HTMLResponse)
async def consent_page(request: Request, consent: str) -> Response:
    found = await _consent(request, consent)
    if found is None:
        return page(request, "oauth_consent.html", status=404, title="Authorization request",
                    error="This authorization request has expired or was answered already. Start again "
                          "from your client.")  # fmt: skip
    grant, data, info = found
    if not _owner(request, info):
        return _not_owner(request, consent)
    shown = page(request, "oauth_consent.html", title="Allow a client to use your endpoint", consent=consent,
                 client_host=_host(grant.client_id), redirect_host=_host(data["redirect_uri"]),
                 client_id=grant.client_id, client_name=await _client_name(request, grant.client_id),
                 endpoint=info, scopes=data["scopes"], descriptions=SCOPE_TEXT)  # fmt: skip
    # The answer redirects to the client: a browser applies the form's CSP to that redirect too.
    shown.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.replace(
        "form-action 'self'", f"form-action 'self' {_source(data['redirect_uri'])}"
    )
    return shown


@router.post(CONSENT_PATH + "{consent}")
async def consent_answer(request: Request, consent: str, answer: str = Form("")) -> Response:
    state = get_state(request)
    found = await _consent(request, consent)
    if found is None:
        return await consent_page(request, consent)
    grant, data, info = found
    if not _owner(request, info):
        return await consent_page(request, consent)
    if await anyio.to_thread.run_sync(state.progress.use_oauth_grant, grant.key_hash, "consent") is None:
        return await consent_page(request, consent)  # answered meanwhile, in another tab
    issuer = site_url(request)
    await oauth_log.record(state.progress, info.id, "consent", f"POST {CONSENT_PATH}…", 303,
                           answer="allow" if answer == "allow" else "deny", client_id=grant.client_id,
                           redirect_uri=data["redirect_uri"], iss=issuer)  # fmt: skip
    if answer != "allow":
        target = construct_redirect_uri(data["redirect_uri"], error="access_denied",
                                        error_description="The endpoint's owner denied the request.",
                                        state=data["state"], iss=issuer)  # fmt: skip
        return RedirectResponse(target, status_code=303)
    code = secrets.token_urlsafe(32)
    await anyio.to_thread.run_sync(state.progress.add_oauth_grant, OAuthGrant(
        secret_hash(code), "code", grant.client_id, info.id, grant.data, time.time() + CODE_LIFETIME_S))  # fmt: skip
    target = construct_redirect_uri(data["redirect_uri"], code=code, state=data["state"], iss=issuer)
    return RedirectResponse(target, status_code=303)


def _not_owner(request: Request, consent: str, error: str | None = None, status: int = 403) -> Response:
    """A visitor who is not the owner: refused, with a way in for the owner in another browser (a
    client opens the system's browser, which may not be the one the endpoint was made in)."""
    return page(request, "oauth_consent.html", status=status, title="Authorization request", consent=consent,
                error=error or "Only the owner of this endpoint can allow a client to use it.",
                resume=True)  # fmt: skip


@router.post(CONSENT_PATH + "{consent}/resume")
async def consent_resume(request: Request, consent: str, code: str = Form("")) -> Response:
    """The owner in a browser without their cookie: their resume code makes this browser theirs
    (as /resume does), and the consent page opens. Any other code is refused and counted."""
    state = get_state(request)
    found = await _consent(request, consent)
    if found is None:
        return await consent_page(request, consent)
    info = found[2]
    learner = await anyio.to_thread.run_sync(state.progress.learner_for_resume_code, code)
    if learner != info.learner_id:
        if (refusal := wrong(request, "resume")) is not None:
            return refusal
        return _not_owner(request, consent, "That is not the resume code of this endpoint's owner.")
    response = RedirectResponse(CONSENT_PATH + consent, status_code=303)
    assert state.identity is not None  # the app has started
    response.headers.append("set-cookie", state.identity.cookie(learner, secure=is_https(request.scope)))
    return response


async def _client_name(request: Request, client_id: str) -> str | None:
    info = await Provider(get_state(request).progress).get_client(client_id)
    return info.client_name if info is not None else None


def _source(url: str) -> str:
    """A redirect URI as a CSP source: its origin (http and https), or its scheme (an app's own)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else f"{parts.scheme}:"


def _host(url: str) -> str:
    """What the page names a client or a redirect by: its host (a client's own name is its to choose,
    and proves nothing)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        host = None
    return host or url[:80]
