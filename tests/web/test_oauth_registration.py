"""What a visitor may make the authorization server keep (app/web/registration.py): dynamic client
registration is open to anyone, so a registration's metadata has a size limit, each address a
number of clients never used that are kept, and an endpoint's owner a number of clients registered
by hand. Each from the
attacker's side, on the app in process."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from app.web import redirects
from app.web.learner import COOKIE
from app.web.oauth_owner import MAX_HAND_CLIENTS
from app.web.registration import METADATA_BYTES
from tests.support.inprocess import InProcessApp, SharedClient
from tests.support.oauthflow import REDIRECT

UNUSED = 4  # clients never used, kept per address


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessApp]:
    with InProcessApp(tmp_path_factory.mktemp("registration"), warm_pool_size=0,
                      unused_clients_per_address=UNUSED) as app:  # fmt: skip
        yield app


def metadata(name: str = "a client", **extra: object) -> dict:
    return {"redirect_uris": [REDIRECT], "client_name": name, "token_endpoint_auth_method": "none", **extra}


def kept_clients(app: InProcessApp) -> int:
    with app.state.progress._read() as db:  # noqa: SLF001 - what the database holds is the point
        return int(app.state.progress._exec(db, "SELECT COUNT(*) FROM oauth_clients").fetchone()[0])  # noqa: SLF001


def test_metadata_past_the_size_limit_is_refused_unread_and_nothing_is_kept(app: InProcessApp) -> None:
    before = kept_clients(app)
    with app.plain_client(address="10.0.1.1") as client:
        uris = [f"http://127.0.0.1:{port}/callback" for port in range(1000, 1400)]  # 12 KiB of them
        assert len(json.dumps(metadata(redirect_uris=uris))) > METADATA_BYTES
        refused = client.post("/register", json=metadata(redirect_uris=uris))
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_client_metadata"
        assert "KiB" in refused.json()["error_description"]
        name_too_long = client.post("/register", json=metadata("x" * (METADATA_BYTES + 1)))
        assert name_too_long.status_code == 400
        # A bigger body, sent in pieces, is refused as well (past the OAuth routes' body limit: 413).
        chunks = (b"{" + b" " * 4096 for _ in range(10))
        streamed = client.post("/register", content=chunks, headers={"Content-Type": "application/json"})
        assert streamed.status_code in (400, 413)
        assert client.post("/register", json=metadata()).status_code == 201  # a real one still registers
    assert kept_clients(app) == before + 1


def test_one_address_flooding_registrations_keeps_its_newest_unused_clients_and_blocks_nobody(
    app: InProcessApp,
) -> None:
    """From Mallory's side, behind a class's one NAT address: 300 registrations in a second used up
    the address's hourly count, and for an hour no classmate could register a client (every SDK client
    registers). Now nothing is refused for a count: the address's clients never used are bounded by
    letting its oldest go, and a client that went on to ask for an authorization is used, and stays."""
    owner = app.learner_cookie("watcher")
    made = app.post(
        "/api/endpoints", json={"server": "demo-orders", "auth": "oauth"}, cookies={COOKIE: owner}
    )
    assert made.status_code == 201, made.text
    token = made.json()["url"].rsplit("/", 1)[1]

    def authorize(client: SharedClient, client_id: str) -> None:
        asked = client.get("/authorize", params={
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s",
            "code_challenge": "x" * 43, "code_challenge_method": "S256", "resource": made.json()["url"]})  # fmt: skip
        assert asked.status_code == 302 and asked.headers["location"].startswith("/oauth/consent/"), (
            asked.text
        )

    with app.plain_client(address="10.0.2.2") as classroom:
        # The flow of the endpoint whose metadata this address read shows each registration.
        assert classroom.get(f"/.well-known/oauth-protected-resource/mcp/{token}").status_code == 200
        assert classroom.post("/register", json={"client_name": "no redirect"}).status_code == 400
        alice = classroom.post("/register", json=metadata("Alice's client")).json()["client_id"]
        authorize(classroom, alice)  # a real client asks at once: it is used from then on
        before = kept_clients(app)
        flood = [classroom.post("/register", json=metadata(f"junk {n}")) for n in range(3 * UNUSED)]
        assert {answer.status_code for answer in flood} == {201}
        ids = [answer.json()["client_id"] for answer in flood]
        assert kept_clients(app) == before + UNUSED  # the newest unused ones, no more
        assert app.state.progress.oauth_client(ids[0]) is None and app.state.progress.oauth_client(ids[-1])
        # A classmate behind the same address registers in the middle of it, and is used at once.
        bob = classroom.post("/register", json=metadata("Bob's client"))
        assert bob.status_code == 201
        authorize(classroom, bob.json()["client_id"])
        for n in range(3 * UNUSED):
            assert classroom.post("/register", json=metadata(f"more junk {n}")).status_code == 201
        for kept in (alice, bob.json()["client_id"]):
            assert app.state.progress.oauth_client(kept) is not None
            authorize(classroom, kept)
    with app.plain_client(address="10.0.2.3") as neighbour:
        assert neighbour.post("/register", json=metadata("elsewhere")).status_code == 201
    steps = [json.loads(data) for _, _, data in app.state.progress.oauth_events(made.json()["id"])]
    registrations = [step for step in steps if step["step"] == "dynamic_registration"]
    assert registrations[0]["status"] == 400 and {step["status"] for step in registrations[1:]} == {201}


def test_an_owner_registers_at_most_a_few_clients_by_hand_per_endpoint(app: InProcessApp) -> None:
    owner = app.learner_cookie("hand-registrar")
    made = app.post(
        "/api/endpoints", json={"server": "demo-orders", "auth": "oauth"}, cookies={COOKIE: owner}
    )
    assert made.status_code == 201, made.text
    path = f"/api/endpoints/{made.json()['id']}/clients"
    body = {"client_name": "mine", "redirect_uri": REDIRECT}
    statuses = [
        app.post(path, json=body, cookies={COOKIE: owner}).status_code for _ in range(MAX_HAND_CLIENTS)
    ]
    assert statuses == [201] * MAX_HAND_CLIENTS
    refused = app.post(path, json=body, cookies={COOKIE: owner})
    assert refused.status_code == 409
    assert f"at most {MAX_HAND_CLIENTS} clients registered by hand" in refused.text
    # The cap is the endpoint's: the owner's next endpoint has room of its own.
    other = app.post(
        "/api/endpoints", json={"server": "demo-orders", "auth": "oauth"}, cookies={COOKIE: owner}
    )
    assert app.post(f"/api/endpoints/{other.json()['id']}/clients", json=body,
                    cookies={COOKIE: owner}).status_code == 201  # fmt: skip


def test_learners_behind_one_address_do_not_see_each_others_clients_register(app: InProcessApp) -> None:
    """From Mallory's side, in a class behind one address: Alice's client reads Alice's endpoint's
    metadata, Mallory reads hers, Alice's client registers. Shown on the endpoint its address read
    last, Alice's registration (its name, its redirect URIs) landed in Mallory's flow. Now one is
    shown only where its address read one endpoint's metadata; Alice sees her client at its
    authorization request."""
    endpoints = {}
    for who in ("alice", "mallory"):
        made = app.post("/api/endpoints", json={"server": "demo-orders", "auth": "oauth"},
                        cookies={COOKIE: app.learner_cookie(f"nat-{who}")})  # fmt: skip
        assert made.status_code == 201, made.text
        endpoints[who] = made.json()
    prm = "/.well-known/oauth-protected-resource/mcp/{}"
    with app.plain_client(address="10.0.3.3") as classroom:
        assert classroom.get(prm.format(endpoints["alice"]["url"].rsplit("/", 1)[1])).status_code == 200
        assert classroom.get(prm.format(endpoints["mallory"]["url"].rsplit("/", 1)[1])).status_code == 200
        assert classroom.get("/.well-known/oauth-authorization-server").status_code == 200
        registered = classroom.post("/register", json=metadata("Alice's Claude Desktop"))
        assert registered.status_code == 201
    for who, endpoint in endpoints.items():
        steps = [json.loads(data)["step"] for _, _, data in app.state.progress.oauth_events(endpoint["id"])]
        assert "dynamic_registration" not in steps and "server_metadata" not in steps, (who, steps)
    with app.plain_client(address="10.0.3.4") as alone:  # one learner at an address: shown, as before
        assert alone.get(prm.format(endpoints["alice"]["url"].rsplit("/", 1)[1])).status_code == 200
        assert alone.post("/register", json=metadata("Alice's own")).status_code == 201
    steps = [json.loads(data) for _, _, data in app.state.progress.oauth_events(endpoints["alice"]["id"])]
    shown = [step["detail"]["client_name"] for step in steps if step["step"] == "dynamic_registration"]
    assert shown == ["Alice's own"]


@pytest.mark.parametrize(
    "uri",
    [
        "http://evil;sandbox/cb",  # a host that would add a directive to the consent page's policy
        "https://evil.example;script-src/cb",
        "javascript:alert(1)//",
        "data:text/html,hi",
        "http://evil.example/cb",  # http off loopback
        "https://user@evil.example/cb",
        "https://app.example/cb#fragment",
        "https://app.example:0/cb",
    ],
)
def test_a_redirect_uri_that_is_no_place_to_send_a_code_is_refused_at_registration(
    app: InProcessApp, uri: str
) -> None:
    with app.plain_client(address="10.0.4.4") as client:
        before = kept_clients(app)
        refused = client.post("/register", json=metadata(redirect_uris=[REDIRECT, uri]))
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "invalid_redirect_uri"
        assert kept_clients(app) == before


REAL_REDIRECTS = {
    "http://127.0.0.1:53682/oauth/callback": "http://127.0.0.1:53682",
    "http://[::1]:8080/cb": "http://[::1]:8080",
    "https://App.Example/cb": "https://app.example",
    "cursor://anysphere.cursor-retrieval/oauth/callback": "cursor:",
    "com.example.app:/oauth2redirect": "com.example.app:",
}


def test_redirect_uris_real_clients_use_register_and_name_their_origin_in_the_consent_policy(
    app: InProcessApp,
) -> None:
    for n, (uri, source) in enumerate(REAL_REDIRECTS.items()):
        with app.plain_client(address=f"10.0.5.{n}") as client:
            assert client.post("/register", json=metadata(redirect_uris=[uri])).status_code == 201, uri
        assert redirects.csp_source(uri) == source


def test_a_client_kept_from_before_the_rules_adds_nothing_to_the_consent_policy() -> None:
    assert redirects.csp_source("http://evil;sandbox/cb") is None
    assert redirects.csp_source("javascript:alert(1)//") is None
