"""The authorization server's consent page (docs/http.md, "Protected endpoints"): a plain form, shown
only to the protected endpoint's owner, naming the client, where the browser goes next and the scopes;
"Allow" redirects to the client with a single-use code, `state` and `iss` (RFC 9207), "Deny" with
access_denied. The owner in a browser without their cookie continues with their resume code (which
makes that browser theirs) or with a one-time approval code from the endpoint panel (which answers
one consent, and gives the browser nothing else)."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

import anyio
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from mcp.server.auth.provider import construct_redirect_uri

from app.progress.store import EndpointInfo, OAuthGrant
from app.web.client import is_https, site_url
from app.web.guard import CONTENT_SECURITY_POLICY
from app.web.guesses import wrong
from app.web.learner import has_identity, learner_id
from app.web.oauth import (
    CODE_LIFETIME_S,
    CONSENT_PATH,
    SCOPE_TEXT,
    Provider,
    secret_hash,
    tool_scopes,
)
from app.web.oauth_owner import my_protected
from app.web.redirects import csp_source
from app.web.state import get_state
from app.web.templating import page

router = APIRouter()
APPROVAL_LIFETIME_S = 600
# An approval code is typed by hand: letters and digits that cannot be read as each other.
APPROVAL_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
APPROVAL_LENGTH = 10  # 32**10 = 2**50 codes, against a guesser counted by app/web/guesses.py


async def _consent(request: Request, consent: str) -> tuple[OAuthGrant, dict[str, Any], EndpointInfo] | None:
    state = get_state(request)
    grant = await anyio.to_thread.run_sync(state.progress.oauth_grant, secret_hash(consent), "consent")
    if grant is None:
        return None
    data = json.loads(grant.data)
    info = await Provider(state.flows).protected_endpoint(data["resource"])
    if info is None or info.id != grant.endpoint_id:
        return None
    return grant, data, info


def _owner(request: Request, info: EndpointInfo) -> bool:
    """Whether the visitor is the endpoint's owner (a visitor without an identity is nobody's owner,
    and is given none here)."""
    return has_identity(request) and learner_id(request) == info.learner_id


def _normal_approval(code: str) -> str:
    """An approval code as typed (any case, with spaces or dashes) in the form it is stored by."""
    return "".join(char for char in code.upper() if char.isalnum())


async def _approval(request: Request, code: str, info: EndpointInfo) -> OAuthGrant | None:
    """The unused approval code of this endpoint that `code` is, if it is one."""
    normal = _normal_approval(code)
    if not normal:
        return None
    grant = await anyio.to_thread.run_sync(
        get_state(request).progress.oauth_grant, secret_hash(normal), "approval"
    )
    return grant if grant is not None and grant.endpoint_id == info.id else None


@router.post("/api/endpoints/{endpoint_id}/approval-code", status_code=201)
async def approval_code(request: Request, endpoint_id: str) -> JSONResponse:
    """A one-time approval code for the owner's protected endpoint: typed on a consent page in another
    browser (the one a client opened), it answers that one consent."""
    info = await my_protected(request, endpoint_id, "approval codes")
    if isinstance(info, JSONResponse):
        return info
    code = "".join(secrets.choice(APPROVAL_ALPHABET) for _ in range(APPROVAL_LENGTH))
    await anyio.to_thread.run_sync(get_state(request).progress.add_oauth_grant, OAuthGrant(
        secret_hash(code), "approval", "", info.id, "{}", time.time() + APPROVAL_LIFETIME_S))  # fmt: skip
    shown = f"{code[:5]}-{code[5:]}"
    return JSONResponse({"code": shown, "expires_in": APPROVAL_LIFETIME_S}, status_code=201,
                        headers={"Cache-Control": "no-store"})  # fmt: skip


@router.get(CONSENT_PATH + "{consent}", response_class=HTMLResponse)
async def consent_page(request: Request, consent: str) -> Response:
    return await _consent_form(request, consent)


async def _consent_form(request: Request, consent: str, approval: str | None = None) -> Response:
    """The consent form for the owner, or for a holder of their approval code (checked by the caller,
    and again when the answer comes); anyone else is refused."""
    found = await _consent(request, consent)
    if found is None:
        return page(request, "oauth_consent.html", status=404, title="Authorization request",
                    error="This authorization request has expired or was answered already. Start again "
                          "from your client.")  # fmt: skip
    grant, data, info = found
    if approval is None and not _owner(request, info):
        return _not_owner(request, consent)
    # Shown to its owner: anyone with the endpoint's URL may ask for consents, and 100 of theirs would
    # otherwise push this one out while the owner reads it.
    await anyio.to_thread.run_sync(get_state(request).progress.show_oauth_grant, grant.key_hash)
    shown = page(request, "oauth_consent.html", title="Allow a client to use your endpoint", consent=consent,
                 client_host=_host(grant.client_id), redirect_host=_host(data["redirect_uri"]),
                 client_id=grant.client_id, client_name=await _client_name(request, grant.client_id),
                 endpoint=info, scopes=data["scopes"], descriptions=_descriptions(info),
                 approval=approval)  # fmt: skip
    # The answer redirects to the client: a browser applies the form's CSP to that redirect too.
    if (source := csp_source(data["redirect_uri"])) is not None:
        shown.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.replace(
            "form-action 'self'", f"form-action 'self' {source}"
        )
    return shown


@router.post(CONSENT_PATH + "{consent}")
async def consent_answer(request: Request, consent: str, answer: str = Form(""),
                         approval: str = Form("")) -> Response:  # fmt: skip
    state = get_state(request)
    found = await _consent(request, consent)
    if found is None:
        return await consent_page(request, consent)
    grant, data, info = found
    if not _owner(request, info):
        # Not signed in as the owner: only an approval code of theirs, used now, answers for them.
        held = await _approval(request, approval, info) if approval else None
        if held is None or await anyio.to_thread.run_sync(state.progress.use_oauth_grant, held.key_hash,
                                                          "approval") is None:  # fmt: skip
            if (refusal := wrong(request, "resume")) is not None:
                return refusal
            return _not_owner(request, consent, "That approval code is not valid (any more): get a new one "
                                                "in the endpoint's panel.")  # fmt: skip
    if await anyio.to_thread.run_sync(state.progress.use_oauth_grant, grant.key_hash, "consent") is None:
        return await consent_page(request, consent)  # answered meanwhile, in another tab
    issuer = site_url(request)
    await state.flows.record(info.id, "consent", f"POST {CONSENT_PATH}…", 303,
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
    (as /resume does), and the consent page opens; an approval code of theirs opens the consent page
    for this one answer. Any other code is refused and counted."""
    state = get_state(request)
    found = await _consent(request, consent)
    if found is None:
        return await consent_page(request, consent)
    info = found[2]
    if await _approval(request, code, info) is not None:
        return await _consent_form(request, consent, approval=_normal_approval(code))
    learner = await anyio.to_thread.run_sync(state.progress.learner_for_resume_code, code)
    if learner != info.learner_id:
        if (refusal := wrong(request, "resume")) is not None:
            return refusal
        return _not_owner(request, consent, "That is neither the resume code of this endpoint's owner nor "
                                            "an approval code of theirs.")  # fmt: skip
    response = RedirectResponse(CONSENT_PATH + consent, status_code=303)
    assert state.identity is not None  # the app has started
    generation = await state.identity.generation(learner)  # as new resume codes left it
    response.headers.append("set-cookie", state.identity.cookie(learner, is_https(request.scope), generation))
    return response


async def _client_name(request: Request, client_id: str) -> str | None:
    info = await Provider(get_state(request).flows).get_client(client_id)
    return info.client_name if info is not None else None


def _descriptions(info: EndpointInfo) -> dict[str, str]:
    """What each scope lets a client do, the owner's own ones included (the tools that need them)."""
    tools: dict[str, list[str]] = {}
    for tool, scope in tool_scopes(info).items():
        tools.setdefault(scope, []).append(tool)
    return {**SCOPE_TEXT, **{scope: "call " + ", ".join(sorted(names)) for scope, names in tools.items()}}


def _host(url: str) -> str:
    """What the page names a client or a redirect by: its host (a client's own name is its to choose,
    and proves nothing)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        host = None
    return host or url[:80]


@router.get("/oauth/callback", response_class=HTMLResponse)
def callback_page(request: Request) -> Response:
    """The redirect URI of the flow the learner does by hand in the panel (static/oauth_by_hand.js):
    its script hands the code back to the panel that opened it, in this browser only."""
    return page(request, "oauth_callback.html", title="Back from the authorization server")
