"""The Streamable HTTP lesson, followed as a learner does: for each step with the "Connect your own
client" panel, an endpoint made by a learner who opened the step, the step's own commands run against
it (its curl commands, read from the page, or its Python client run as given), and then every hands-on
check of the step must pass in the traffic view the panel polls. What the text says each command gets
back (202, 204, 404, 400 with -32020, 403, an event stream) is asserted on the way.

The curl commands are sent by httpx, read flag by flag: a flag this reader does not know fails the
test, so the lesson cannot offer a command nobody tried."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import pytest
from bs4 import BeautifulSoup
from mcp import Client

from app.config import PROJECT_ROOT
from app.web.learner import COOKIE
from tests.support.inprocess import ServedApp
from tests.support.lessons import course

LESSON = "streamable-http"
CATALOG = course()
ENDPOINT_STEPS = [s.slug for s in CATALOG.steps() if s.lesson_slug == LESSON and s.endpoint is not None]
PLACEHOLDER = "paste your endpoint URL here"
CLIENT_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("http-lesson"), warm_pool_size=1) as app:
        yield app


OnStep = Callable[[str, str], "Learner"]


@pytest.fixture
def on_step(app: ServedApp) -> Iterator[OnStep]:
    """A learner (by name) who opened a step and made an endpoint in its panel; browsers closed after."""
    made: list[Learner] = []

    def make(name: str, step: str) -> Learner:
        made.append(Learner(app, name, step))
        return made[-1]

    yield make
    for one in made:
        one.browser.close()


@dataclass
class Learner:
    """A learner on a step page: the step opened, an endpoint made in its panel, the checks polled."""

    app: ServedApp
    name: str
    step: str
    browser: httpx.Client = field(init=False)
    endpoint: dict = field(init=False)
    page: BeautifulSoup = field(init=False)

    def __post_init__(self) -> None:
        self.browser = self.app.client(cookies={COOKIE: self.app.learner_cookie(self.name)})
        self.page = step_page(self.browser, self.step)
        panel = self.page.select_one("[data-endpoint-panel]")
        made = self.browser.post("/api/endpoints", json={"server": panel["data-server"]})
        assert made.status_code == 201, made.text
        self.endpoint = made.json()

    def code(self, language: str) -> list[str]:
        return code_blocks(self.page, language)

    def checks(self) -> dict[str, tuple[bool, str]]:
        """One poll of the panel: the step's checks on the newest session (passes are recorded)."""
        reply = self.browser.get(f"/api/endpoints/{self.endpoint['id']}/traffic", params={"step": self.step})
        assert reply.status_code == 200, reply.text
        return {c["check"]: (c["passed"], c["reason"]) for c in reply.json()["checks"]}

    def assert_every_check_passed(self) -> None:
        checks = self.checks()
        assert set(checks) == set(CATALOG.step(self.step).checks)
        assert all(passed for passed, _ in checks.values()), checks
        recorded = self.browser.get("/api/progress").json()["steps"][self.step]["checks"]
        assert recorded == dict.fromkeys(checks, True)


def step_page(browser: httpx.Client, step: str) -> BeautifulSoup:
    opened = browser.get(f"/course/{step}")
    assert opened.status_code == 200
    return BeautifulSoup(opened.text, "html.parser")


def code_blocks(page: BeautifulSoup, language: str) -> list[str]:
    """A step's code blocks in this language, in page order, as the learner copies them."""
    return [
        pre.get_text() for pre in page.select(f'article.step .step-body pre.code[data-lang="{language}"]')
    ]


# --- the lesson's curl commands, sent by httpx ---------------------------------------------------


@dataclass
class Curl:
    method: str
    url: str
    headers: list[tuple[str, str]]
    data: str | None
    streams: bool  # -N: the learner watches events as they come


def parse_curl(block: str, variables: dict[str, str]) -> Curl:
    text = block.replace("\\\n", " ")
    for name, value in variables.items():
        text = text.replace(f'"${name}"', shlex.quote(value)).replace(f"${name}", value)
    words = shlex.split(text)
    assert words[0] == "curl", block
    method, url, headers, data, streams = "", "", [], None, False
    rest = iter(words[1:])
    for word in rest:
        if word == "-X":
            method = next(rest)
        elif word == "-H":
            name, _, value = next(rest).partition(":")
            headers.append((name.strip(), value.strip()))
        elif word == "-d":
            data = next(rest)
        elif re.fullmatch(r"-[siN]+", word):
            streams = streams or "N" in word
        elif not word.startswith("-") and not url:
            url = word
        else:
            raise AssertionError(f"a curl flag this test does not know: {word!r} in {block!r}")
    return Curl(method or ("POST" if data is not None else "GET"), url, headers, data, streams)


def is_command(block: str) -> bool:
    """A curl command (not a block that only sets URL or SESSION)."""
    return block.lstrip().startswith("curl ")


def send(client: httpx.Client, command: Curl) -> httpx.Response:
    assert not command.streams
    body = command.data.encode() if command.data is not None else None
    response = client.request(command.method, command.url, headers=command.headers, content=body)
    response.read()
    return response


@contextmanager
def open_stream(client: httpx.Client, command: Curl) -> Iterator[httpx.Response]:
    with client.stream(command.method, command.url, headers=command.headers) as response:
        yield response


def session_of(response: httpx.Response) -> str:
    assert response.status_code == 200 and "mcp-session-id" in response.headers, response.text
    return response.headers["mcp-session-id"]


def sse_messages(response: httpx.Response) -> list[str]:
    assert response.headers["content-type"].startswith("text/event-stream"), response.headers
    return [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]


# --- the steps ------------------------------------------------------------------------------------


def test_the_lesson_has_its_endpoint_steps() -> None:
    assert ENDPOINT_STEPS == [f"{LESSON}/sessions", f"{LESSON}/streams", f"{LESSON}/stateless"]
    steps = [s for s in CATALOG.steps() if s.lesson_slug == LESSON]
    assert len(steps) >= 5 and steps[-1].parts[-1].quiz is not None  # the last step ends with a quiz


def test_sessions_with_the_lessons_curl_commands(on_step: OnStep) -> None:
    learner = on_step("curl-sessions", f"{LESSON}/sessions")
    blocks = learner.code("sh")
    assert blocks[0].strip() == f"URL='{PLACEHOLDER}'"
    commands = [b for b in blocks if is_command(b)]
    variables = {"URL": learner.endpoint["url"]}
    with httpx.Client(timeout=30) as client:
        initialize, initialized, tools_list, delete = commands
        variables["SESSION"] = session_of(send(client, parse_curl(initialize, variables)))
        assert send(client, parse_curl(initialized, variables)).status_code == 202
        learner.checks()
        listed = send(client, parse_curl(tools_list, variables))
        assert listed.status_code == 200 and "get_order_status" in listed.text
        learner.checks()
        assert send(client, parse_curl(delete, variables)).status_code == 204
        learner.checks()
        # "Now send the tools/list command again: the ended session's id gets 404."
        assert send(client, parse_curl(tools_list, variables)).status_code == 404
    learner.assert_every_check_passed()


def run_python_block(block: str, url: str) -> str:
    assert block.count(PLACEHOLDER) == 1
    ran = subprocess.run([sys.executable, "-c", block.replace(PLACEHOLDER, url)], capture_output=True, text=True,
                         cwd=PROJECT_ROOT, timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran.stdout


def test_sessions_and_streams_with_the_lessons_python_client(on_step: OnStep) -> None:
    """Step 1's script, as given; step 2 says the same script passes its checks too."""
    for step in (f"{LESSON}/sessions", f"{LESSON}/streams"):
        learner = on_step(f"python-{step}", step)
        (script,) = code_blocks(step_page(learner.browser, f"{LESSON}/sessions"), "python")
        learner.page = step_page(learner.browser, step)  # back on the step being checked
        out = run_python_block(script, learner.endpoint["url"])
        assert out.splitlines() == ["revision: 2025-11-25", "['show_order', 'get_order_status']"]
        learner.assert_every_check_passed()


def test_streams_with_the_lessons_curl_commands(on_step: OnStep) -> None:
    learner = on_step("curl-streams", f"{LESSON}/streams")
    variables = {"URL": learner.endpoint["url"]}
    blocks = [b for b in learner.code("sh") if is_command(b)]
    assert [parse_curl(b, variables).method for b in blocks] == ["POST", "POST", "POST", "GET", "DELETE"]
    with httpx.Client(timeout=30) as client, httpx.Client(timeout=30) as second_terminal:
        opened = send(client, parse_curl(blocks[0], variables))
        assert opened.headers["content-type"] == "application/json"  # "The `initialize` reply was ..."
        variables["SESSION"] = session_of(opened)
        assert send(client, parse_curl(blocks[1], variables)).status_code == 202
        called = send(client, parse_curl(blocks[2], variables))
        assert called.status_code == 200 and '"id":2' in sse_messages(called)[-1]
        with open_stream(second_terminal, parse_curl(blocks[3], variables)) as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith(
                "text/event-stream"
            )
            checks = learner.checks()
            assert checks["http-stream-opened"][0] and checks["http-answered-as-sse"][0], checks
            assert send(client, parse_curl(blocks[4], variables)).status_code == 204
            # "The GET stream ends with it" (the read timeout fails the test if it does not).
            assert b"data:" not in stream.read()
    learner.assert_every_check_passed()


def test_stateless_requests_with_the_lessons_curl_commands(on_step: OnStep) -> None:
    learner = on_step("curl-stateless", f"{LESSON}/stateless")
    variables = {"URL": learner.endpoint["url"]}
    listed, called, lying = (parse_curl(b, variables) for b in learner.code("sh") if is_command(b))
    assert all(("Mcp-Session-Id" not in dict(c.headers)) for c in (listed, called, lying))
    with httpx.Client(timeout=30) as client:
        assert "get_order_status" in sse_messages(send(client, listed))[-1]
        assert '"isError":false' in sse_messages(send(client, called))[-1]
        learner.checks()
        refused = send(client, lying)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32020
        assert refused.json()["id"] == 3
    learner.assert_every_check_passed()
    checks = learner.checks()
    assert "`Mcp-Name: cancel_order`" in checks["http-header-mismatch-refused"][1]


async def test_stateless_requests_with_the_sdk_client_pass_the_first_check_only(on_step: OnStep) -> None:
    """As the step says: the panel's client (the SDK's `Client(url)`) speaks 2026-07-28 with the headers;
    a client that follows the spec never sends a mismatch."""
    learner = on_step("sdk-stateless", f"{LESSON}/stateless")
    async with Client(learner.endpoint["url"]) as client:
        assert client.protocol_version == "2026-07-28"
        assert [tool.name for tool in (await client.list_tools()).tools] == ["show_order", "get_order_status"]
    checks = learner.checks()
    assert checks["http-stateless-request"][0] is True
    assert checks["http-header-mismatch-refused"][0] is False


def test_the_origin_step_command_is_refused_403(on_step: OnStep) -> None:
    """The last step has no panel: its command goes to the URL made in the step before."""
    learner = on_step("origin", f"{LESSON}/stateless")
    page = step_page(learner.browser, f"{LESSON}/origin")
    assert page.select_one("[data-endpoint-panel]") is None
    (block,) = code_blocks(page, "sh")
    command = parse_curl(block, {"URL": learner.endpoint["url"]})
    assert dict(command.headers)["Origin"] == "http://attacker.example:3000"
    with httpx.Client(timeout=30) as client:
        refused = send(client, command)
    assert refused.status_code == 403
    assert learner.browser.get(f"/api/endpoints/{learner.endpoint['id']}/traffic").json()["sessions"] == []
