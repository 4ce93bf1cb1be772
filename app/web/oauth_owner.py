"""What the owner of a protected endpoint does from its panel (docs/http.md, "Protected endpoints"):
register clients by hand (the spec's pre-registration) and mark tools as needing a scope of their
own. The authorization server itself is app/web/oauth.py."""

from __future__ import annotations

import json
import secrets
import time

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import BaseModel, Field

from app.progress.store import EndpointInfo
from app.web import oauth_log
from app.web.errors import error_body
from app.web.learner import learner_id
from app.web.oauth import HAND_CLIENT_PREFIX, SCOPE_TOKEN, SCOPES
from app.web.redirects import redirect_problem
from app.web.state import get_state

router = APIRouter()
MAX_TOOL_SCOPES = 20
MAX_HAND_CLIENTS = 10  # an endpoint's clients registered by hand, kept at once


async def register_by_hand(flows: oauth_log.FlowLog, endpoint_id: str, name: str, redirect_uri: str,
                           confidential: bool) -> OAuthClientInformationFull:  # fmt: skip
    """A client the endpoint's owner registers in the panel (the spec's pre-registration): its id, and
    its secret if it has one (shown once: it is kept only inside the client's record)."""
    secret = secrets.token_urlsafe(32) if confidential else None
    info = OAuthClientInformationFull(
        client_id=HAND_CLIENT_PREFIX + secrets.token_urlsafe(12), client_id_issued_at=int(time.time()),
        client_secret=secret, client_secret_expires_at=0 if secret else None, client_name=name,
        redirect_uris=[redirect_uri],
        token_endpoint_auth_method="client_secret_post" if confidential else "none",
        grant_types=["authorization_code", "refresh_token"], response_types=["code"], scope=" ".join(SCOPES),
    )  # fmt: skip
    assert info.client_id is not None
    await anyio.to_thread.run_sync(
        flows.store.save_oauth_client, info.client_id, info.model_dump_json(), endpoint_id
    )
    await flows.record(endpoint_id, "registration", "POST /api/endpoints/…/clients", 201,
                       client_id=info.client_id, client_name=name, redirect_uri=redirect_uri,
                       auth_method=info.token_endpoint_auth_method)  # fmt: skip
    return info


class NewClient(BaseModel):
    client_name: str = Field(min_length=1, max_length=100)
    redirect_uri: str = Field(min_length=1, max_length=2000)
    confidential: bool = Field(False, description="A client with a secret (client_secret_post); else public.")


async def my_protected(request: Request, endpoint_id: str, what: str) -> EndpointInfo | JSONResponse:
    """The visitor's own protected endpoint, or the refusal (404 if not theirs, 409 if not protected)."""
    mine = await anyio.to_thread.run_sync(get_state(request).progress.learner_endpoints, learner_id(request))
    info = next((item for item in mine if item.id == endpoint_id), None)
    if info is None:
        return JSONResponse(error_body(404, "No such endpoint (or it is not yours)."), status_code=404)
    if info.auth != "oauth":
        return JSONResponse(error_body(409, f"Only a protected endpoint has {what}."), status_code=409)
    return info


@router.post("/api/endpoints/{endpoint_id}/clients", status_code=201)
async def create_client(request: Request, endpoint_id: str, body: NewClient) -> JSONResponse:
    """A client registered by hand for the learner's protected endpoint (pre-registration)."""
    info = await my_protected(request, endpoint_id, "clients")
    if isinstance(info, JSONResponse):
        return info
    if (problem := redirect_problem(body.redirect_uri)) is not None:
        return JSONResponse(error_body(422, problem), status_code=422)
    flows = get_state(request).flows
    if await anyio.to_thread.run_sync(flows.store.oauth_clients_of, endpoint_id) >= MAX_HAND_CLIENTS:
        message = (f"An endpoint keeps at most {MAX_HAND_CLIENTS} clients registered by hand; one that has "
                   "not been used for a day is let go.")  # fmt: skip
        return JSONResponse(error_body(409, message), status_code=409)
    client = await register_by_hand(flows, endpoint_id, body.client_name.strip(),
                                    body.redirect_uri, body.confidential)  # fmt: skip
    return JSONResponse(client.model_dump(mode="json", exclude_none=True), status_code=201)


class ToolScopes(BaseModel):
    tools: dict[str, str] = Field(description="Tool name: the scope a call of it needs besides mcp:tools.")


@router.put("/api/endpoints/{endpoint_id}/scopes")
async def set_tool_scopes(request: Request, endpoint_id: str, body: ToolScopes) -> JSONResponse:
    """The owner marks tools of their protected endpoint as needing a scope of their choosing."""
    state = get_state(request)
    info = await my_protected(request, endpoint_id, "scopes")
    if isinstance(info, JSONResponse):
        return info
    if len(body.tools) > MAX_TOOL_SCOPES:
        return JSONResponse(error_body(422, f"At most {MAX_TOOL_SCOPES} tools have scopes of their own."),
                            status_code=422)  # fmt: skip
    for tool, scope in body.tools.items():
        if not 0 < len(tool) <= 128 or not SCOPE_TOKEN.fullmatch(scope) or scope in SCOPES:
            message = (f"{scope!r} cannot be {tool[:128]!r}'s scope: printable ASCII without spaces or quotes, "
                       f"at most 64 characters, not {' or '.join(SCOPES)}.")  # fmt: skip
            return JSONResponse(error_body(422, message), status_code=422)
    await anyio.to_thread.run_sync(state.progress.set_tool_scopes, endpoint_id, json.dumps(body.tools))
    state.endpoint_cache.forget(endpoint_id)
    return JSONResponse({"tools": body.tools})
