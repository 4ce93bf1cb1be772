"""Lesson 25, MCP Apps: its hands-on checks on hand-built transcripts (the app lane included), and the
exercise kind `app` against real SDK servers in plain subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import textwrap
from collections.abc import Iterator
from typing import Any, Literal

import pytest

from app.course import exercises
from app.course.exercises import Exercise, ExerciseError
from app.protocol.transcript import Transcript
from app.workspace import starter
from tests.course.checkhelp import INITIALIZED, fails, init, init_result, note, passes, req, res, text_result
from tests.course.exercisehelp import exercise, outcomes, run
from tests.support.appserver import ROOT
from tests.support.inprocess import ServedApp
from tests.support.lessons import course
from tests.support.wsclient import EnvelopeClient

APPS = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}
CARD = "ui://orders/order-card.html"
SHOW_ORDER = {
    "name": "show_order",
    "inputSchema": {"type": "object"},
    "_meta": {"ui": {"resourceUri": CARD, "visibility": ["model", "app"]}},
}
PLAIN_TOOL = {"name": "get_order_status", "inputSchema": {"type": "object"}}

# Who sends: ">" the learner, "<" the server, "host>" / "app>" the console for itself or for an app,
# "to_app" / "from_app" the app lane.
Step = tuple[str, dict[str, Any]]
MAKERS: dict[str, Literal["host", "app"]] = {"host>": "host", "app>": "app"}


def transcript(*steps: Step) -> Transcript:
    t = Transcript(server="demo-orders")
    for who, message in steps:
        line = json.dumps(message)
        if who == "<":
            t.add_server(line, message)
        elif who in ("to_app", "from_app"):
            direction: Literal["to_app", "from_app"] = "to_app" if who == "to_app" else "from_app"
            t.add_app(direction, line, message)
        else:
            t.add_client(line, message, by=MAKERS.get(who))
    return t


HANDSHAKE: tuple[Step, ...] = ((">", init(1, "2025-11-25", caps=APPS)), ("<", init_result(1, "2025-11-25")),
                               (">", INITIALIZED))  # fmt: skip
# The console's own reads, then the learner's call that opens the app.
OPENED: tuple[Step, ...] = (
    *HANDSHAKE,
    ("host>", req(101, "resources/read", {"uri": CARD})),
    ("<", res(101, {"contents": [{"uri": CARD, "mimeType": "text/html;profile=mcp-app", "text": "<!DOCTYPE html>"}]})),
    (">", req(2, "tools/call", {"name": "show_order", "arguments": {"order_id": "123456"}})),
    ("<", res(2, {**text_result("Order 123456: shipped"), "structuredContent": {"order_id": "123456", "status": "shipped"}})),
)  # fmt: skip
UI_INIT = req(1, "ui/initialize", {"protocolVersion": "2026-01-26", "appCapabilities": {}})
UI_INIT_RESULT = res(1, {"protocolVersion": "2026-01-26", "hostInfo": {"name": "mcp-playground", "version": "1"},
                         "hostCapabilities": {"serverTools": {}}, "hostContext": {"theme": "light"}})  # fmt: skip
UI_INITIALIZED = note("ui/notifications/initialized")
TOOL_INPUT = note("ui/notifications/tool-input", {"arguments": {"order_id": "123456"}})
TOOL_RESULT = note("ui/notifications/tool-result", text_result("Order 123456: shipped"))
STARTED: tuple[Step, ...] = (
    *OPENED,
    ("from_app", UI_INIT),
    ("to_app", UI_INIT_RESULT),
    ("from_app", UI_INITIALIZED),
)
READY: tuple[Step, ...] = (*STARTED, ("to_app", TOOL_INPUT), ("to_app", TOOL_RESULT))
REFRESH = req(2, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "123456"}})
DECLINED = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "The user declined the call"}}


# --- apps-extension-declared ------------------------------------------------------------------------


def test_declaring_the_extension_in_initialize() -> None:
    fails("apps-extension-declared", transcript(), "Send `initialize` declaring the MCP Apps extension")
    plain = transcript((">", init(1, "2025-11-25")), ("<", init_result(1, "2025-11-25")))
    fails("apps-extension-declared", plain, "declares no MCP Apps")
    no_types = init(1, "2025-11-25", caps={"extensions": {"io.modelcontextprotocol/ui": {}}})
    fails("apps-extension-declared", transcript((">", no_types)), "its settings need `mimeTypes`")
    fails("apps-extension-declared", transcript(HANDSHAKE[0]), "Waiting for the reply")
    passes("apps-extension-declared", transcript(*HANDSHAKE), "Message #1 declared MCP Apps in `initialize`")


def test_declaring_the_extension_in_a_2026_envelope() -> None:
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": APPS,
    }
    call = req(
        4, "tools/call", {"_meta": envelope, "name": "show_order", "arguments": {"order_id": "123456"}}
    )
    passes("apps-extension-declared", transcript((">", call), ("<", res(4, text_result("ok")))), "envelope")


# --- ui-tool-listed, ui-resource-read -------------------------------------------------------------------


def test_a_tool_with_an_app_is_found_in_the_list() -> None:
    listed = req(2, "tools/list")
    fails("ui-tool-listed", transcript(*HANDSHAKE), "You have not sent `tools/list`")
    only_plain = transcript(*HANDSHAKE, (">", listed), ("<", res(2, {"tools": [PLAIN_TOOL]})))
    fails("ui-tool-listed", only_plain, "No tool in that list has `_meta.ui.resourceUri`")
    both = transcript(*HANDSHAKE, (">", listed), ("<", res(2, {"tools": [PLAIN_TOOL, SHOW_ORDER]})))
    passes("ui-tool-listed", both, f"`show_order` links the app `{CARD}` (visibility: `model`, `app`)")


def test_the_hosts_own_tools_list_does_not_count() -> None:
    by_host = transcript(
        *HANDSHAKE, ("host>", req(100, "tools/list")), ("<", res(100, {"tools": [SHOW_ORDER]}))
    )
    fails("ui-tool-listed", by_host, "You have not sent `tools/list`")


def test_reading_the_ui_resource() -> None:
    read = req(3, "resources/read", {"uri": CARD})
    html = {
        "contents": [{"uri": CARD, "mimeType": "text/html;profile=mcp-app", "text": "<!DOCTYPE html><p>"}]
    }
    fails("ui-resource-read", transcript(*HANDSHAKE), "Send `resources/read` with the `uri`")
    policy = req(3, "resources/read", {"uri": "policy://refunds"})
    fails("ui-resource-read", transcript(*HANDSHAKE, (">", policy)), "which is not a `ui://` resource")
    wrong_type = {"contents": [{"uri": CARD, "mimeType": "text/html", "text": "<p>"}]}
    fails("ui-resource-read", transcript((">", read), ("<", res(3, wrong_type))), "MIME type(s) text/html")
    missing = {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Unknown resource"}}
    fails("ui-resource-read", transcript((">", read), ("<", missing)), "Copy the URI exactly")
    passes(
        "ui-resource-read",
        transcript((">", read), ("<", res(3, html))),
        "came back as `text/html;profile=mcp-app`",
    )
    # The console's own read of the card (OPENED) is not the learner's.
    fails("ui-resource-read", transcript(*OPENED), "Send `resources/read`")


# --- app-initialized, app-tool-data-delivered ---------------------------------------------------------


def test_the_apps_handshake_in_the_app_lane() -> None:
    fails("app-initialized", transcript(*OPENED), "No app has started yet")
    asked = transcript(*OPENED, ("from_app", UI_INIT))
    fails("app-initialized", asked, "waiting for the host's answer")
    answered = transcript(*OPENED, ("from_app", UI_INIT), ("to_app", UI_INIT_RESULT))
    fails("app-initialized", answered, "waiting for the app's `ui/notifications/initialized`")
    refused = transcript(*OPENED, ("from_app", UI_INIT), ("to_app", DECLINED | {"id": 1}))
    fails("app-initialized", refused, "The host refused the app's `ui/initialize`")
    passes(
        "app-initialized",
        transcript(*STARTED),
        '`mcp-playground` answered with protocol version "2026-01-26"',
    )


def test_an_answer_to_another_id_does_not_finish_the_handshake() -> None:
    other = transcript(*OPENED, ("from_app", UI_INIT), ("to_app", res(7, {})), ("from_app", UI_INITIALIZED))
    fails("app-initialized", other, "waiting for the host's answer")


def test_the_tool_input_then_result_reach_the_app() -> None:
    fails("app-tool-data-delivered", transcript(*OPENED), "No app has started yet")
    fails(
        "app-tool-data-delivered",
        transcript(*STARTED),
        "waiting for the host's `ui/notifications/tool-input`",
    )
    given = transcript(*STARTED, ("to_app", TOOL_INPUT))
    fails("app-tool-data-delivered", given, "waiting for `ui/notifications/tool-result`")
    passes("app-tool-data-delivered", transcript(*READY), 'the arguments {"order_id": "123456"}')
    passes("app-tool-data-delivered", transcript(*READY), "Order 123456: shipped")


def test_tool_input_sent_before_initialized_does_not_count() -> None:
    early = transcript(*OPENED, ("from_app", UI_INIT), ("to_app", UI_INIT_RESULT), ("to_app", TOOL_INPUT),
                       ("from_app", UI_INITIALIZED), ("to_app", TOOL_RESULT))  # fmt: skip
    fails("app-tool-data-delivered", early, "waiting for the host's `ui/notifications/tool-input`")


# --- app-call-allowed, app-call-declined ------------------------------------------------------------


def _allowed(app_id: int = 2, relay_id: int = 900) -> tuple[Step, ...]:
    call = req(app_id, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "123456"}})
    relayed = req(relay_id, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "123456"}})
    result = text_result('{"order_id": "123456", "status": "shipped"}')
    return (
        ("from_app", call),
        ("app>", relayed),
        ("<", res(relay_id, result)),
        ("to_app", res(app_id, result)),
    )


def _declined(app_id: int = 3) -> tuple[Step, ...]:
    call = req(app_id, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "123456"}})
    return (("from_app", call), ("to_app", DECLINED | {"id": app_id}))


def test_an_allowed_app_call_reaches_the_server_and_comes_back() -> None:
    fails("app-call-allowed", transcript(*READY), "Press the app's Refresh button")
    fails("app-call-allowed", transcript(*READY, ("from_app", REFRESH)), "waits for you: choose Allow")
    fails(
        "app-call-allowed", transcript(*READY, *_declined(2)), "Press the app's button again and choose Allow"
    )
    passes("app-call-allowed", transcript(*READY, *_allowed()), "reached the server as message #")
    passes("app-call-allowed", transcript(*READY, *_allowed()), "the result came back to the app")


def test_an_app_call_is_not_the_learners_call() -> None:
    t = transcript(*READY, *_allowed())
    relayed = [e for e in t.client_messages() if e.method == "tools/call"]
    assert [t.made_by(e) for e in relayed] == [None, "app"]
    # The learner's own show_order call stays the only one that tool checks read.
    passes("tool-called", t, "Order 123456: shipped")


def test_an_answer_without_a_relayed_call_is_not_a_round_trip() -> None:
    result = res(2, text_result("made up by the host"))
    fails("app-call-allowed", transcript(*READY, ("from_app", REFRESH), ("to_app", result)),
          "no call made for the app reached the server")  # fmt: skip


def test_a_declined_app_call() -> None:
    fails("app-call-declined", transcript(*READY), "Press the app's Refresh button")
    fails("app-call-declined", transcript(*READY, ("from_app", REFRESH)), "choose Deny this time")
    fails("app-call-declined", transcript(*READY, *_allowed()), "That call was allowed")
    passes(
        "app-call-declined", transcript(*READY, *_allowed(), *_declined()), "the server never saw the call"
    )
    passes("app-call-declined", transcript(*READY, *_declined()), "error -32000 (The user declined the call)")


def test_an_error_that_came_from_the_server_is_not_a_refusal() -> None:
    call = req(4, "tools/call", {"name": "get_order_status", "arguments": {}})
    relayed = req(901, "tools/call", {"name": "get_order_status", "arguments": {}})
    server_error = {"jsonrpc": "2.0", "id": 901, "error": {"code": -32602, "message": "Invalid params"}}
    back = {"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Invalid params"}}
    t = transcript(*READY, ("from_app", call), ("app>", relayed), ("<", server_error), ("to_app", back))
    fails("app-call-declined", t, "That call was allowed")


# --- own-app-round-trip -------------------------------------------------------------------------------


def test_the_learners_own_app_round_trip() -> None:
    fails("own-app-round-trip", transcript(*HANDSHAKE), "call your tool that has an app")
    fails("own-app-round-trip", transcript(*READY), "Your app is running. Press its button")
    fails("own-app-round-trip", transcript(*READY, ("from_app", REFRESH)), "waits for you: choose Allow")
    passes("own-app-round-trip", transcript(*READY, *_allowed()), "Then: The app's `tools/call`")


# --- the exercise kind `app` ------------------------------------------------------------------------

SERVER = textwrap.dedent('''
    from mcp.server.apps import Apps, ResourceCsp
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.resources import TextResource

    apps = Apps()
    HTML = "<!DOCTYPE html><html><body><script>parent.postMessage({}, '*')</script></body></html>"


    @apps.tool(resource_uri="ui://t/card.html", visibility=["model", "app"])
    def card() -> str:
        """A tool with an app."""
        return "card"


    apps.add_html_resource("ui://t/card.html", HTML, csp=ResourceCsp(connect_domains=["https://api.example"]))
    mcp = MCPServer("apps-kind", extensions=[apps])


    @mcp.tool()
    def plain() -> str:
        """No app."""
        return "plain"


    @mcp.tool(meta={"ui/resourceUri": "ui://t/card.html"})
    def flat() -> str:
        """The deprecated flat key."""
        return "flat"


    @mcp.tool(meta={"ui": {"resourceUri": "ui://t/typed.html"}})
    def typed() -> str:
        """An app served as plain HTML."""
        return "typed"


    @mcp.resource("ui://t/typed.html", mime_type="text/html")
    def typed_html() -> str:
        return "<!DOCTYPE html><p>"


    @mcp.tool(meta={"ui": {"resourceUri": "ui://t/missing.html"}})
    def missing() -> str:
        """Its app does not exist."""
        return "missing"


    @mcp.tool(meta={"ui": {"resourceUri": "ui://t/fragment.html"}})
    def fragment() -> str:
        """Not a whole document."""
        return "fragment"


    mcp.add_resource(TextResource(uri="ui://t/fragment.html", name="fragment", text="<p>hi</p>",
                                  mime_type="text/html;profile=mcp-app"))


    @mcp.tool(meta={"ui": {"resourceUri": "https://example.com/app.html"}})
    def web() -> str:
        """Links a web page, not a ui:// resource."""
        return "web"


    if __name__ == "__main__":
        mcp.run()
''')


async def test_a_tool_with_an_app_passes() -> None:
    report = await run(SERVER, exercise(
        ("card", {"app": "card", "resource_uri": "ui://t/card.html", "visibility": ["app", "model"],
                  "html_contains": "postMessage"}),
    ))  # fmt: skip
    assert outcomes(report) == {"card": (True, "`card` links `ui://t/card.html`, which reads as 85 characters "
                                               "of HTML, `text/html;profile=mcp-app`")}  # fmt: skip


async def test_each_broken_app_is_told_what_is_wrong() -> None:
    report = await run(SERVER, exercise(
        ("absent", {"app": "nothing"}),
        ("plain", {"app": "plain"}),
        ("flat", {"app": "flat"}),
        ("web", {"app": "web"}),
        ("other uri", {"app": "card", "resource_uri": "ui://t/other.html"}),
        ("visibility", {"app": "card", "visibility": ["app"]}),
        ("typed", {"app": "typed"}),
        ("missing", {"app": "missing"}),
        ("fragment", {"app": "fragment"}),
        ("contains", {"app": "card", "html_contains": "ui/initialize"}),
    ))  # fmt: skip
    seen = outcomes(report)
    assert not any(passed for passed, _ in seen.values())
    reasons = {title: reason for title, (_, reason) in seen.items()}
    assert reasons["absent"].startswith("tools/list has no tool named `nothing`")
    assert reasons["plain"] == "`plain` has no `_meta.ui.resourceUri`: nothing links it to an app"
    assert reasons["flat"] == (
        '`flat` uses the deprecated flat key `_meta["ui/resourceUri"]`; use `_meta.ui.resourceUri`'
    )
    assert reasons["web"] == (
        "`web`'s `_meta.ui.resourceUri` is \"https://example.com/app.html\"; an app's URI starts with `ui://`"
    )
    assert reasons["other uri"] == '`card` links "ui://t/card.html", expected "ui://t/other.html"'
    assert reasons["visibility"] == '`card`\'s visibility is ["model", "app"], expected ["app"]'
    assert reasons["typed"] == (
        '`ui://t/typed.html` is served as "text/html"; an app must be `text/html;profile=mcp-app`'
    )
    assert reasons["missing"].startswith("reading `ui://t/missing.html` failed with ")
    assert reasons["fragment"] == (
        "`ui://t/fragment.html` is not an HTML5 document: it should start with `<!DOCTYPE html>`"
    )
    assert reasons["contains"] == "expected the app's HTML to contain 'ui/initialize'"


def test_an_app_test_makes_the_run_declare_mcp_apps() -> None:
    ex = exercise(("card", {"app": "card"}), ("call", {"call": "card"}))
    assert ex.client_capabilities == APPS
    assert exercise(("call", {"call": "card"})).client_capabilities == {}


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ({"title": "x", "app": "card", "visibility": ["user"]}, "`visibility` lists `model`, `app` or both"),
        ({"title": "x", "app": "card", "visibility": []}, "`visibility` lists `model`, `app` or both"),
        (
            {"title": "x", "app": "card", "resource_uri": "https://x"},
            "`resource_uri` is the app's `ui://` URI",
        ),
        ({"title": "x", "app": ""}, "`app` names the tool that has an app"),
        ({"title": "x", "app": "card", "mime_type": "text/html"}, "(app) does not take mime_type"),
    ],
)
def test_the_parser_refuses_a_wrong_app_test(item: dict[str, Any], words: str) -> None:
    with pytest.raises(ExerciseError, match=words.replace("(", r"\(").replace(")", r"\)")):
        exercises.parse([item], revision="2025-11-25", solution="solutions/25-app.py",
                        lessons_dir=ROOT / "lessons", line=1)  # fmt: skip


# --- the lesson -----------------------------------------------------------------------------------------


def test_the_lesson_lists_its_checks_and_its_exercise() -> None:
    lesson = next(x for x in course().lessons if x.slug == "mcp-apps")
    assert lesson.number == 25
    steps = {step.short_slug: step for step in lesson.steps}
    assert steps["build"].console is not None and steps["build"].console.server == "my-server"
    assert steps["security"].checks == ("app-call-allowed", "app-call-declined")
    assert steps["own-app"].checks == ("own-app-round-trip",)


async def test_the_reference_solution_passes_and_the_starter_does_not() -> None:
    step = course().step("mcp-apps/build")
    assert step is not None and isinstance(step.exercise, Exercise)
    solved = await run(step.exercise.solution.read_text(encoding="utf-8"), step.exercise)
    assert solved.passed, solved.to_json()
    unsolved = await run(starter("server.py"), step.exercise)
    assert not unsolved.passed
    assert unsolved.outcomes[0].reason.startswith("tools/list has no tool named `show_menu`")


def test_the_lessons_app_is_the_reference_solutions() -> None:
    """The HTML a learner copies from the build step is the one the exercise was checked with."""
    text = (ROOT / "lessons" / "25-mcp-apps.md").read_text(encoding="utf-8")
    solution = (ROOT / "lessons" / "solutions" / "25-app.py").read_text(encoding="utf-8")
    start = 'MENU_APP_HTML = """'
    shown = text[text.index(start) : text.index('"""\n', text.index(start) + len(start)) + 3]
    assert shown in solution
    assert "extensions=[apps]" in solution


# --- the steps through the real relay, the console's host frames played by hand --------------------


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    with ServedApp(tmp_path_factory.mktemp("apps-lesson")) as running:
        yield running


class Console:
    """The console page as an Apps host, over the envelope WebSocket: what apphost.js sends the relay
    for the app it renders (docs/websocket.md, "MCP Apps"), and the check frames that come back."""

    def __init__(self, client: EnvelopeClient) -> None:
        self.client = client
        self.checks: dict[str, dict[str, Any]] = {}

    async def frame(self, *types: str) -> dict[str, Any]:
        while True:
            frame = await self.client.recv()
            if frame["type"] == "check" and not self.checks.get(frame["check"], {}).get("passed"):
                self.checks[frame["check"]] = frame
            if frame["type"] in types:
                return frame

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        await self.client.send(message)
        return (await self.frame("received"))["message"]

    async def app(self, sender: str, message: dict[str, Any]) -> None:
        await self.client.ws.send(json.dumps({"type": "app", "from": sender, "text": json.dumps(message)}))
        await self.frame("app")

    async def call_for_app(self, message: dict[str, Any]) -> dict[str, Any]:
        await self.client.ws.send(json.dumps({"type": "call", "by": "app", "text": json.dumps(message)}))
        sent = await self.frame("sent")
        while (received := await self.frame("received"))["answers"] != sent["seq"]:
            pass
        return received["message"]

    async def opened(self, tool: str, arguments: dict[str, Any]) -> None:
        """The learner's handshake and call, then the app's handshake and the tool's data."""
        await self.request(init(1, "2025-11-25", caps=APPS))
        await self.client.send(INITIALIZED)
        await self.request(req(5, "tools/list"))  # where the console finds the tool's app
        reply = await self.request(req(2, "tools/call", {"name": tool, "arguments": arguments}))
        assert reply["result"]["isError"] is False, reply
        await self.app("app", UI_INIT)
        await self.app("host", UI_INIT_RESULT)
        await self.app("app", UI_INITIALIZED)
        await self.app("host", note("ui/notifications/tool-input", {"arguments": arguments}))
        await self.app("host", note("ui/notifications/tool-result", reply["result"]))

    async def app_calls(self, app_id: int, name: str, arguments: dict[str, Any], allow: bool) -> None:
        asked = req(app_id, "tools/call", {"name": name, "arguments": arguments})
        await self.app("app", asked)
        if allow:
            reply = await self.call_for_app(req(f"app-call-{app_id}", "tools/call", asked["params"]))
            await self.app("host", res(app_id, reply["result"]))
        else:
            refused = {"code": -32001, "message": "The user declined this tool call."}
            await self.app("host", {"jsonrpc": "2.0", "id": app_id, "error": refused})

    async def passed(self, *names: str) -> dict[str, str]:
        """Each check's reason, once all have passed (what is still open, if they do not in time)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                while not all(self.checks.get(n, {}).get("passed") for n in names):
                    await self.frame("check")
        return {n: ("" if self.checks.get(n, {}).get("passed") else "OPEN: ") + self.checks.get(n, {}).get(
            "reason", "no check frame") for n in names}  # fmt: skip


async def console(app_server: ServedApp, server: str, step: str, learner: str) -> Console:
    headers = {"Cookie": f"playground_learner={learner}"}
    client = await EnvelopeClient.connect(
        f"{app_server.ws_base}/ws/{server}?step={step}", additional_headers=headers
    )
    await client.recv_type("state")
    return Console(client)


async def test_the_handshake_and_security_steps_pass_through_the_relay(app_server: ServedApp) -> None:
    learner = app_server.learner_cookie("apps-demo")
    host = await console(app_server, "demo-orders", "mcp-apps/handshake", learner)
    try:
        await host.opened("show_order", {"order_id": "123456"})
        reasons = await host.passed("app-initialized", "app-tool-data-delivered")
    finally:
        await host.client.close()
    assert not any(r.startswith("OPEN") for r in reasons.values()), reasons
    host = await console(app_server, "demo-orders", "mcp-apps/security", learner)
    try:
        await host.opened("show_order", {"order_id": "123456"})
        await host.app_calls(2, "get_order_status", {"order_id": "123456"}, allow=True)
        await host.app_calls(3, "get_order_status", {"order_id": "123456"}, allow=False)
        reasons = await host.passed("app-call-allowed", "app-call-declined")
    finally:
        await host.client.close()
    assert not any(r.startswith("OPEN") for r in reasons.values()), reasons
    assert "shipped" in reasons["app-call-allowed"]


async def test_the_learners_own_app_round_trip_through_the_relay(app_server: ServedApp) -> None:
    learner = app_server.learner_cookie("apps-own")
    app_server.save_server(
        "apps-own", (ROOT / "lessons" / "solutions" / "25-app.py").read_text(encoding="utf-8")
    )
    host = await console(app_server, "my-server", "mcp-apps/own-app", learner)
    try:
        await host.opened("show_menu", {})
        await host.app_calls(2, "order", {"item": "latte"}, allow=True)
        reasons = await host.passed("own-app-round-trip")
    finally:
        await host.client.close()
    assert not reasons["own-app-round-trip"].startswith("OPEN"), reasons
    assert "1 x latte: 3.50" in reasons["own-app-round-trip"]
