"""The steps of a protected endpoint's authorization flows, as its owner reads them (app/web/
oauth_log.py records them): each kind's title, what it means, and the section of the MCP
specification or the RFC that defines it."""

from __future__ import annotations

AUTHZ = "MCP 2025-11-25 authorization"

# A step's kind: its title, what it means, and where that is defined.
STEPS: dict[str, tuple[str, str, str]] = {
    "challenge": (
        "401 Unauthorized: no valid access token",
        "The endpoint refused the request and named, in WWW-Authenticate, where its Protected Resource "
        "Metadata is and the scope to ask for. A client that speaks MCP authorization starts discovery here.",
        f"{AUTHZ} §Protected Resource Metadata Discovery Requirements; RFC 9728 §5.1",
    ),
    "invalid_token": (
        "401 Unauthorized: the token is not valid here",
        "The request carried an access token this endpoint does not accept: revoked, expired, issued for "
        'another endpoint, or never issued. The challenge says error="invalid_token"; a client may '
        "refresh, or start the flow again.",
        f"{AUTHZ} §Token Handling; RFC 6750 §3.1; RFC 8707 §2",
    ),
    "resource_metadata": (
        "Protected Resource Metadata read",
        "The client learned which authorization server issues tokens for this endpoint, and its scopes. "
        "Next it reads that server's own metadata (/.well-known/oauth-authorization-server).",
        f"{AUTHZ} §Authorization Server Location; RFC 9728 §3",
    ),
    "server_metadata": (
        "Authorization server metadata read",
        "A client at the address that just read this endpoint's Protected Resource Metadata (and no "
        "other endpoint's) read the "
        "authorization server's metadata (RFC 8414): where to register, authorize and get tokens, and "
        "that PKCE S256 is supported, which a client must check before it goes on.",
        f"{AUTHZ} §Authorization Server Metadata Discovery, §Authorization Code Protection; RFC 8414 §3",
    ),
    "registration": (
        "Client registered by you",
        "You registered a client in the panel: its id (and secret, if it has one) go into the client's "
        "configuration, and it skips dynamic registration.",
        f"{AUTHZ} §Preregistration",
    ),
    "dynamic_registration": (
        "Client registered itself",
        "A client at the address that just read this endpoint's metadata (and no other endpoint's) "
        "registered with the authorization "
        "server (Dynamic Client Registration): it sent its name and redirect URIs, and got a client_id. "
        "2025-11-25 prefers pre-registration, then client ID metadata documents, then this; 2026-07-28 "
        "deprecates it.",
        f"{AUTHZ} §Dynamic Client Registration; RFC 7591 §3",
    ),
    "authorize": (
        "Authorization request",
        "The client sent your browser to the authorization server with a PKCE challenge (S256), the "
        "endpoint as its resource, the scopes and a state. The server keeps the challenge and asks you. "
        "`registration` says how the client is known: registered by you, by a metadata document at its "
        "client_id URL, or by dynamic registration (POST /register).",
        f"{AUTHZ} §Authorization Flow Steps, §Client Registration Approaches, §Resource Parameter "
        "Implementation; RFC 7636 §4.3; RFC 8707 §2",
    ),
    "authorize_refused": (
        "Authorization request refused",
        "The authorization server started no consent. A client or redirect URI it cannot trust (an unknown "
        "client_id, a metadata document it cannot use, a redirect URI the client never named) is answered "
        "in the browser (400), never redirected to. Another error, such as a scope this endpoint does not "
        "offer, is shown in the browser too, with a link back to the client carrying error= and the "
        "state: anyone can register a client, so this server sends no one to a client's page by itself.",
        f"{AUTHZ} §Client ID Metadata Documents, §Open Redirection; RFC 6749 §4.1.2.1",
    ),
    "consent": (
        "Your answer",
        "Allowed: your browser went back to the client's redirect URI with a one-time code, the state "
        "and the issuer (iss). Denied: with error=access_denied, and no code.",
        "RFC 6749 §4.1.2; RFC 9207 §2",
    ),
    "token": (
        "Code exchanged for tokens",
        "The client sent the code with its PKCE verifier; the server checked that the verifier hashes to "
        "the challenge and that the code was never used. The access token opens this endpoint alone.",
        f"{AUTHZ} §Token Handling; RFC 6749 §4.1.3; RFC 7636 §4.6",
    ),
    "token_refused": (
        "Token request refused",
        "The authorization server refused to issue tokens: a wrong PKCE verifier, a code used twice or "
        "expired, or a refresh token that was already rotated.",
        "RFC 6749 §5.2; RFC 7636 §4.6",
    ),
    "replayed": (
        "A used code or refresh token came back: its tokens revoked",
        "The client presented a code or refresh token that was used already. Someone else may hold a "
        "copy, and the server cannot tell which of the two is the thief, so every token issued from it "
        "stops working: the rightful client authorizes again.",
        "RFC 6749 §4.1.2; RFC 9700 §4.14.2",
    ),
    "refresh": (
        "Tokens refreshed",
        "The client traded its refresh token for a new pair; the old pair stops working. For a public "
        "client the authorization server must rotate refresh tokens so.",
        f"{AUTHZ} §Token Theft; RFC 6749 §6; OAuth 2.1 draft 13 §4.3.1",
    ),
    "insufficient_scope": (
        "403 Forbidden: a scope is missing",
        "The token is valid but its scopes do not cover this request (calling a tool needs mcp:tools). "
        "WWW-Authenticate names the scopes needed; the client may ask you again for more (step-up).",
        f"{AUTHZ} §Runtime Insufficient Scope Errors, §Step-Up Authorization Flow; RFC 6750 §3.1",
    ),
    "revoke": (
        "Token revoked",
        "The client said it no longer needs a token; it and its pair stop working at once.",
        "RFC 7009 §2",
    ),
}
