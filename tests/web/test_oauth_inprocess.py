"""Protected endpoints, in process where the test needs the app's store: a guesser of one-time approval
codes (app/web/consent.py), whose wrong codes on the consent page's two ways in are counted together
and answered 429 past the budget; and an access token past its expiry, refused like a made-up one."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator

import anyio
import pytest
from starlette.types import Message, Receive, Scope, Send

from app.progress.store import OAuthGrant
from app.web.learner import COOKIE
from app.web.oauth import SCOPES, secret_hash
from app.web.oauth_log import FlowLog, TokenWatch
from tests.support.inprocess import InProcessApp
from tests.support.oauthflow import REDIRECT, pkce

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip

BUDGET = 3


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessApp]:
    with InProcessApp(tmp_path_factory.mktemp("guesses"), warm_pool_size=0,
                      failed_attempts_per_address=BUDGET) as app:  # fmt: skip
        yield app


def consent_page(app: InProcessApp) -> str:
    """A consent waiting for the owner of a new protected endpoint: its path."""
    made = app.post("/api/endpoints", json={"server": "demo-orders", "auth": "oauth"},
                    cookies={COOKIE: app.learner_cookie("owner")})  # fmt: skip
    assert made.status_code == 201, made.text
    with app.plain_client() as client:
        registered = client.post("/register", json={"redirect_uris": [REDIRECT], "client_name": "guessed",
                                                    "token_endpoint_auth_method": "none"})  # fmt: skip
        assert registered.status_code == 201, registered.text
        asked = client.get("/authorize", params={
            "response_type": "code", "client_id": registered.json()["client_id"], "redirect_uri": REDIRECT,
            "state": "s", "scope": "mcp:read", "resource": made.json()["url"], "code_challenge": pkce()[1],
            "code_challenge_method": "S256"})  # fmt: skip
    assert asked.status_code == 302, asked.text
    return asked.headers["location"]


def test_wrong_approval_codes_either_way_are_counted_together_and_stopped(app: InProcessApp) -> None:
    consent = consent_page(app)
    statuses = []
    with app.client() as guesser:
        for number, guess in enumerate(("AAAAA-AAAAA", "BBBBB-BBBBB", "CCCCC-CCCCC", "DDDDD-DDDDD")):
            if number % 2 == 0:  # typed into the page's field
                answer = guesser.post(consent + "/resume", data={"code": guess})
            else:  # posted with the answer, as a forged form would
                answer = guesser.post(consent, data={"answer": "allow", "approval": guess})
            assert "location" not in answer.headers  # never a code for the client
            statuses.append(answer.status_code)
    assert statuses == [403, 403, 403, 429]


def test_an_access_token_past_its_expiry_is_refused_as_invalid(app: InProcessApp) -> None:
    made = app.post("/api/endpoints", json={"server": "demo-orders", "auth": "oauth"},
                    cookies={COOKIE: app.learner_cookie("owner")}).json()  # fmt: skip
    tokens = {}
    for name, expires_at in (("current", time.time() + 600), ("expired", time.time() - 1)):
        tokens[name] = secrets.token_urlsafe(32)
        data = json.dumps({"scopes": list(SCOPES), "resource": made["url"], "refresh": "none"})
        app.state.progress.add_oauth_grant(
            OAuthGrant(secret_hash(tokens[name]), "access", "a-client", made["id"], data, expires_at)
        )
    path = "/" + made["url"].split("/", 3)[3]
    with app.plain_client() as client:
        headers = {"Accept": "application/json, text/event-stream"}
        current = client.post(
            path, json=INITIALIZE, headers=headers | {"Authorization": f"Bearer {tokens['current']}"}
        )
        expired = client.post(
            path, json=INITIALIZE, headers=headers | {"Authorization": f"Bearer {tokens['expired']}"}
        )
    assert current.status_code == 200, current.text  # the control: a current token opens the endpoint
    assert expired.status_code == 401 and 'error="invalid_token"' in expired.headers["www-authenticate"]


def test_a_refused_token_request_is_in_the_flow_before_its_answer_leaves(app: InProcessApp) -> None:
    """A client answered 400 may read the endpoint's flow at once: the refusal must be there already.
    The watch sits around a handler that refuses as the SDK's /token does; the store is the app's."""
    made = app.post("/api/endpoints", json={"server": "demo-orders", "auth": "oauth"},
                    cookies={COOKIE: app.learner_cookie("owner")}).json()  # fmt: skip
    code = secrets.token_urlsafe(32)
    store = app.state.progress
    store.add_oauth_grant(
        OAuthGrant(secret_hash(code), "code", "a-client", made["id"], "{}", time.time() + 60)
    )
    refusal = json.dumps({"error": "invalid_grant", "error_description": "wrong verifier"}).encode()

    async def token_handler(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": refusal})

    body = f"grant_type=authorization_code&code={code}&code_verifier=wrong".encode()
    steps_when_answered: list[list[str]] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            rows = store.oauth_events(made["id"])
            steps_when_answered.append([json.loads(data)["step"] for _, _, data in rows])

    watch = TokenWatch(token_handler, FlowLog(store), secret_hash)
    anyio.run(watch, {"type": "http", "method": "POST", "path": "/token", "headers": []}, receive, send)
    assert steps_when_answered == [["token_refused"]]
