"""The official MCP TypeScript SDK client (npm @modelcontextprotocol/sdk, locked in tests/ts) drives
endpoints as an outside client would: demo-orders end to end, demo-assistant's sampling request
answered by the client, and a protected endpoint through the OAuth flow with a step-up."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.inprocess import ServedApp
from tests.support.oauthflow import protected_endpoint

CLIENT = Path(__file__).resolve().parents[1] / "ts" / "client.mjs"
OAUTH_CLIENT = CLIENT.with_name("oauth_client.mjs")
SDK = CLIENT.parent / "node_modules" / "@modelcontextprotocol" / "sdk"
CLIENT_TIMEOUT_S = 120

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not SDK.is_dir(),
    reason="node or tests/ts/node_modules is missing: `make test` installs both (apt-get nodejs npm; npm ci)",
)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(
        tmp_path_factory.mktemp("endpoints-ts"), warm_pool_size=1, max_endpoints_per_learner=10
    ) as app:
        yield app


def run_client(app: ServedApp, server: str) -> dict:
    with app.client() as browser:
        browser.get("/")
        url = browser.post("/api/endpoints", json={"server": server}).json()["url"]
    done = subprocess.run(["node", str(CLIENT), url, server], capture_output=True, text=True,
                          timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_typescript_sdk_client_drives_demo_orders(app: ServedApp) -> None:
    seen = run_client(app, "demo-orders")
    assert seen["version"] == "2025-11-25" and seen["server"]["name"] == "demo-orders" and seen["sessionId"]
    assert seen["tools"] == ["show_order", "get_order_status"] and '"status": "shipped"' in seen["call"]
    assert seen["resource"].startswith("Refunds above") and seen["prompt"] == 1 and seen["ping"] == {}


def test_a_sampling_request_reaches_the_typescript_client(app: ServedApp) -> None:
    seen = run_client(app, "demo-assistant")
    assert seen["asked"] == ["Suggest a one-day trip in Lisbon."]
    assert seen["call"] == "Trip idea for Lisbon, written by ts-test-model: Walk the old town."


def test_the_typescript_sdk_client_is_authorized_and_steps_up_on_a_protected_endpoint(
    app: ServedApp,
) -> None:
    endpoint = protected_endpoint(app)
    cookie = app.learner_headers("owner")["Cookie"]
    done = subprocess.run(["node", str(OAUTH_CLIENT), endpoint["url"], app.base, cookie], capture_output=True,
                          text=True, timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["consents"] == [200, 200] and seen["iss"] == app.base
    # The 403's scope, asked for at the step-up, after the SDK's refresh kept mcp:read (oauth_client.mjs).
    assert seen["scopes"] == ["mcp:read", "mcp:read", "mcp:read mcp:tools"] and seen["refreshedFirst"]
    assert seen["tools"] == ["show_order", "get_order_status"] and '"status": "shipped"' in seen["call"]
