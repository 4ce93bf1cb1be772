"""Protected endpoints (MCP authorization): the official Python SDK client goes through the whole flow
against the app on a real port (401, Protected Resource Metadata, authorization server metadata,
dynamic registration, the owner's consent, the code with PKCE, tokens, step-up on 403), and every
refusal is checked from the attacker's side."""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from bs4 import BeautifulSoup
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    OAuthClientMetadata,
)

from app.progress.store import OAUTH_GRANTS_KEPT
from app.web.learner import COOKIE
from app.web.state import PROGRESS_DB
from tests.support.appserver import learner_id_of
from tests.support.https_server import https_server, make_authority
from tests.support.inprocess import ServedApp
from tests.support.oauthflow import (
    REDIRECT,
    Memory,
    Owner,
    authorize_url,
    code_for,
    credentials,
    pkce,
    protected_endpoint,
    register,
    token_request,
)

ADDRESSES = itertools.count(1)  # each SDK client's own (sdk_client)
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "attacker", "version": "1"}}}  # fmt: skip


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The certificate authority of the clients' own HTTPS sites (their metadata documents)."""
    return make_authority(tmp_path_factory.mktemp("authority"))


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, authority: tuple[Path, Path]) -> Iterator[ServedApp]:
    with ServedApp(tmp_path_factory.mktemp("oauth"), warm_pool_size=0, max_endpoints_per_learner=50,
                   client_documents_ca_file=str(authority[0])) as app:  # fmt: skip
        yield app


@contextlib.asynccontextmanager
async def sdk_client(endpoint: dict, owner: Owner, storage: Memory, name: str,
                     **options: Any) -> AsyncIterator[ClientSession]:  # fmt: skip
    """The Python SDK's client on the endpoint, authorizing as it needs to: `owner` answers its
    consent pages, `storage` keeps its tokens; `options` go to OAuthClientProvider. Each comes from an
    address of its own: a registration shows in an endpoint's flow only when its address read that
    endpoint's metadata alone, and other tests' clients read others' from loopback."""
    auth = OAuthClientProvider(
        endpoint["url"],
        OAuthClientMetadata(client_name=name, redirect_uris=[REDIRECT]),  # type: ignore[list-item]
        storage, owner.redirect_handler, owner.callback_handler, **options,
    )  # fmt: skip
    # Its own loopback address, at the socket: the requests of the SDK's authorization flow are made by
    # the flow, without the client's headers.
    transport = httpx2.AsyncHTTPTransport(local_address=f"127.0.79.{next(ADDRESSES)}")
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30, transport=transport) as http,
        streamable_http_client(endpoint["url"], http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        yield client


async def test_the_sdk_client_registers_is_allowed_and_steps_up_to_call_a_tool(app: ServedApp) -> None:
    endpoint = protected_endpoint(app)
    owner, storage = Owner(app), Memory()
    async with sdk_client(endpoint, owner, storage, "Test client") as client:
        await client.initialize()
        assert [tool.name for tool in (await client.list_tools()).tools] == ["show_order", "get_order_status"]
        assert storage.tokens is not None and storage.tokens.scope == "mcp:read"  # what the 401 asked for
        call = await client.call_tool("get_order_status", {"order_id": "481516"})
        assert not call.is_error and "shipped" in call.content[0].text
    assert len(owner.redirects) == 2, "a second consent: the step-up to mcp:tools after the 403"
    assert set(storage.tokens.scope.split()) == {"mcp:read", "mcp:tools"}
    assert storage.client is not None and storage.client.client_id  # registered dynamically (RFC 7591)
    assert "Test client" in owner.pages[0] and "mcp:read" in owner.pages[0]
    assert all(parse_qs(urlsplit(r).query)["iss"] == [app.base] for r in owner.redirects)  # RFC 9207
    # The owner watches the dance, step by step, each explained, with no secret in it.
    watched = flow(app, endpoint)
    steps = [event["step"] for event in watched]
    first = ["challenge", "resource_metadata", "server_metadata", "dynamic_registration", "authorize", "consent",
             "token"]  # fmt: skip
    assert steps[:7] == first, steps
    assert steps[7:] == ["insufficient_scope", "authorize", "consent", "token"], steps
    assert all(event["title"] and event["meaning"] and event["reference"] for event in watched)
    assert watched[7]["detail"]["method"] == "tools/call" and watched[7]["status"] == 403
    registered = watched[3]
    assert registered["status"] == 201 and registered["detail"]["client_id"] == storage.client.client_id
    asked = watched[4]["detail"]
    assert asked["client_name"] == "Test client" and asked["scopes"] == ["mcp:read"]
    assert asked["registration"] == "dynamic client registration"
    text = json.dumps(watched)
    assert storage.tokens.access_token not in text and storage.tokens.refresh_token not in text
    assert endpoint["url"].rsplit("/", 1)[1] not in text  # nor the endpoint's own token
    log = app.log_path.read_text(errors="replace")  # nor the app's log (/authorize carries it as resource)
    for secret in (
        endpoint["url"].rsplit("/", 1)[1],
        storage.tokens.access_token,
        storage.tokens.refresh_token,
    ):
        assert secret not in log
    assert "/oauth/consent/…" in log and "resource=…" in log


def flow(app: ServedApp, endpoint: dict, owner: str = "owner") -> list[dict]:
    with app.client(cookies={COOKIE: app.learner_cookie(owner)}) as page:
        answer = page.get(f"/api/endpoints/{endpoint['id']}/auth")
    assert answer.status_code == 200, answer.text
    return answer.json()["events"]


def test_without_a_token_the_endpoint_says_where_its_metadata_is(app: ServedApp) -> None:
    endpoint = protected_endpoint(app)
    refused = httpx.post(endpoint["url"], json=INITIALIZE, timeout=30)
    assert refused.status_code == 401
    token = endpoint["url"].rsplit("/", 1)[1]
    metadata_url = f"{app.base}/.well-known/oauth-protected-resource/mcp/{token}"
    assert (
        refused.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}", scope="mcp:read"'
    )
    prm = httpx.get(metadata_url, timeout=30).json()
    assert prm["resource"] == endpoint["url"] and prm["authorization_servers"] == [app.base]
    assert prm["scopes_supported"] == ["mcp:read", "mcp:tools"]
    asm = httpx.get(app.base + "/.well-known/oauth-authorization-server", timeout=30).json()
    assert asm["issuer"] == app.base and asm["code_challenge_methods_supported"] == ["S256"]
    assert asm["registration_endpoint"] == app.base + "/register"
    assert set(asm["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    for methods in ("token_endpoint_auth_methods_supported", "revocation_endpoint_auth_methods_supported"):
        assert "none" in asm[methods] and "client_secret_post" in asm[methods]  # public clients too
    made_up = httpx.post(
        endpoint["url"], json=INITIALIZE, headers={"Authorization": "Bearer made-up"}, timeout=30
    )
    assert made_up.status_code == 401 and 'error="invalid_token"' in made_up.headers["www-authenticate"]


def test_a_visitor_hammering_without_a_token_adds_one_step_to_the_flow_not_one_each(app: ServedApp) -> None:
    endpoint = protected_endpoint(app)
    before = len(flow(app, endpoint))
    with httpx.Client(timeout=30) as visitor:
        for _ in range(20):
            assert visitor.post(endpoint["url"], json=INITIALIZE).status_code == 401
    steps = flow(app, endpoint)[before:]
    assert [step["step"] for step in steps] == ["challenge"]


def test_junk_tokens_anyone_with_the_url_sends_cannot_push_the_owners_flow_out(app: ServedApp) -> None:
    """From the side of a visitor with the URL (not a credential, on a protected endpoint): a new junk
    token each time, or none, between them add one step of each kind, not one a request."""
    endpoint = protected_endpoint(app)
    before = len(flow(app, endpoint))
    with httpx.Client(timeout=30) as visitor:
        for n in range(60):
            headers = {"Authorization": f"Bearer junk{n:04d}"} if n % 3 else {}
            assert visitor.post(endpoint["url"], json=INITIALIZE, headers=headers).status_code == 401
    steps = flow(app, endpoint)[before:]
    assert sorted(step["step"] for step in steps) == ["challenge", "invalid_token"]


# --- the flow by hand, from the attacker's side ----------------------------------------------------


def test_pkce_is_required_and_a_wrong_verifier_or_a_second_use_gets_no_token(app: ServedApp) -> None:
    endpoint, client = protected_endpoint(app), register(app)
    without = httpx.get(authorize_url(app, client, endpoint, None), timeout=30)
    assert without.status_code == 400 and "error=invalid_request" in back_link(without)
    verifier, challenge = pkce()
    code = code_for(app, endpoint, client, challenge)
    wrong = token_request(app, client, code, pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    refused = flow(app, endpoint)[-1]
    assert refused["step"] == "token_refused" and refused["detail"]["error"] == "invalid_grant"
    good = token_request(app, client, code, verifier)
    assert good.status_code == 200, good.text
    assert (
        httpx.get(f"{app.base}/token", timeout=30).status_code == 405
    )  # the SDK's route, watched, as it was
    access = good.json()["access_token"]
    works = httpx.post(
        endpoint["url"], json=INITIALIZE, headers={"Authorization": f"Bearer {access}"}, timeout=30
    )
    assert works.status_code == 200, works.text
    assert token_request(app, client, code, verifier).json()["error"] == "invalid_grant"  # single use


def test_a_foreign_redirect_uri_is_refused_without_a_redirect(app: ServedApp) -> None:
    endpoint, client = protected_endpoint(app), register(app)
    refused = httpx.get(
        authorize_url(app, client, endpoint, pkce()[1], redirect="https://evil.example/cb"), timeout=30
    )
    assert refused.status_code == 400 and "evil.example" not in refused.headers.get("location", "")
    # The owner sees why their client got no consent page.
    step = flow(app, endpoint)[-1]
    assert step["step"] == "authorize_refused" and step["status"] == 400, step
    assert step["detail"]["redirect_uri"] == "https://evil.example/cb"
    assert step["detail"]["client_id"] == client["client_id"]
    assert "evil.example" in step["detail"]["error_description"]
    assert step["title"] and step["meaning"] and "RFC 6749 §4.1.2.1" in step["reference"]


def back_link(refused: httpx.Response) -> str:
    """The link back to the client on a refusal shown in the browser (never a redirect of its own)."""
    assert "location" not in refused.headers
    return BeautifulSoup(refused.text, "html.parser").select_one("a[data-back]")["href"]


def test_a_scope_the_endpoint_does_not_offer_is_shown_with_a_link_back_and_goes_into_the_flow(
    app: ServedApp,
) -> None:
    endpoint, client = protected_endpoint(app), register(app)
    form = dict(httpx.URL(authorize_url(app, client, endpoint, pkce()[1], scope="admin")).params)
    refused = httpx.post(app.base + "/authorize", data=form, timeout=30)  # the form way, as RFC 6749 allows
    assert refused.status_code == 400 and "invalid_scope" in refused.text
    back = parse_qs(urlsplit(back_link(refused)).query)
    assert back["error"] == ["invalid_scope"] and back["state"] == ["s1"] and back["iss"] == [app.base]
    step = flow(app, endpoint)[-1]
    assert (step["step"], step["request"], step["status"]) == ("authorize_refused", "POST /authorize", 400)
    assert step["detail"]["error"] == "invalid_scope"
    # A request that names no live endpoint is refused the same, and recorded nowhere.
    elsewhere = {**form, "resource": app.base + "/mcp/not-an-endpoint"}
    assert httpx.post(app.base + "/authorize", data=elsewhere, timeout=30).status_code == 400
    assert flow(app, endpoint)[-1] == step


def test_a_resource_is_the_endpoint_url_as_its_metadata_names_it_not_one_that_contains_its_token(
    app: ServedApp,
) -> None:
    """RFC 8707 §2: a resource has no fragment; and a URL that merely holds the token somewhere in its
    path or with a query is not the endpoint the owner would be asked about."""
    endpoint, client = protected_endpoint(app), register(app)
    url, token = endpoint["url"], endpoint["url"].rsplit("/", 1)[1]
    host, port = app.base.removeprefix("http://").rsplit(":", 1)
    for resource in (f"https://evil.example/mcp/{token}", f"http://{host}:{int(port) + 1}/mcp/{token}",
                     f"https://evil.example/x/mcp/{token}", f"{app.base}/x/mcp/{token}", url + "?q=1",
                     url + "#frag", url.replace("://", "://user@"), f"ftp://127.0.0.1/mcp/{token}"):  # fmt: skip
        query = dict(httpx.URL(authorize_url(app, client, endpoint, pkce()[1])).params) | {
            "resource": resource
        }
        refused = httpx.get(app.base + "/authorize", params=query, timeout=30)
        assert refused.status_code == 400 and "invalid_target" in refused.text, resource
    assert code_for(app, endpoint, client, pkce()[1])  # the URL itself goes on to the consent


def test_anyone_registering_a_client_gets_no_redirect_from_this_site_to_their_page(app: ServedApp) -> None:
    """An open redirect: register a client whose redirect URI is a phishing page, and send people a link
    to this site's /authorize that is bound to be refused. They are shown the refusal, not sent on."""
    phisher = register(app, redirect="https://evil.example/login-to-the-playground")
    for query in ({"client_id": phisher["client_id"]},
                  {"client_id": phisher["client_id"], "response_type": "code"},
                  {"client_id": phisher["client_id"], "response_type": "token", "state": "x"}):  # fmt: skip
        refused = httpx.get(app.base + "/authorize", params=query, timeout=30)
        assert refused.status_code == 400, (query, refused.headers)
        assert back_link(refused).startswith("https://evil.example/login-to-the-playground?error=")
        shown = BeautifulSoup(refused.text, "html.parser")
        assert shown.select_one("[data-back-host]").text == "evil.example"
        assert shown.select_one("a[data-back]")["rel"] == ["noreferrer"]
    # The site itself is the one redirect URI a refusal still goes to at once (the panel's flow by hand).
    endpoint, own = protected_endpoint(app), register(app, redirect=app.base + "/oauth/callback")
    greedy = httpx.get(authorize_url(app, own, endpoint, pkce()[1], scope="admin",
                                     redirect=app.base + "/oauth/callback"), timeout=30)  # fmt: skip
    assert greedy.status_code == 302, greedy.text
    back = parse_qs(urlsplit(greedy.headers["location"]).query)
    assert back["error"] == ["invalid_scope"] and back["state"] == ["s1"] and back["iss"] == [app.base]


def test_only_the_owner_may_allow_and_a_token_opens_only_its_own_endpoint(app: ServedApp) -> None:
    endpoint, client = protected_endpoint(app), register(app)
    verifier, challenge = pkce()
    asked = httpx.get(authorize_url(app, client, endpoint, challenge), timeout=30)
    consent = app.base + asked.headers["location"]
    with app.client(cookies={COOKIE: app.learner_cookie("someone else")}) as stranger:
        assert stranger.get(consent).status_code == 403
        refused = stranger.post(consent, data={"answer": "allow"})
        assert refused.status_code == 403 and "code=" not in refused.headers.get("location", "")
    with app.client() as nobody:  # no identity at all: refused, and none is made
        refused = nobody.post(consent, data={"answer": "allow"})
        assert refused.status_code == 403 and COOKIE not in refused.cookies
    code = code_for(app, endpoint, client, challenge)
    access = token_request(app, client, code, verifier).json()["access_token"]
    with app.client(cookies={COOKIE: app.learner_cookie("someone else")}) as stranger:
        assert stranger.get(f"/api/endpoints/{endpoint['id']}/auth").status_code == 404  # not theirs to watch
    other = protected_endpoint(app, "someone else")
    elsewhere = httpx.post(
        other["url"], json=INITIALIZE, headers={"Authorization": f"Bearer {access}"}, timeout=30
    )
    assert elsewhere.status_code == 401 and 'error="invalid_token"' in elsewhere.headers["www-authenticate"]


def test_a_read_token_gets_403_naming_the_scope_for_a_tool_call(app: ServedApp) -> None:
    endpoint, client = protected_endpoint(app), register(app)
    verifier, challenge = pkce()
    access = token_request(app, client, code_for(app, endpoint, client, challenge), verifier).json()[
        "access_token"
    ]
    headers = {"Authorization": f"Bearer {access}", "Accept": "application/json"}
    opened = httpx.post(endpoint["url"], json=INITIALIZE, headers=headers, timeout=30)
    session = {
        **headers,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "get_order_status", "arguments": {"order_id": "481516"}}}  # fmt: skip
    refused = httpx.post(endpoint["url"], json=call, headers=session, timeout=30)
    assert refused.status_code == 403
    challenge_header = refused.headers["www-authenticate"]
    assert (
        'error="insufficient_scope"' in challenge_header and 'scope="mcp:read mcp:tools"' in challenge_header
    )


def test_the_client_routes_take_no_cookie_and_the_consent_form_no_other_site(app: ServedApp) -> None:
    endpoint, client = protected_endpoint(app), register(app)
    # Registration from another site's page works (no cookie counts there) and makes no identity.
    cross = httpx.post(app.base + "/register", json={"redirect_uris": [REDIRECT]},
                       headers={"Origin": "https://elsewhere.example"}, timeout=30)  # fmt: skip
    assert cross.status_code == 201 and COOKIE not in cross.cookies
    asked = httpx.get(authorize_url(app, client, endpoint, pkce()[1]), timeout=30)
    consent = app.base + asked.headers["location"]
    forged = httpx.post(consent, data={"answer": "allow"}, cookies={COOKIE: app.learner_cookie("owner")},
                        headers={"Origin": "https://elsewhere.example"}, timeout=30)  # fmt: skip
    assert forged.status_code == 403 and "code=" not in forged.headers.get("location", "")


def opens(endpoint: dict, access_token: str) -> bool:
    """Whether the token opens a session on the endpoint (ended at once: each holds one of the owner's
    places)."""
    headers = {"Authorization": f"Bearer {access_token}"}
    opened = httpx.post(endpoint["url"], json=INITIALIZE, headers=headers, timeout=30)
    if opened.status_code != 200:
        return False
    headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    assert httpx.delete(endpoint["url"], headers=headers, timeout=30).status_code in (200, 204)
    return True


def test_a_used_code_or_refresh_token_presented_again_revokes_what_was_issued_from_it(app: ServedApp) -> None:
    """From the side of a thief with a copy of a code (it travels in a URL) or of a refresh token: who
    redeemed it first kept its tokens for the endpoint's life, the second use only refused. The server
    cannot tell which of the two is the thief: the second use now ends every token issued from it."""
    endpoint, client = protected_endpoint(app), register(app)
    verifier, challenge = pkce()
    code = code_for(app, endpoint, client, challenge)
    first = token_request(app, client, code, verifier).json()
    assert opens(endpoint, first["access_token"])
    again = token_request(app, client, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert not opens(endpoint, first["access_token"])
    refresh = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], **credentials(client)}
    assert httpx.post(app.base + "/token", data=refresh, timeout=30).json()["error"] == "invalid_grant"
    replayed = [step for step in flow(app, endpoint) if step["step"] == "replayed"]
    assert [step["detail"]["kind"] for step in replayed] == ["code"] and "RFC 6749" in replayed[0][
        "reference"
    ]
    # A refresh token's line: rotated once, the old one presented again ends the newest pair.
    verifier, challenge = pkce()
    tokens = token_request(app, client, code_for(app, endpoint, client, challenge), verifier).json()
    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], **credentials(client)}
    newest = httpx.post(app.base + "/token", data=refresh, timeout=30).json()
    assert opens(endpoint, newest["access_token"])
    assert httpx.post(app.base + "/token", data=refresh, timeout=30).json()["error"] == "invalid_grant"
    assert not opens(endpoint, newest["access_token"])
    on = {**refresh, "refresh_token": newest["refresh_token"]}
    assert httpx.post(app.base + "/token", data=on, timeout=30).json()["error"] == "invalid_grant"
    # Another client's line is not touched: a client presenting another's used refresh token ends
    # nothing (only that token's own client may set this off).
    other = register(app)
    verifier, challenge = pkce()
    first = token_request(app, other, code_for(app, endpoint, other, challenge), verifier).json()
    used = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], **credentials(other)}
    kept = httpx.post(app.base + "/token", data=used, timeout=30).json()
    stolen = {**used, **credentials(client)}
    assert httpx.post(app.base + "/token", data=stolen, timeout=30).status_code == 400
    assert opens(endpoint, kept["access_token"])


def test_a_denial_sends_access_denied_back_with_the_state(app: ServedApp) -> None:
    endpoint, client = protected_endpoint(app), register(app)
    location = Owner(app).consent(authorize_url(app, client, endpoint, pkce()[1]), "deny")
    query = parse_qs(urlsplit(location).query)
    assert query["error"] == ["access_denied"] and query["state"] == ["s1"] and "code" not in query


def test_refresh_rotates_and_revoking_ends_both_tokens(app: ServedApp) -> None:
    endpoint, client = protected_endpoint(app), register(app, method="client_secret_post")
    verifier, challenge = pkce()
    tokens = token_request(app, client, code_for(app, endpoint, client, challenge), verifier).json()
    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], **credentials(client)}
    without_secret = httpx.post(app.base + "/token", data={**refresh, "client_secret": "wrong"}, timeout=30)
    assert without_secret.status_code == 401 and without_secret.json()["error"] == "invalid_client"
    refreshed = httpx.post(app.base + "/token", data=refresh, timeout=30)
    assert refreshed.status_code == 200, refreshed.text
    old = httpx.post(endpoint["url"], json=INITIALIZE, headers={"Authorization": f"Bearer {tokens['access_token']}"},
                     timeout=30)  # fmt: skip
    assert old.status_code == 401  # the pair it came with is gone
    new = refreshed.json()
    revoked = httpx.post(
        app.base + "/revoke", data={"token": new["access_token"], **credentials(client)}, timeout=30
    )
    assert revoked.status_code == 200, revoked.text
    after = httpx.post(endpoint["url"], json=INITIALIZE, headers={"Authorization": f"Bearer {new['access_token']}"},
                       timeout=30)  # fmt: skip
    assert after.status_code == 401
    steps = [event["step"] for event in flow(app, endpoint)]
    assert steps[-2:] == ["revoke", "invalid_token"]  # a presented token refused is its own step
    no_secret = httpx.post(app.base + "/revoke", data={"token": new["refresh_token"], "client_id": client["client_id"]},
                           timeout=30)  # fmt: skip
    assert no_secret.status_code == 401  # a client with a secret must send it


def test_a_public_client_revokes_with_its_client_id_alone(app: ServedApp) -> None:
    # Its own owner: each owner has a few consoles at most, and this test leaves one open.
    endpoint, client = protected_endpoint(app, owner="revoker"), register(app)  # auth method "none"
    verifier, challenge = pkce()
    tokens = token_request(
        app, client, code_for(app, endpoint, client, challenge, owner="revoker"), verifier
    ).json()
    other = register(app)
    foreign = httpx.post(app.base + "/revoke", data={"token": tokens["access_token"], "client_id": other["client_id"]},
                         timeout=30)  # fmt: skip
    assert foreign.status_code == 200  # RFC 7009: answered alike, but another client's token stays
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert httpx.post(endpoint["url"], json=INITIALIZE, headers=bearer, timeout=30).status_code == 200
    revoked = httpx.post(app.base + "/revoke", data={"token": tokens["access_token"], "client_id": client["client_id"]},
                         timeout=30)  # fmt: skip
    assert revoked.status_code == 200, revoked.text  # RFC 7009 §2.1: token and client_id, no secret
    assert httpx.post(endpoint["url"], json=INITIALIZE, headers=bearer, timeout=30).status_code == 401


@pytest.mark.parametrize("codes", [1, 2], ids=["first code", "a code the instructor renewed"])
def test_the_owner_in_a_browser_without_their_cookie_continues_with_their_resume_code(
    app: ServedApp, codes: int
) -> None:
    owner = f"owner-{codes}"
    endpoint, client = protected_endpoint(app, owner=owner), register(app)
    verifier, challenge = pkce()
    asked = httpx.get(authorize_url(app, client, endpoint, challenge), timeout=30)
    consent = app.base + asked.headers["location"]
    learner = learner_id_of(app.learner_cookie(owner))
    for _ in range(codes - 1):  # as the instructor's "new resume code" does: every device signed out
        app.state.progress.new_resume_code(learner)
        app.state.identity.forget(learner)
    code = app.state.progress.resume_code(learner)
    with app.client() as system_browser:  # the browser a client opened: no cookie of this site
        refused = system_browser.get(consent)
        assert refused.status_code == 403 and "resume code" in refused.text
        wrong = system_browser.post(consent + "/resume", data={"code": "WRONGCODE"})
        assert wrong.status_code == 403 and COOKIE not in system_browser.cookies  # no identity made
        with app.client(cookies={COOKIE: app.learner_cookie("someone else")}) as other:
            theirs = BeautifulSoup(other.get("/resume").text, "html.parser").select_one("[data-resume-code]")
        not_owner = system_browser.post(consent + "/resume", data={"code": theirs.get_text()})
        assert (
            not_owner.status_code == 403 and COOKIE not in system_browser.cookies
        )  # a code, but not the owner's
        switched = system_browser.post(consent + "/resume", data={"code": code})
        assert switched.status_code == 303 and switched.headers["location"] == urlsplit(consent).path
        assert system_browser.get(consent).status_code == 200
        answered = system_browser.post(consent, data={"answer": "allow"})
    assert answered.status_code == 303 and "code=" in answered.headers["location"]


def test_a_one_time_approval_code_answers_one_consent_in_another_browser_and_gives_it_nothing_else(
    app: ServedApp,
) -> None:
    endpoint, client = protected_endpoint(app), register(app)
    consents = []
    for _ in range(2):
        asked = httpx.get(authorize_url(app, client, endpoint, pkce()[1]), timeout=30)
        consents.append(app.base + asked.headers["location"])
    approval_url = f"/api/endpoints/{endpoint['id']}/approval-code"
    with app.client(cookies={COOKIE: app.learner_cookie("someone else")}) as other:
        assert other.post(approval_url).status_code == 404  # only the owner gets one
    with app.client(cookies={COOKIE: app.learner_cookie("owner")}) as owner:
        made = owner.post(approval_url)
    assert made.status_code == 201 and made.json()["expires_in"] == 600
    code = made.json()["code"]
    with app.client() as system_browser:  # the browser a client opened: no cookie of this site
        forged = system_browser.post(consents[0], data={"answer": "allow", "approval": "ABCDEFGHJK"})
        assert forged.status_code == 403 and "location" not in forged.headers
        opened = system_browser.post(consents[0] + "/resume", data={"code": code.lower().replace("-", " ")})
        assert opened.status_code == 200 and 'value="allow"' in opened.text
        assert COOKIE not in system_browser.cookies  # no identity: it answers this consent only
        assert system_browser.get(consents[1]).status_code == 403
        approval = BeautifulSoup(opened.text, "html.parser").select_one("input[name=approval]")["value"]
        answered = system_browser.post(consents[0], data={"answer": "allow", "approval": approval})
        assert answered.status_code == 303 and "code=" in answered.headers["location"]
        again = system_browser.post(consents[1], data={"answer": "allow", "approval": approval})
        assert again.status_code == 403 and "location" not in again.headers  # used once
        assert system_browser.post(consents[1] + "/resume", data={"code": code}).status_code == 403
    # Another endpoint's owner cannot use their own code here.
    theirs = protected_endpoint(app, owner="someone else")
    with app.client(cookies={COOKIE: app.learner_cookie("someone else")}) as other:
        foreign = other.post(f"/api/endpoints/{theirs['id']}/approval-code").json()["code"]
    with app.client() as system_browser:
        assert system_browser.post(consents[1] + "/resume", data={"code": foreign}).status_code == 403


async def test_a_client_named_by_its_metadata_document_is_allowed_without_registering(
    app: ServedApp, authority: tuple[Path, Path]
) -> None:
    documents: dict[str, bytes] = {}
    with https_server(
        *authority, lambda path: (200, {}, documents[path]) if path in documents else (404, {}, b"")
    ) as site:
        url = site + "/playground-client.json"
        documents["/playground-client.json"] = json.dumps(
            {"client_id": url, "client_name": "Document client", "redirect_uris": [REDIRECT]}
        ).encode()
        endpoint, owner, storage = protected_endpoint(app), Owner(app), Memory()
        async with sdk_client(endpoint, owner, storage, "Document client", client_metadata_url=url) as client:
            await client.initialize()
            assert [tool.name for tool in (await client.list_tools()).tools] == [
                "show_order",
                "get_order_status",
            ]
    assert storage.client is not None and storage.client.client_id == url  # its URL is its id: no /register
    asked = next(event for event in flow(app, endpoint) if event["step"] == "authorize")
    assert asked["detail"]["registration"] == "client ID metadata document"
    assert "127.0.0.1" in owner.pages[0] and "Document client" in owner.pages[0]
    asm = httpx.get(app.base + "/.well-known/oauth-authorization-server", timeout=30).json()
    assert asm["client_id_metadata_document_supported"] is True


def test_a_metadata_document_that_cannot_be_used_is_answered_with_why(
    app: ServedApp, authority: tuple[Path, Path]
) -> None:
    """The SDK answers any client the provider cannot give it "not found"; a learner whose document is
    wrong is told what is wrong with it, in the browser and in the endpoint's flow."""
    endpoint = protected_endpoint(app)
    with https_server(*authority, lambda path: (200, {}, json.dumps(
            {"client_id": "https://elsewhere.example/c.json", "client_name": "Mine",
             "redirect_uris": [REDIRECT]}).encode())) as site:  # fmt: skip
        client = {"client_id": site + "/client.json"}
        refused = httpx.get(authorize_url(app, client, endpoint, pkce()[1]), timeout=30)
        assert refused.status_code == 400 and "location" not in refused.headers
        assert refused.json()["error"] == "invalid_request"
        assert refused.json()["error_description"] == (
            "The client's document names another client_id than its own URL."
        )
        # A request with its own problem says that problem, whatever the client.
        no_pkce = httpx.get(authorize_url(app, client, endpoint, None), timeout=30)
        assert no_pkce.status_code == 400 and "code_challenge" in no_pkce.json()["error_description"]
    steps = [step for step in flow(app, endpoint) if step["step"] == "authorize_refused"]
    assert steps[0]["status"] == 400 and steps[0]["detail"]["client_id"] == client["client_id"]
    assert steps[0]["detail"]["error_description"] == refused.json()["error_description"]


def test_a_client_registered_by_hand_in_the_panel_skips_registration(app: ServedApp) -> None:
    endpoint = protected_endpoint(app)
    with app.client(cookies={COOKIE: app.learner_cookie("owner")}) as page:
        made = page.post(f"/api/endpoints/{endpoint['id']}/clients",
                         json={"client_name": "My CLI", "redirect_uri": REDIRECT})  # fmt: skip
        assert made.status_code == 201, made.text
        client = made.json()
        assert client["client_id"].startswith("playground-") and "client_secret" not in client
        secret = page.post(f"/api/endpoints/{endpoint['id']}/clients",
                           json={"client_name": "Server app", "redirect_uri": "https://app.example/cb",
                                 "confidential": True}).json()  # fmt: skip
        assert secret["client_secret"] and secret["token_endpoint_auth_method"] == "client_secret_post"
        for bad in (
            "javascript:alert(1)",
            "http://evil.example/cb",
            "https://x.example/cb#frag",
            "data:text/html,x",
        ):
            refused = page.post(
                f"/api/endpoints/{endpoint['id']}/clients", json={"client_name": "x", "redirect_uri": bad}
            )
            assert refused.status_code == 422, bad
        open_one = page.post("/api/endpoints", json={"server": "demo-orders"}).json()
        assert page.post(f"/api/endpoints/{open_one['id']}/clients",
                         json={"client_name": "x", "redirect_uri": REDIRECT}).status_code == 409  # fmt: skip
    with app.client(cookies={COOKIE: app.learner_cookie("someone else")}) as stranger:
        assert stranger.post(f"/api/endpoints/{endpoint['id']}/clients",
                             json={"client_name": "x", "redirect_uri": REDIRECT}).status_code == 404  # fmt: skip
    verifier, challenge = pkce()
    tokens = token_request(app, client, code_for(app, endpoint, client, challenge), verifier)
    assert tokens.status_code == 200, tokens.text
    watched = flow(app, endpoint)
    assert [event["step"] for event in watched][:2] == ["registration", "registration"]
    asked = next(event for event in watched if event["step"] == "authorize")
    assert asked["detail"]["registration"] == "registered by the owner (pre-registration)"


def test_a_tool_marked_with_a_scope_of_the_owners_needs_it_too(app: ServedApp) -> None:
    endpoint = protected_endpoint(app)
    scopes_url = f"/api/endpoints/{endpoint['id']}/scopes"
    with app.client(cookies={COOKIE: app.learner_cookie("owner")}) as page:
        for bad in ({"get_order_status": "has space"}, {"get_order_status": 'quo"te'}, {"get_order_status": "mcp:tools"},
                    {f"t{n}": "x:y" for n in range(21)}):  # fmt: skip
            assert page.put(scopes_url, json={"tools": bad}).status_code == 422, bad
        assert page.put(scopes_url, json={"tools": {"get_order_status": "orders:read"}}).status_code == 200
    with app.client(cookies={COOKIE: app.learner_cookie("someone else")}) as stranger:
        assert stranger.put(scopes_url, json={"tools": {}}).status_code == 404
    token = endpoint["url"].rsplit("/", 1)[1]
    prm = httpx.get(f"{app.base}/.well-known/oauth-protected-resource/mcp/{token}", timeout=30).json()
    assert prm["scopes_supported"] == ["mcp:read", "mcp:tools", "orders:read"]
    client = register(app)
    # A scope no endpoint here has is refused at the authorization request, back at the client.
    unknown = httpx.get(authorize_url(app, client, endpoint, pkce()[1], scope="mcp:read admin"), timeout=30)
    assert unknown.status_code == 400 and "error=invalid_scope" in back_link(unknown)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "get_order_status", "arguments": {"order_id": "481516"}}}  # fmt: skip

    def call_with(scope: str) -> httpx.Response:
        verifier, challenge = pkce()
        access = token_request(
            app, client, code_for(app, endpoint, client, challenge, scope), verifier
        ).json()
        headers = {"Authorization": f"Bearer {access['access_token']}", "Accept": "application/json"}
        opened = httpx.post(endpoint["url"], json=INITIALIZE, headers=headers, timeout=30)
        assert opened.status_code == 200, (opened.status_code, opened.text)
        session = {
            **headers,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        return httpx.post(endpoint["url"], json=call, headers=session, timeout=30)

    refused = call_with("mcp:read mcp:tools")
    assert (
        refused.status_code == 403
        and 'scope="mcp:read mcp:tools orders:read"' in refused.headers["www-authenticate"]
    )
    assert "orders:read" in refused.json()["error"]["message"]
    allowed = call_with("mcp:read mcp:tools orders:read")
    assert allowed.status_code == 200 and "shipped" in allowed.text


def test_a_token_request_for_another_resource_than_its_grant_is_refused(app: ServedApp) -> None:
    """From the side of a client that names another endpoint (Mallory's code, Alice's URL) at /token:
    the SDK issued the token for the code's own endpoint, answering 200 to the wrong target. RFC 8707
    §2.2: invalid_target; the right resource still gets its token, and a refresh is held alike."""
    endpoint, client = protected_endpoint(app, owner="targets"), register(app)
    other = protected_endpoint(app, owner="target-other")
    verifier, challenge = pkce()
    code = code_for(app, endpoint, client, challenge, owner="targets")
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                "code_verifier": verifier, **credentials(client)}  # fmt: skip
    wrong = httpx.post(app.base + "/token", data={**exchange, "resource": other["url"]}, timeout=30)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_target", wrong.text
    assert other["url"] not in wrong.text and endpoint["url"] not in wrong.text  # no endpoint's secret URL
    right = httpx.post(app.base + "/token", data={**exchange, "resource": endpoint["url"]}, timeout=30)
    assert right.status_code == 200, right.text  # the refusal did not use the code up
    refresh = {
        "grant_type": "refresh_token",
        "refresh_token": right.json()["refresh_token"],
        **credentials(client),
    }
    elsewhere = httpx.post(app.base + "/token", data={**refresh, "resource": other["url"]}, timeout=30)
    assert elsewhere.status_code == 400 and elsewhere.json()["error"] == "invalid_target"
    assert httpx.post(app.base + "/token", data=refresh, timeout=30).status_code == 200  # its own: fine
    refused = [event for event in flow(app, endpoint, owner="targets") if event["step"] == "token_refused"]
    assert [event["detail"]["error"] for event in refused] == ["invalid_target", "invalid_target"]


def test_consents_asked_by_anyone_with_the_url_do_not_push_out_the_one_the_owner_is_reading(
    app: ServedApp,
) -> None:
    """From the side of a client holding the endpoint's URL (shown on a projector, say): 101 requests
    to /authorize pushed the owner's waiting consent out of the endpoint's 100, and the owner's page
    answered "expired". A consent shown to its owner is now the last to make room."""
    endpoint, client = protected_endpoint(app, owner="reader"), register(app)
    with app.client(cookies={COOKIE: app.learner_cookie("reader")}) as browser:
        asked = browser.get(authorize_url(app, client, endpoint, pkce()[1]))
        consent = asked.headers["location"]
        assert browser.get(consent).status_code == 200  # the owner reads it
        pusher = register(app)
        with httpx.Client(timeout=30) as hostile:
            for _ in range(OAUTH_GRANTS_KEPT + 1):
                assert hostile.get(authorize_url(app, pusher, endpoint, pkce()[1])).status_code == 302
        assert browser.get(consent).status_code == 200
        allowed = browser.post(consent, data={"answer": "allow"})
        assert allowed.status_code == 303 and "code=" in allowed.headers["location"]


def test_a_client_refreshing_in_a_loop_leaves_a_bounded_number_of_grants(app: ServedApp) -> None:
    """From the side of a client that refreshes as fast as it may: every used refresh token was kept
    for a day (3,750 rows in 20 s from one address). The endpoint keeps OAUTH_GRANTS_KEPT of each kind,
    and the newest pair goes on working."""
    endpoint, client = protected_endpoint(app, owner="refresher"), register(app)
    verifier, challenge = pkce()
    tokens = token_request(
        app, client, code_for(app, endpoint, client, challenge, owner="refresher"), verifier
    ).json()
    with httpx.Client(base_url=app.base, timeout=30) as http:
        for _ in range(OAUTH_GRANTS_KEPT + 30):
            refreshed = http.post("/token", data={"grant_type": "refresh_token",
                                                  "refresh_token": tokens["refresh_token"], **credentials(client)})  # fmt: skip
            assert refreshed.status_code == 200, refreshed.text
            tokens = refreshed.json()
    with contextlib.closing(sqlite3.connect(app.data_dir / PROGRESS_DB)) as db:
        kinds = dict(db.execute("SELECT kind, COUNT(*) FROM oauth_grants WHERE endpoint_id = ? GROUP BY kind",
                                (endpoint["id"],)).fetchall())  # fmt: skip
    assert kinds["refresh"] == OAUTH_GRANTS_KEPT and kinds["access"] <= OAUTH_GRANTS_KEPT, kinds
    answer = httpx.post(endpoint["url"], json=INITIALIZE, timeout=30,
                        headers={"Authorization": f"Bearer {tokens['access_token']}"})  # fmt: skip
    assert answer.status_code == 200, answer.text


def test_what_a_client_names_is_kept_short_in_the_flow_and_an_ended_endpoint_keeps_none(
    app: ServedApp,
) -> None:
    """From the side of a client naming itself in kilobytes, on endpoint after endpoint: each step of
    the flow kept all of it (200 steps an endpoint, 300 endpoints an hour from one address), and an
    ended endpoint's flow and grants were kept a day, though nobody could read or use them."""
    endpoint = protected_endpoint(app, owner="verbose")
    made = httpx.post(app.base + "/register", json={"redirect_uris": [REDIRECT], "client_name": "n" * 6000,
                                                    "token_endpoint_auth_method": "none"}, timeout=30)  # fmt: skip
    assert made.status_code == 201, made.text
    client = made.json()
    _, challenge = pkce()
    asked = httpx.get(authorize_url(app, client, endpoint, challenge), timeout=30)
    assert asked.status_code == 302, asked.text
    [authorize] = [event for event in flow(app, endpoint, owner="verbose") if event["step"] == "authorize"]
    assert authorize["detail"]["client_name"] == "n" * 500 + "…"
    with app.client(cookies={COOKIE: app.learner_cookie("verbose")}) as page:
        assert page.delete(f"/api/endpoints/{endpoint['id']}").status_code in (200, 204)
    with contextlib.closing(sqlite3.connect(app.data_dir / PROGRESS_DB)) as db:
        kept = [db.execute(f"SELECT COUNT(*) FROM {table} WHERE endpoint_id = ?", (endpoint["id"],)).fetchone()[0]
                for table in ("oauth_events", "oauth_grants")]  # fmt: skip
    assert kept == [0, 0]
