"""Protected endpoints as a resource server (docs/http.md, "Protected endpoints"): every request to an
endpoint made with `"auth": "oauth"` carries an access token the playground's authorization server
(app/web/oauth.py) issued for that endpoint, and a request beyond the token's scopes is refused. The
sandboxed server behind it speaks stdio and never sees a token: the playground checks for it.

Without a valid token: 401 and `WWW-Authenticate: Bearer resource_metadata="..."` naming the Protected
Resource Metadata (RFC 9728), served here at the path-suffixed well-known URL. Beyond its scopes: 403
with `error="insufficient_scope"` and the scopes needed, so a client can ask for more (step-up).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app.progress.store import EndpointInfo
from app.web import oauth_log
from app.web.client import client_key, site_url
from app.web.errors import error_body
from app.web.oauth import READ_SCOPE, TOOLS_SCOPE, Provider, endpoint_scopes, tool_scopes
from app.web.state import get_state

router = APIRouter()
PRM_PREFIX = "/.well-known/oauth-protected-resource"


def metadata_url(request: Request, token: str) -> str:
    return f"{site_url(request)}{PRM_PREFIX}/mcp/{token}"


def scopes_needed(message: Any, info: EndpointInfo) -> set[str]:
    """What a client message needs: calling a tool `mcp:tools`, and the scope its owner set for that
    tool if any; anything else `mcp:read`."""
    if not (isinstance(message, dict) and message.get("method") == "tools/call"):
        return {READ_SCOPE}
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    extra = tool_scopes(info).get(name) if isinstance(name, str) else None
    return {TOOLS_SCOPE, extra} if extra else {TOOLS_SCOPE}


def _challenge(request: Request, token: str, error: str | None = None, description: str | None = None,
               scope: str = READ_SCOPE) -> str:  # fmt: skip
    """The WWW-Authenticate value. Its scope is what the refused request needs: without a token, only
    `mcp:read` (enough to start); a client asks for more when a request needs it (step-up)."""
    parts = [f'resource_metadata="{metadata_url(request, token)}"', f'scope="{scope}"']
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append(f'error_description="{description}"')
    return "Bearer " + ", ".join(parts)


async def token_scopes(request: Request, token: str, info: EndpointInfo) -> set[str] | JSONResponse:
    """The scopes of the request's access token for this endpoint, or the 401 that answers it."""
    header = request.headers.get("authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        message = "This endpoint is protected: send an access token (Authorization: Bearer ...)."
        return await _unauthorized(request, token, info, message, None, None)
    access = await Provider(get_state(request).flows).load_access_token(presented.strip())
    # A token opens only the endpoint it was issued for (RFC 8707's audience): another's is unknown here.
    if access is None or access.subject != info.id:
        message = "The access token is not valid for this endpoint."
        return await _unauthorized(request, token, info, message, "invalid_token", presented.strip())
    return set(access.scopes)


async def _unauthorized(request: Request, token: str, info: EndpointInfo, message: str, error: str | None,
                        presented: str | None) -> JSONResponse:  # fmt: skip
    challenge = _challenge(request, token, error, message if error else None)
    step = "invalid_token" if presented else "challenge"
    await get_state(request).flows.record(info.id, step, f"{request.method} /mcp/…", 401,
                           once_a_while=True, presented=oauth_log.masked(presented),
                           www_authenticate=_masked(challenge, token))  # fmt: skip
    return JSONResponse(error_body(401, message), status_code=401, headers={"WWW-Authenticate": challenge})


def _masked(challenge: str, token: str) -> str:
    """A challenge as the owner sees it: the endpoint's token (its URL's secret) masked."""
    return challenge.replace(token, oauth_log.masked(token) or "")


async def insufficient_scope(request: Request, token: str, info: EndpointInfo, scopes: set[str],
                             message: Any) -> JSONResponse | None:  # fmt: skip
    """The 403 for a message its token's scopes do not cover (None when they do)."""
    missing = scopes_needed(message, info) - scopes
    if not missing:
        return None
    text = (
        f"This request needs the {' and '.join(sorted(missing))} scope, which the access token does not have."
    )
    challenge = _challenge(request, token, "insufficient_scope", text, " ".join(sorted(scopes | missing)))
    method = message.get("method") if isinstance(message, dict) else None
    await get_state(request).flows.record(info.id, "insufficient_scope", "POST /mcp/…", 403,
                           method=method, had=sorted(scopes), www_authenticate=_masked(challenge, token))  # fmt: skip
    return JSONResponse(error_body(403, text), status_code=403, headers={"WWW-Authenticate": challenge})


@router.get(PRM_PREFIX + "/mcp/{token}")
async def resource_metadata(request: Request, token: str) -> JSONResponse:
    """RFC 9728's metadata of a protected endpoint: which authorization server issues its tokens."""
    info = await Provider(get_state(request).flows).protected_by_token(token)
    cors = {"Access-Control-Allow-Origin": "*", "Cache-Control": "no-store"}
    if info is None:
        return JSONResponse(error_body(404, "No such protected endpoint."), status_code=404, headers=cors)
    get_state(request).flows.read_resource_metadata(client_key(request.scope), info.id)
    await get_state(request).flows.record(info.id, "resource_metadata",
                           f"GET {PRM_PREFIX}/mcp/…", 200)  # fmt: skip
    return JSONResponse({
        "resource": f"{site_url(request)}/mcp/{token}",
        "authorization_servers": [site_url(request)],
        "scopes_supported": endpoint_scopes(info),
        "bearer_methods_supported": ["header"],
        "resource_name": f"MCP Playground endpoint {info.id} ({info.server})",
    }, headers=cors)  # fmt: skip
