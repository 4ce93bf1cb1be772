"""The OAuth flow of protected endpoints, driven by hand or for the SDK client: a client registering,
PKCE, the owner allowing in their browser (as form posts), the token request."""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlsplit

import httpx
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

from app.web.learner import COOKIE
from tests.support.appserver import AppProcess

REDIRECT = "http://127.0.0.1:9/callback"  # nothing listens there: the redirect itself is read


def protected_endpoint(app: AppProcess, owner: str = "owner") -> dict:
    with app.client(cookies={COOKIE: app.learner_cookie(owner)}) as page:
        made = page.post("/api/endpoints", json={"server": "demo-orders", "auth": "oauth"})
    assert made.status_code == 201, made.text
    assert made.json()["auth"] == "oauth"
    return made.json()


class Memory:
    """The SDK client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Owner:
    """The endpoint's owner in their browser: opens the authorization URL the client hands over, sees
    the consent page and allows (or denies) with a form post, as the page's buttons do."""

    def __init__(self, app: AppProcess, learner: str = "owner", answer: str = "allow") -> None:
        self.app = app
        self.learner = learner
        self.answer = answer
        self.pages: list[str] = []
        self.redirects: list[str] = []

    async def redirect_handler(self, url: str) -> None:
        self.redirects.append(self.consent(url, self.answer))

    async def callback_handler(self) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(self.redirects[-1]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                       iss=query.get("iss", [None])[0])  # fmt: skip

    def consent(self, url: str, answer: str) -> str:
        with self.app.client(cookies={COOKIE: self.app.learner_cookie(self.learner)}) as browser:
            asked = browser.get(url)
            assert asked.status_code == 302 and asked.headers["location"].startswith("/oauth/"), (
                asked.status_code,
                asked.headers.get("location"),
                asked.text[:300],
            )
            consent = asked.headers["location"]
            shown = browser.get(consent)
            assert shown.status_code == 200, shown.text
            self.pages.append(shown.text)
            answered = browser.post(consent, data={"answer": answer})
        assert answered.status_code == 303, answered.text
        return answered.headers["location"]


def register(app: AppProcess, redirect: str = REDIRECT, method: str = "none") -> dict:
    """A client registering itself, as any program may (no cookie, from anywhere): public (`none`) or
    with a secret (`client_secret_post`)."""
    made = httpx.post(app.base + "/register", json={"redirect_uris": [redirect], "client_name": "by hand",
                                                    "token_endpoint_auth_method": method}, timeout=30)  # fmt: skip
    assert made.status_code == 201, made.text
    return made.json()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def authorize_url(app: AppProcess, client: dict, endpoint: dict, challenge: str | None, scope: str = "mcp:read",
                  redirect: str = REDIRECT) -> str:  # fmt: skip
    query = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect,
             "state": "s1", "scope": scope, "resource": endpoint["url"]}  # fmt: skip
    if challenge is not None:
        query |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    return app.base + "/authorize?" + str(httpx.QueryParams(query))


def credentials(client: dict) -> dict[str, str]:
    return {"client_id": client["client_id"], **({"client_secret": client["client_secret"]}
                                                 if client.get("client_secret") else {})}  # fmt: skip


def token_request(app: AppProcess, client: dict, code: str, verifier: str) -> httpx.Response:
    return httpx.post(app.base + "/token", data={"grant_type": "authorization_code", "code": code,
                                                 "redirect_uri": REDIRECT, "code_verifier": verifier,
                                                 **credentials(client)}, timeout=30)  # fmt: skip


def code_for(app: AppProcess, endpoint: dict, client: dict, challenge: str, scope: str = "mcp:read",
             owner: str = "owner") -> str:  # fmt: skip
    location = Owner(app, owner).consent(authorize_url(app, client, endpoint, challenge, scope), "allow")
    assert location.startswith(REDIRECT)
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == ["s1"]
    return query["code"][0]
