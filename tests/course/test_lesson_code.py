"""Code that a lesson shows as what a real deployment runs, run here as the lesson prints it: lesson
23's server that checks tokens with the Python SDK's token verifier and auth settings, in process, with
no network, each row of the lesson's table asked of it."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest
from starlette.testclient import TestClient

from app.config import PROJECT_ROOT

LESSON = PROJECT_ROOT / "lessons" / "23-authorization-tokens-and-scopes.md"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def step_code(anchor: str) -> str:
    """The first Python block of the lesson's step with this anchor."""
    text = LESSON.read_text(encoding="utf-8")
    step = text.split("{#" + anchor + "}", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"^```python(?: run)?\n(.*?)^```", step, re.S | re.M)
    assert found, f"no Python block in #{anchor}"
    return found.group(1)


@pytest.fixture(scope="module")
def server() -> Any:
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the lesson's settings raise no deprecation or default warning
        exec(compile(step_code("sdk-token-verifier"), str(LESSON), "exec"), namespace)  # noqa: S102
    with TestClient(namespace["app"], base_url="https://mcp.example.com") as client:
        yield client, namespace


def post(client: TestClient, token: str | None) -> Any:
    headers = HEADERS | ({"Authorization": f"Bearer {token}"} if token else {})
    return client.post("/mcp", json=INITIALIZE, headers=headers)


def test_without_a_token_the_answer_is_401_naming_the_metadata(server: Any) -> None:
    client, _ = server
    answer = post(client, None)
    assert answer.status_code == 401
    metadata = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata}"' in answer.headers["www-authenticate"]
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]  # as the lesson's table shows
    assert "scope=" not in answer.headers["www-authenticate"]  # the lesson: no scope parameter from the SDK


def test_a_good_token_is_served(server: Any) -> None:
    answer = post(server[0], "good")
    assert answer.status_code == 200, answer.text
    assert '"serverInfo"' in answer.text


@pytest.mark.parametrize("token", ["elsewhere", "expired", "made-up"])
def test_a_token_for_another_resource_an_expired_one_or_none_of_ours_is_401(server: Any, token: str) -> None:
    assert post(server[0], token).status_code == 401


def test_a_token_without_the_required_scope_is_403(server: Any) -> None:
    client, namespace = server
    verifier = namespace["Verifier"]
    verifier.issued["narrow"] = namespace["AccessToken"](
        token="narrow", client_id="c1", scopes=["other"], resource=namespace["RESOURCE"]
    )
    answer = post(client, "narrow")
    assert answer.status_code == 403 and 'error="insufficient_scope"' in answer.headers["www-authenticate"]
    assert "scope=" not in answer.headers["www-authenticate"]  # nor in the 403 (the lesson says so)


def test_the_metadata_names_the_resource_and_the_authorization_server(server: Any) -> None:
    metadata = server[0].get("/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"] == "https://mcp.example.com/mcp"
    assert metadata["authorization_servers"] == ["https://auth.example.com"]
    assert metadata["scopes_supported"] == ["mcp:read"]  # the required scopes
