"""Follow the course as a learner does: for every step with a console and hands-on checks, a fresh
console, the step's starting message sent, then the step's own "Try it" examples in order (each
with what it needs first, as the button does), answering what the server asks with the step's own
answers; then every check of the step must have passed. A check that following its own step cannot
pass is a defect of the lesson or of the check.

The examples are read from the rendered step page (the same `pre[data-example]` and `data-before`
the buttons read), so what is tested is what the learner is offered.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from bs4 import BeautifulSoup

from tests.support.appserver import AppProcess
from tests.support.lessons import course
from tests.support.wsclient import EnvelopeClient

# After a send, how long without a frame before the next example goes out. Only pacing: the relay
# keeps the order of messages, and what the walk must see (checks, a value to copy) is waited for.
QUIET_S = 0.4
CHECKS_DEADLINE_S = 30.0

CATALOG = course()
# Steps whose checks need an MCP App rendered by a browser: walked in Chromium instead
# (tests/browser/test_apps_lesson.py).
IN_A_BROWSER = {"mcp-apps/handshake", "mcp-apps/security", "mcp-apps/own-app"}
STEPS = [s for s in CATALOG.steps() if s.console is not None and s.checks and s.slug not in IN_A_BROWSER]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    # One visitor walks every step, one console after another: 67 new sessions, more than a minute's
    # default on a fast machine, so that rate is raised by name too.
    with AppProcess(tmp_path_factory.mktemp("walk"), max_sessions_per_learner=50, outside_class_share=1.0,
                    max_messages_per_10s=10_000, new_sessions_per_min=1000) as app:  # fmt: skip
        yield app


class Page:
    """What a step page offers: the editor's starting message, the Try-it examples, the answers."""

    def __init__(self, html: str) -> None:
        soup = BeautifulSoup(html, "html.parser")
        editor = soup.select_one("textarea#console-message")
        self.start = editor.get_text().strip() if editor else ""
        body = soup.select_one("article.step .step-body")
        self.examples: list[tuple[str, list[dict]]] = []
        self.answers: dict[str, Any] = {}
        for pre in body.select("pre[data-example]") if body else []:
            figure = pre.find_parent("figure")
            before = json.loads(figure["data-before"]) if figure and figure.has_attr("data-before") else []
            self.examples.append((pre.get_text().strip(), before))
        for label in body.select("p.exchange-label") if body else []:
            code = label.find("code")
            answer = label.find_next_sibling("pre")
            if code and answer and "you answer" in label.get_text():
                self.answers[code.get_text()] = json.loads(answer.get_text())


async def copy_the_request_state(learner: Learner) -> None:
    """stateless-revision/input-required: "change its `id` and copy the key of `inputRequests` and
    the `requestState` into the retry" (the values are the server's own, so only a copy works)."""
    asked = await learner.received_one(
        lambda m: (m.get("result") or {}).get("resultType") == "input_required"
    )
    call = json.loads(learner.page.start)
    result = asked["result"]
    call["id"] = learner.next_id()
    call["params"]["inputResponses"] = {key: {"action": "accept", "content": {"confirm": True}}
                                        for key in result["inputRequests"]}  # fmt: skip
    call["params"]["requestState"] = result["requestState"]
    await learner.send(json.dumps(call))


async def answer_two_rounds(learner: Learner) -> None:
    """modern-in-depth/rounds: "answer the first question in a retry ..., then answer the second in
    another retry with the newest state" (keys and states are the server's own: only a copy works)."""
    for content in ({"section": "balcony"}, {"confirm": True}):
        asked = await learner.received_one(
            lambda m: (
                (m.get("result") or {}).get("resultType") == "input_required"
                and all(k not in learner.answered for k in m["result"].get("inputRequests", {}))
            )
        )
        # What "Answer and retry" fills in: the call the question answered, a new id, the answer.
        call = json.loads(
            json.dumps(next(m for m in reversed(learner.sent) if m.get("method") == "tools/call"))
        )
        call["id"] = learner.next_id()
        [key] = asked["result"]["inputRequests"]
        learner.answered.add(key)
        call["params"]["inputResponses"] = {key: {"action": "accept", "content": content}}
        call["params"]["requestState"] = asked["result"]["requestState"]
        await learner.send(json.dumps(call))


def _task_request(learner: Learner, method: str, task_id: str) -> str:
    """What the console's "Poll it" / "Cancel it" puts in the editor: the task's id, in the envelope
    of the call that created it (static/console/followups.js)."""
    call = next(m for m in reversed(learner.sent) if m.get("method") == "tools/call")
    params = {"_meta": call["params"]["_meta"], "taskId": task_id}
    return json.dumps({"jsonrpc": "2.0", "id": learner.next_id(), "method": method, "params": params})


async def poll_the_task(learner: Learner) -> None:
    """tasks/poll: "change the message into a tasks/get with a new id and the taskId you were given,
    and poll until the status is completed" (the id is the server's own, unguessable)."""
    created = await learner.received_one(lambda m: (m.get("result") or {}).get("resultType") == "task")
    task_id = created["result"]["taskId"]
    for _ in range(20):
        await learner.send(_task_request(learner, "tasks/get", task_id))
        if learner.checks.get("task-completed", {}).get("passed"):
            return
        await asyncio.sleep(created["result"]["pollIntervalMs"] / 1000)


async def cancel_the_task(learner: Learner) -> None:
    """tasks/cancel: "send tasks/cancel with its id, then poll it once"."""
    created = await learner.received_one(lambda m: (m.get("result") or {}).get("resultType") == "task")
    await learner.send(_task_request(learner, "tasks/cancel", created["result"]["taskId"]))
    await learner.send(_task_request(learner, "tasks/get", created["result"]["taskId"]))


# Steps whose text asks the learner to do something by hand that no example can hold.
BY_HAND = {
    "stateless-revision/input-required": copy_the_request_state,
    "modern-in-depth/rounds": answer_two_rounds,
    "tasks/poll": poll_the_task,
    "tasks/cancel": cancel_the_task,
}


class Learner:
    """The console's side of "Try it" and Send: fresh ids for what an example needs first."""

    def __init__(self, console: EnvelopeClient, page: Page) -> None:
        self.console = console
        self.page = page
        self.sent_methods: set[str] = set()
        self.used_ids: set[int] = set()
        self.checks: dict[str, dict] = {}
        self.unanswered: list[str] = []
        self.received: list[dict] = []  # the server's messages, for what a step has copied by hand
        self.answered: set[str] = set()  # inputRequests keys a by-hand step has answered
        self.sent: list[dict] = []  # what the learner sent, for what a step fills in from it

    def next_id(self) -> int:
        return max(self.used_ids, default=0) + 1

    async def send(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if isinstance(message, dict):
            self.sent.append(message)
            if isinstance(message.get("method"), str):
                self.sent_methods.add(message["method"])
            if isinstance(message.get("id"), int) and "method" in message:
                self.used_ids.add(message["id"])
        await self.console.send_text(text)
        await self.settle()

    async def try_it(self, text: str, before: list[dict]) -> None:
        if "initialize" in self.sent_methods and json.loads(text).get("method") == "initialize":
            await self.fresh_server()  # as the button does: a session has one handshake
        for needed in before:
            if isinstance(needed.get("method"), str) and needed["method"] in self.sent_methods:
                continue
            copy = dict(needed)
            if "id" in copy:
                copy["id"] = self.next_id()
            await self.send(json.dumps(copy))
        await self.send(text)

    async def fresh_server(self) -> None:
        """The console's restart: a fresh server and transcript, with nothing sent yet."""
        await self.console.ws.send(json.dumps({"type": "restart"}))
        while (frame := await self.console.recv())["type"] != "state" or frame["status"] != "ready":
            await self.on_frame(frame)  # a check frame on the way is still the walk's
        self.sent_methods.clear()
        self.used_ids.clear()

    async def settle(self) -> None:
        """Read until the server goes quiet, answering its requests as the step says to."""
        while True:
            try:
                frame = await self.console.recv(QUIET_S)
            except TimeoutError:
                return
            await self.on_frame(frame)

    async def on_frame(self, frame: dict) -> None:
        if frame["type"] == "check" and not self.checks.get(frame["check"], {}).get("passed"):
            self.checks[frame["check"]] = frame  # a check once passed stays passed, as on the page
        message = frame.get("message")
        if frame["type"] == "received" and isinstance(message, dict):
            self.received.append(message)
        if (
            frame["type"] == "received"
            and isinstance(message, dict)
            and "method" in message
            and "id" in message
        ):
            answer = self.page.answers.get(message["method"])
            if answer is None:
                self.unanswered.append(message["method"])
                return
            await self.console.send_text(json.dumps({"jsonrpc": "2.0", **answer, "id": message["id"]}))

    async def until(self, done: Callable[[], bool]) -> bool:
        """Read (and answer) frames until `done()`, or False after CHECKS_DEADLINE_S."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CHECKS_DEADLINE_S
        while not done():
            if loop.time() > deadline:
                return False
            try:
                await self.on_frame(await self.console.recv(max(deadline - loop.time(), 0.05)))
            except TimeoutError:
                return False
        return True

    async def passed(self, names: tuple[str, ...]) -> bool:
        return await self.until(lambda: all(self.checks.get(n, {}).get("passed") for n in names))

    async def received_one(self, wanted: Callable[[dict], bool]) -> dict:
        """The newest server message that is `wanted`, once it has come."""
        assert await self.until(lambda: any(wanted(m) for m in self.received)), "the server never sent it"
        return next(m for m in reversed(self.received) if wanted(m))


# The walk is split between this module and test_walk_later.py, each with its app, so that two
# workers walk at once: one module is one worker's (--dist loadscope), and the walk takes minutes.
HALF = len(STEPS) // 2


@pytest.mark.parametrize("slug", [s.slug for s in STEPS[:HALF]])
async def test_following_a_step_passes_its_checks(app: AppProcess, slug: str) -> None:
    await walk(app, slug)


async def walk(app: AppProcess, slug: str, start: bool = True) -> None:
    """Follow one step as a learner does, and see every check of it pass. Without `start`, the
    console's own message is never sent: only what the Try-it buttons put there (and the steps done
    by hand)."""
    step = CATALOG.step(slug)
    assert step is not None and step.console is not None
    with app.client() as client:
        page = Page(client.get(f"/course/{slug}").raise_for_status().text)
    console = await EnvelopeClient.connect(f"{app.ws_base}/ws/{step.console.server}?step={slug}")
    try:
        await console.recv_type("state")
        learner = Learner(console, page)
        await learner.settle()
        if page.start and start:
            await learner.send(page.start)
        for text, before in page.examples:
            await learner.try_it(text, before)
        if slug in BY_HAND:
            await BY_HAND[slug](learner)
        passed = await learner.passed(step.checks)
        failing = {n: learner.checks.get(n, {}).get("reason", "no check frame") for n in step.checks
                   if not learner.checks.get(n, {}).get("passed")}  # fmt: skip
        assert passed, (f"{slug}: following the step leaves checks open: {failing}; "
                        f"server requests without an answer in the step: {learner.unanswered}")  # fmt: skip
    finally:
        await console.close()


def test_the_walk_covers_the_course() -> None:
    """The walk above is only worth something if it finds the steps: 40 of them in 10 lessons today
    (a floor: more steps only add to it)."""
    assert len(STEPS) >= 40 and len({s.lesson_slug for s in STEPS}) >= 10, [s.slug for s in STEPS]
