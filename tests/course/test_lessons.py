"""The real lessons in lessons/: they load, their examples validate, their claims hold live."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.config import PROJECT_ROOT
from app.course.expect import ExpectFailed, ProcessChannel, contains, run_expect
from app.course.models import Example, Expect
from app.demos import load_registry
from app.protocol.revisions import parse_strict_json, validate_message
from tests.support import preloaded
from tests.support.lessons import course

DEMOS = load_registry()
CATALOG = course()
EXAMPLES = [(lesson, ex) for lesson in CATALOG.lessons for step in lesson.steps for ex in step.examples]
EXPECTS = [(lesson, ex) for lesson in CATALOG.lessons for step in lesson.steps for ex in step.expects]


def where(item: tuple[Any, Example | Expect]) -> str:
    return f"{item[0].path.name}:{item[1].line}"


def channel_to(server: str) -> ProcessChannel:
    """The demo server as `make check-lessons` runs it: a plain subprocess on stdio."""
    module = DEMOS[server].module
    assert module is not None
    return ProcessChannel(module, str(PROJECT_ROOT), python=preloaded.interpreter())


def test_every_lesson_loads() -> None:
    assert CATALOG.lessons, "no lessons found"
    for lesson in CATALOG.lessons:
        assert lesson.steps
        for step in lesson.steps:
            assert CATALOG.step(step.slug) is step


@pytest.mark.parametrize("item", [e for e in EXAMPLES if not e[1].fragment], ids=where)
def test_every_example_validates_for_its_revision_unless_marked_invalid(item: tuple[Any, Example]) -> None:
    _, example = item
    try:
        message = parse_strict_json(example.text)
    except ValueError:
        assert example.invalid, "not JSON and not marked invalid"
        return
    revisions = [example.revision] if example.revision else ["2025-11-25"]
    for revision in revisions:
        problems = validate_message(message, revision, reply_to=example.reply_to, sender=example.sender)
        assert bool(problems) == example.invalid, problems


@pytest.mark.parametrize("item", EXPECTS, ids=where)
def test_every_expect_block_holds_against_the_live_demo_server(item: tuple[Any, Expect]) -> None:
    _, expect = item
    with channel_to(expect.server) as channel:
        run_expect(expect, channel)


def test_an_expect_that_does_not_hold_says_what_differs() -> None:
    step = CATALOG.step("initialize-handshake/versions")
    assert step is not None
    wrong = step.expects[1].__class__(
        **{**step.expects[1].__dict__, "reply": {"result": {"protocolVersion": "1999-01-01"}}}
    )
    with channel_to("demo-orders") as channel, pytest.raises(ExpectFailed) as caught:
        run_expect(wrong, channel)
    assert 'reply.result.protocolVersion is "2025-11-25", not "1999-01-01"' in str(caught.value)


def test_contains_semantics() -> None:
    assert contains({"a": 1, "b": [1, 2]}, {"b": [2]}) is None
    assert contains({"a": 1}, {"a": True}) == "reply.a is 1, not true"
    assert contains({"a": {}}, {"a": {"b": 1}}) == "reply.a.b is missing"
    assert contains({"a": [{"x": 1}]}, {"a": [{"x": 2}]}) == 'no item of reply.a contains {"x": 2}'


def test_lesson_4_is_the_initialize_handshake_in_eight_steps() -> None:
    lesson = CATALOG.lesson("initialize-handshake")
    assert lesson is not None and lesson.number == 4
    assert [s.short_slug for s in lesson.steps] == [
        "shape",
        "request",
        "client-capabilities",
        "result",
        "initialized",
        "capabilities",
        "server-capabilities",
        "versions",
    ]
    for step in lesson.steps:
        if step.console is not None:
            assert step.checks, step.slug
            assert step.console.server == "demo-orders"
            assert json.loads(step.console.message)["method"]
    last = lesson.steps[-1]
    assert last.parts[-1].quiz is not None, "the lesson ends with a quiz"
    versions_console = json.loads(last.console.message)  # type: ignore[union-attr]
    assert versions_console["params"]["protocolVersion"] not in (
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
    )
    assert "version-counter-offer" in last.checks
    checks = {name for step in lesson.steps for name in step.checks}
    assert {"initialize-answered", "initialized-after-reply", "version-counter-offer"} <= checks
