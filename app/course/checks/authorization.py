"""Checks of the authorization lessons: they read the steps of the learner's protected endpoint's
OAuth flows (their kinds, oldest first), not a transcript: the endpoint panel runs them."""

from __future__ import annotations

from collections.abc import Sequence

from app.course.checks import AUTHORIZATION, Outcome, check

NO_CLIENT = "No client has tried your protected endpoint yet: connect one to its URL."


@check("auth-challenged", "Connect a client to your protected endpoint: it gets **401** and the metadata's address",
       AUTHORIZATION)  # fmt: skip
def _challenged(steps: Sequence[str]) -> Outcome:
    if "challenge" in steps or "invalid_token" in steps:
        return True, "A request without a valid token got 401, with resource_metadata in WWW-Authenticate."
    return False, NO_CLIENT


@check("auth-metadata-read", "The client reads the endpoint's **Protected Resource Metadata**", AUTHORIZATION)
def _metadata(steps: Sequence[str]) -> Outcome:
    if "resource_metadata" in steps:
        return True, "The client read the Protected Resource Metadata, which names the authorization server."
    if "challenge" in steps or "invalid_token" in steps:
        return False, "The client got 401 but has not read the metadata: does it speak MCP authorization?"
    return False, NO_CLIENT


@check("auth-token-issued", "Allow the client, and it exchanges the code for **tokens**", AUTHORIZATION)
def _token(steps: Sequence[str]) -> Outcome:
    if "token" in steps:
        return True, "The client exchanged its code, with its PKCE verifier, for an access token."
    if "consent" in steps:
        return (
            False,
            "You answered; the client has not exchanged a code yet (or it was refused: see the steps).",
        )
    if "authorize" in steps:
        return False, "The client asked for authorization: answer on the consent page."
    return False, NO_CLIENT


@check("auth-stepped-up", "Call a tool with a read-only token: **403**, then a new token with mcp:tools",
       AUTHORIZATION)  # fmt: skip
def _stepped_up(steps: Sequence[str]) -> Outcome:
    if "insufficient_scope" not in steps:
        return (
            False,
            "No request has been refused for its scope yet: call a tool with a token of mcp:read only.",
        )
    after = list(steps)[list(steps).index("insufficient_scope") + 1 :]
    if "token" in after:
        return True, "After the 403, the client asked again with the wider scope, and you allowed it."
    return False, "The client got 403 insufficient_scope; it has not been authorized for more since."


@check("auth-revoked-refused", "Revoke a token, then send it: **401** with `invalid_token`", AUTHORIZATION)
def _revoked_refused(steps: Sequence[str]) -> Outcome:
    if "revoke" not in steps:
        if "token" in steps:
            return False, "You have a token: revoke it (POST /revoke), then send a request with it."
        return False, NO_CLIENT
    after = list(steps)[list(steps).index("revoke") + 1 :]
    if "invalid_token" in after:
        return True, "After its revocation the token got 401 invalid_token: it stopped working at once."
    return False, "The token is revoked: now send a request with it, and watch it refused."
