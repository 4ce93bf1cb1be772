"""The "Connect your own client" panel in Chromium: it makes an endpoint, its Python snippet runs as
given, and the page shows that client's exchange live; a protected endpoint's consent page allows a
client."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import httpx
from playwright.sync_api import Page, expect

from tests.support.appserver import ROOT, AppProcess

CLIENT_TIMEOUT_S = 120
REDIRECT = "http://127.0.0.1:9/callback"  # nothing listens: the browser's request to it is what we see


def test_the_panel_makes_an_endpoint_and_shows_a_real_clients_traffic(page: Page) -> None:
    page.goto("/playground")
    panel = page.locator("[data-endpoint-panel]")
    panel.get_by_role("button", name="Make an endpoint URL").click()
    url = panel.locator("[data-endpoint-url]")
    expect(url).to_contain_text("/mcp/")
    snippet = panel.locator('[data-snippet="python"]').inner_text()
    assert (
        url.inner_text() in snippet
        and url.inner_text() in panel.locator('[data-snippet="vscode"]').inner_text()
    )
    # The snippet exactly as a learner would copy it, run by the official SDK in our own venv.
    ran = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, cwd=ROOT,
                         timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    listed, _, called = ran.stdout.strip().partition("\n")
    assert listed == "['show_order', 'get_order_status']" and "481516" in called and "shipped" in called
    # mode="legacy": the handshake, an MCP session of 2025-11-25.
    expect(panel.locator("[data-endpoint-status]")).to_contain_text(
        "MCP session has ended (revision 2025-11-25)"
    )
    log = panel.locator("[data-endpoint-log] li.log-entry")
    expect(log.filter(has_text="initialize (request")).to_have_count(1)
    expect(log.filter(has_text="tools/list (request")).to_have_count(1)
    reply = log.filter(has_text="result for tools/call")
    expect(reply).to_have_count(1)
    expect(reply).to_contain_text("481516")
    expect(panel.locator("[data-endpoint-sequence] g.arrow")).not_to_have_count(0)
    for _ in range(2):  # two more polls of the traffic: what was shown is not shown again
        with page.expect_request(lambda request: "/traffic?" in request.url):
            pass
    expect(log.filter(has_text="tools/list (request")).to_have_count(1)
    expect(panel.locator("[data-endpoint-sequence] g.arrow")).to_have_count(log.count())
    http = panel.locator("[data-endpoint-exchanges] li")
    listed_http = http.filter(has_text="POST → 200: tools/list")
    expect(listed_http).to_have_count(1)
    expect(listed_http).to_contain_text("MCP-Protocol-Version: 2025-11-25")
    expect(listed_http).to_contain_text(
        "got text/event-stream"
    )  # the SDK asks for both; we answer as a stream

    # A second client, without mode=: 2026-07-28, stateless. The newest is shown; the first stays listed.
    modern = snippet.replace(', mode="legacy"', "")
    ran = subprocess.run([sys.executable, "-c", modern], capture_output=True, text=True, cwd=ROOT,
                         timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    expect(panel.locator("[data-endpoint-status]")).to_contain_text("stateless requests (2026-07-28)")
    listed_http = http.filter(has_text="POST → 200: tools/list")
    expect(listed_http).to_contain_text("Mcp-Method: tools/list")
    sessions = panel.locator("[data-endpoint-sessions] li")
    expect(sessions).to_have_count(2)
    expect(log.filter(has_text="initialize (request")).to_have_count(0)
    sessions.first.get_by_role("button", name="Client session 1").click()
    expect(sessions.first.get_by_role("button")).to_have_attribute("aria-pressed", "true")
    expect(log.filter(has_text="initialize (request")).to_have_count(1)  # the first client's traffic again
    expect(panel.locator("[data-endpoint-status]")).to_contain_text("revision 2025-11-25")


def test_a_protected_endpoint_made_in_the_panel_is_allowed_on_the_consent_page(
    page: Page, second_page: Page, browser_app: AppProcess
) -> None:
    page.goto("/playground")
    panel = page.locator("[data-endpoint-panel]")
    panel.locator("[data-endpoint-protect]").check()
    panel.get_by_role("button", name="Make an endpoint URL").click()
    expect(panel.locator("[data-endpoint-protected]")).to_be_visible()
    url = panel.locator("[data-endpoint-url]").inner_text()
    # A tool that needs a scope of the owner's choosing.
    panel.locator("[data-endpoint-scopes] summary").click()
    panel.get_by_label("Tool name").fill("get_order_status")
    panel.get_by_label("Scope (for example").fill("orders:read")
    panel.get_by_role("button", name="Require it").click()
    expect(panel.locator("[data-scope-list] li")).to_have_text("get_order_status needs orders:read Remove")
    token = url.rsplit("/", 1)[1]
    # The client comes from an address of its own: a registration shows in an endpoint's flow only when
    # its address read that endpoint's metadata alone, and other tests read others' from loopback.
    client_address = {"X-Forwarded-For": "10.80.0.1"}
    prm = httpx.get(f"{browser_app.base}/.well-known/oauth-protected-resource/mcp/{token}", timeout=30,
                    headers=client_address).json()  # fmt: skip
    assert prm["scopes_supported"][-1] == "orders:read"
    panel.locator("[data-scope-list] li").get_by_role("button", name="Remove").click()
    expect(panel.locator("[data-scope-list] li")).to_have_count(0)
    # A client registered by hand: its id, shown in the panel.
    panel.locator("[data-endpoint-clients] summary").click()
    panel.get_by_label("Client name").fill("Hand-made")
    panel.get_by_label("Redirect URI").fill("javascript:alert(1)")
    register = panel.get_by_role("button", name="Register it")
    register.evaluate("button => button.scrollIntoView({block: 'end'})")  # the message will be below the fold
    register.click()
    expect(panel.locator("[data-client-error]")).to_contain_text("redirect URI")
    expect(panel.locator("[data-client-error]")).to_be_in_viewport()
    panel.get_by_label("Redirect URI").fill(REDIRECT)
    panel.get_by_role("button", name="Register it").click()
    expect(panel.locator("[data-client-made] pre")).to_contain_text('"client_id": "playground-')
    assert httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30).status_code == 401
    # A client registers and sends the owner's browser to /authorize, as the SDK clients do.
    client = httpx.post(browser_app.base + "/register", json={"redirect_uris": [REDIRECT], "client_name": "Walker",
                                                              "token_endpoint_auth_method": "none"}, timeout=30,
                        headers=client_address).json()  # fmt: skip
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = httpx.QueryParams({"response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT,
                               "state": "walk", "code_challenge": challenge, "code_challenge_method": "S256",
                               "resource": url, "scope": "mcp:read"})  # fmt: skip
    second_page.goto(f"/authorize?{query}")  # another browser: not the owner's
    expect(second_page.get_by_role("alert")).to_contain_text("Only the owner")
    # The owner answers there with a one-time approval code from the panel.
    panel.locator("[data-endpoint-approval] summary").click()
    panel.get_by_role("button", name="Get a one-time approval code").click()
    code = panel.locator("[data-approval-code]")
    expect(code).to_have_text(re.compile(r"^[A-Z2-9]{5}-[A-Z2-9]{5}$"))
    second_page.get_by_label("Approval code or resume code").fill(code.inner_text())
    second_page.get_by_role("button", name="Continue as the owner").click()
    expect(second_page.get_by_text("Walker")).to_be_visible()
    # The answer's redirect leaves the site: the page's form-action policy must let it go to the client.
    with second_page.expect_request(lambda request: request.url.startswith(REDIRECT)) as went:
        second_page.get_by_role("button", name="Allow").click()
    back = parse_qs(urlsplit(went.value.url).query)
    assert back["state"] == ["walk"] and back["iss"] == [browser_app.base] and back["code"]
    token = httpx.post(browser_app.base + "/token", data={"grant_type": "authorization_code", "code": back["code"][0],
                       "redirect_uri": REDIRECT, "client_id": client["client_id"], "code_verifier": verifier},
                       timeout=30)  # fmt: skip
    assert token.status_code == 200 and token.json()["scope"] == "mcp:read"
    # The panel shows the dance as it happened, each step explained and sourced.
    steps = panel.locator("[data-endpoint-flow] li")
    # The metadata read above, the hand registration, the ping's 401, the client registering itself
    # (from the address that read the metadata), the request, the consent and the token.
    expect(steps).to_have_count(7)
    kinds = [item.get_attribute("data-step") for item in steps.all()]
    assert kinds == ["resource_metadata", "registration", "challenge", "dynamic_registration", "authorize",
                     "consent", "token"]  # fmt: skip
    expect(steps.nth(2)).to_contain_text("401 Unauthorized")
    expect(steps.last).to_contain_text("RFC 7636")
    assert token.json()["access_token"] not in panel.inner_text()
    # A refusal (shown in the browser, with a link back to the client) shows as one, with why in plain sight.
    greedy = httpx.get(f"{browser_app.base}/authorize?{query.set('scope', 'admin')}", timeout=30)
    assert greedy.status_code == 400 and "error=invalid_scope" in greedy.text
    expect(steps).to_have_count(8)
    expect(steps.last).to_have_attribute("data-step", "authorize_refused")
    expect(steps.last).to_have_class("exchange-refused")
    expect(steps.last.locator(".exchange-why")).to_contain_text("invalid_scope: This endpoint's scopes are")


def test_the_dance_done_by_hand_in_the_panel_checks_each_answer(page: Page) -> None:
    page.goto("/course/authorization-tokens-and-scopes/using-tokens")  # its check reads the revocation
    panel = page.locator("[data-endpoint-panel]")
    panel.locator("[data-endpoint-protect]").check()
    panel.get_by_role("button", name="Make an endpoint URL").click()
    by_hand = panel.locator("[data-flow-by-hand]")
    by_hand.locator("summary").click()
    steps = ["challenge", "resource-metadata", "server-metadata", "register"]
    for name in steps:
        step = by_hand.locator(f'[data-by-hand="{name}"]')
        expect(by_hand.locator('[data-by-hand="token"] button')).to_be_disabled()  # one step at a time
        step.get_by_role("button").click()
        expect(step).to_have_attribute("data-passed", "yes")
    expect(by_hand.locator('[data-by-hand="challenge"] pre')).to_contain_text("HTTP 401")
    # The consent page opens in a new tab; allowing there hands the code back to this page.
    with page.expect_popup() as opened:
        by_hand.locator('[data-by-hand="authorize"]').get_by_role("button").click()
    consent = opened.value
    consent.get_by_role("button", name="Allow").click()
    expect(consent.locator("[data-callback-status]")).to_contain_text("went back to the panel")
    consent.close()
    expect(by_hand.locator('[data-by-hand="authorize"]')).to_have_attribute("data-passed", "yes")
    for name in ("token", "call", "revoke", "reuse"):
        step = by_hand.locator(f'[data-by-hand="{name}"]')
        step.get_by_role("button").click()
        expect(step).to_have_attribute("data-passed", "yes")
    expect(by_hand.locator('[data-by-hand="call"] pre')).to_contain_text('"protocolVersion"')
    expect(by_hand.locator('[data-by-hand="reuse"] pre')).to_contain_text('error="invalid_token"')
    expect(by_hand.locator("button:enabled")).to_have_count(0)  # the dance is over
    flow = panel.locator("[data-endpoint-flow] li")
    expect(flow.last).to_have_attribute("data-step", "invalid_token")
    expect(flow.last).to_contain_text("not valid here")
    check = panel.locator('li.check[data-check="auth-revoked-refused"]')
    expect(check).to_have_attribute("data-passed", "true")
    expect(check.locator(".visually-hidden")).to_have_text("Passed: ")  # what a screen reader says too


def test_the_panel_can_make_an_endpoint_for_the_learners_own_server(page: Page) -> None:
    page.goto("/playground")  # the demo-orders page: its panel offers the learner's server.py too
    panel = page.locator("[data-endpoint-panel]")
    panel.get_by_label("Its server").select_option("my-server")
    panel.get_by_role("button", name="Make an endpoint URL").click()
    expect(panel.locator("[data-endpoint-url]")).to_contain_text("/mcp/")
    snippet = panel.locator('[data-snippet="python"]')
    expect(snippet).to_contain_text("client.call_tool(tools.tools[0].name, {})  # your first tool")
    reply = page.request.get("/api/endpoints")
    assert [item["server"] for item in reply.json()] == ["my-server"]
