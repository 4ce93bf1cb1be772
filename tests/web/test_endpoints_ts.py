"""The official MCP TypeScript SDK client (npm @modelcontextprotocol/sdk, locked in tests/ts) drives
endpoints as an outside client would: demo-orders end to end, and demo-assistant's sampling request
answered by the client."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.appserver import AppProcess

CLIENT = Path(__file__).resolve().parents[1] / "ts" / "client.mjs"
SDK = CLIENT.parent / "node_modules" / "@modelcontextprotocol" / "sdk"
CLIENT_TIMEOUT_S = 120

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not SDK.is_dir(),
    reason="node or tests/ts/node_modules is missing: `make test` installs both (apt-get nodejs npm; npm ci)",
)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with AppProcess(tmp_path_factory.mktemp("endpoints-ts"), warm_pool_size=1) as app:
        yield app


def run_client(app: AppProcess, server: str) -> dict:
    with app.client() as browser:
        browser.get("/")
        url = browser.post("/api/endpoints", json={"server": server}).json()["url"]
    done = subprocess.run(["node", str(CLIENT), url, server], capture_output=True, text=True,
                          timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_typescript_sdk_client_drives_demo_orders(app: AppProcess) -> None:
    seen = run_client(app, "demo-orders")
    assert seen["version"] == "2025-11-25" and seen["server"]["name"] == "demo-orders" and seen["sessionId"]
    assert seen["tools"] == ["get_order_status"] and '"status": "shipped"' in seen["call"]
    assert seen["resource"].startswith("Refunds above") and seen["prompt"] == 1 and seen["ping"] == {}


def test_a_sampling_request_reaches_the_typescript_client(app: AppProcess) -> None:
    seen = run_client(app, "demo-assistant")
    assert seen["asked"] == ["Suggest a one-day trip in Lisbon."]
    assert seen["call"] == "Trip idea for Lisbon, written by ts-test-model: Walk the old town."
