"""Scaling out: two app replicas sharing one PostgreSQL database see the same classes and progress, and
the same authorization flows of protected endpoints."""

from __future__ import annotations

import httpx
import pytest
from bs4 import BeautifulSoup

from app.web.learner import COOKIE
from tests.support.inprocess import ServedApp
from tests.support.oauthflow import code_for, pkce, protected_endpoint, register, token_request

TOKEN = "replica-token"
STEP = "initialize-handshake/versions"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory, postgres_server):  # noqa: ANN001, ANN201
    """One pair for the module: each test has its own class, learners or endpoint."""
    root = tmp_path_factory.mktemp("replicas")
    with postgres_server.fresh_database() as url:
        common = {"database_url": url, "instructor_token": TOKEN, "warm_pool_size": 1}
        with ServedApp(root / "a", **common) as a, ServedApp(root / "b", **common) as b:
            yield a, b


def test_two_replicas_share_progress_and_classes(replicas: tuple[ServedApp, ServedApp]) -> None:
    a, b = replicas
    with a.client() as teacher:
        teacher.post("/instructor/login", data={"token": TOKEN})
        made = teacher.post("/instructor/classes", data={"name": "Shared"})
        class_id = made.headers["location"].rsplit("/", 1)[1]
        code = (
            BeautifulSoup(teacher.get(made.headers["location"]).text, "html.parser")
            .select_one("[data-join-code]")
            .get_text()
        )
    with b.client() as learner:  # joins through the other replica
        learner.get("/")
        assert learner.post("/join", data={"code": code, "display_name": "Edsger"}).status_code == 303
        learner.get(f"/course/{STEP}").raise_for_status()
        learner_id = learner.cookies[COOKIE]
    with a.client(cookies={COOKIE: learner_id}) as same_learner:
        assert same_learner.get("/api/progress").json()["steps"][STEP]["seen"] is True
    with httpx.Client(base_url=b.base, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as teacher:
        page = BeautifulSoup(teacher.get(f"/instructor/classes/{class_id}").text, "html.parser")
        assert page.select_one("tr[data-learner] th").get_text() == "Edsger"


def test_an_authorization_begun_on_one_replica_finishes_and_is_used_on_the_other(
    replicas: tuple[ServedApp, ServedApp],
) -> None:
    a, b = replicas
    endpoint = protected_endpoint(a)
    client = register(b)
    verifier, challenge = pkce()
    code = code_for(a, endpoint, client, challenge)  # the consent on replica a
    tokens = token_request(b, client, code, verifier)  # the code redeemed on replica b
    assert tokens.status_code == 200, tokens.text
    on_b = endpoint["url"].replace(a.base, b.base)
    headers = {
        "Authorization": f"Bearer {tokens.json()['access_token']}",
        "Accept": "application/json",
    }
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    assert httpx.post(on_b, json=init, headers=headers, timeout=30).status_code == 200
    assert token_request(a, client, code, verifier).json()["error"] == "invalid_grant"  # used, everywhere
