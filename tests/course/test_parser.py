"""The lesson format: what parses, and the file-and-line error for what does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.course import checks
from app.course.catalog import Catalog
from app.course.models import LessonError
from app.course.parser import parse_lesson

GOOD = """\
---
title: A tiny lesson
slug: tiny
order: 7
server: demo-orders
---

## First step {#first}

Some *text*.

```json rev=2025-06-18
{"jsonrpc": "2.0", "id": 1, "method": "ping"}
```

```console rev=2025-06-18
{"jsonrpc": "2.0", "id": 1, "method": "ping"}
```

```checks
- ping-answered
```

## Second step {#second}

```expect rev=2025-06-18
send: {"jsonrpc": "2.0", "id": 1, "method": "ping"}
reply: {"jsonrpc": "2.0", "id": 1, "result": {}}
```

```quiz id=q1
question: Pick b.
choices:
  - text: a
    why: not a
  - text: b
    correct: true
    why: yes b
```
"""


def parse(text: str, name: str = "07-tiny.md"):
    return parse_lesson(Path(name), checks=checks.REGISTRY.keys(), servers=["demo-orders"], text=text)


def error_of(text: str, name: str = "07-tiny.md") -> LessonError:
    with pytest.raises(LessonError) as caught:
        parse(text, name)
    return caught.value


def test_a_good_lesson_parses_into_steps() -> None:
    lesson = parse(GOOD)
    assert (lesson.slug, lesson.number, lesson.title) == ("tiny", 7, "A tiny lesson")
    first, second = lesson.steps
    assert (first.slug, first.short_slug, first.index, first.total) == ("tiny/first", "first", 1, 2)
    assert first.console is not None and first.console.server == "demo-orders"
    assert first.console.message == '{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "method": "ping"\n}'
    assert first.checks == ("ping-answered",)
    assert second.expects[0].server == "demo-orders"  # from the front matter
    assert second.quizzes[0].id == "q1" and [c.correct for c in second.quizzes[0].choices] == [False, True]
    assert [p.quiz is not None for p in second.parts] == [False, True]


def test_number_comes_from_the_file_name_when_order_is_absent() -> None:
    lesson = parse(GOOD.replace("order: 7\n", ""), "07-tiny.md")
    assert lesson.number == 7


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


@pytest.mark.parametrize(
    ("change", "needle", "message"),
    [
        (("## First step {#first}", "## First step"), "## First step", "stable slug"),
        (("## Second step {#second}", "## Second step {#first}"), "## Second step", "two steps"),
        (("## Second step {#second}", "## Second step {#Second_Step}"), "## Second step", "lowercase"),
        (("```json rev=2025-06-18", "```json"), "```json", "which revision"),
        (("```json rev=2025-06-18", "```json rev=2024-10-07"), "```json", "unknown revision"),
        (
            ('"method": "ping"}\n```\n\n```console', '"method": "pong"}\n```\n\n```console'),
            "```json",
            "not a client",
        ),
        (("- ping-answered", "- no-such-check"), "```checks", "no hands-on check"),
        (
            ("```console rev=2025-06-18", "```console rev=2025-06-18 server=nope"),
            "```console",
            "no demo server",
        ),
        (("    correct: true\n", ""), "```quiz", "exactly one correct"),
        (("question: Pick b.", "question: Pick: b: c"), "question:", "not valid YAML"),
        (("reply: {", "replies: {"), "```expect", "send (or send-line) and reply"),
    ],
)
def test_a_mistake_is_reported_with_its_line(change: tuple[str, str], needle: str, message: str) -> None:
    text = GOOD.replace(*change, 1)
    assert text != GOOD
    error = error_of(text)
    assert message in error.message
    assert error.line == line_of(text, needle)
    assert str(error).startswith(f"07-tiny.md:{error.line}: ")


def test_front_matter_mistakes() -> None:
    assert "front matter" in error_of("# no front matter\n").message
    assert "title" in error_of(GOOD.replace("title: A tiny lesson\n", "")).message
    assert "unknown front matter" in error_of(GOOD.replace("order: 7", "order: 7\ncolour: red")).message
    assert "disagrees" in error_of(GOOD.replace("order: 7", "order: 8")).message
    assert "number the lesson" in error_of(GOOD.replace("order: 7\n", ""), "tiny.md").message


def test_text_before_the_first_step_and_level_one_headings_are_refused() -> None:
    assert error_of(GOOD.replace("## First step", "Intro.\n\n## First step")).line == 8
    assert "level-1" in error_of(GOOD.replace("Some *text*.", "# Big")).message


def test_a_console_needs_a_check_and_checks_need_a_console() -> None:
    assert (
        "a hands-on check or an exercise"
        in error_of(GOOD.replace("```checks\n- ping-answered\n```\n", "")).message
    )
    no_console = GOOD.replace(
        '```console rev=2025-06-18\n{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n```\n', ""
    )
    assert "add a ```console" in error_of(no_console).message


def test_invalid_blocks_must_really_be_invalid() -> None:
    valid_marked_invalid = GOOD.replace("```json rev=2025-06-18", "```json invalid rev=2025-06-18")
    assert "marked invalid, but it is a valid message" in error_of(valid_marked_invalid).message
    broken = GOOD.replace(
        '```json rev=2025-06-18\n{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        '```json invalid\n{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}',
    )
    assert parse(broken).steps[0].examples[0].invalid


def test_a_fragment_is_not_checked() -> None:
    text = GOOD.replace(
        '```json rev=2025-06-18\n{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        '```json fragment\n"protocolVersion": "2025-06-18"',
    )
    assert parse(text).steps[0].examples[0].fragment


def test_a_shown_example_is_checked_but_offers_no_try_it() -> None:
    hooked = parse(GOOD).steps[0].parts[0].html
    assert "data-example" in hooked
    text = GOOD.replace("```json rev=2025-06-18\n", "```json rev=2025-06-18 shown\n")
    step = parse(text).steps[0]
    assert step.examples[0].shown and "data-example" not in step.parts[0].html
    wrong = GOOD.replace(
        '```json rev=2025-06-18\n{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        '```json rev=2025-06-18 shown\n{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}',
    )
    assert "initialize" in error_of(wrong).message  # still validated


def test_a_notification_expect_must_say_reply_none() -> None:
    text = GOOD.replace(
        'send: {"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        'send: {"jsonrpc": "2.0", "method": "notifications/initialized"}',
    )
    assert "reply: none" in error_of(text).message


def test_the_catalog_refuses_two_lessons_with_one_number(tmp_path: Path) -> None:
    (tmp_path / "07-tiny.md").write_text(GOOD)
    (tmp_path / "other.md").write_text(GOOD.replace("slug: tiny", "slug: other"))
    with pytest.raises(LessonError, match="lesson number 7 is also used by 07-tiny.md"):
        Catalog.load(tmp_path)


def test_the_catalog_orders_lessons_by_number_and_finds_steps(tmp_path: Path) -> None:
    (tmp_path / "07-tiny.md").write_text(GOOD)
    (tmp_path / "02-early.md").write_text(
        GOOD.replace("slug: tiny", "slug: early").replace("order: 7", "order: 2")
    )
    catalog = Catalog.load(tmp_path)
    assert [lesson.number for lesson in catalog.lessons] == [2, 7]
    step = catalog.step("tiny/second")
    assert step is not None and step.title == "Second step"
    assert catalog.step("tiny/none") is None and catalog.step("nope") is None
    assert catalog.neighbours(catalog.step("tiny/first")) == (catalog.step("early/second"), step)


def test_expect_send_line_answer_and_along(tmp_path) -> None:
    from app.course.blocks import Block, Info, parse_expect
    from app.course.models import LessonError

    def block(info: str, body: str) -> Block:
        return Block(tmp_path / "x.md", 1, Info.parse(info), body)

    raw = parse_expect(
        block("expect invalid server=demo-orders", "send-line: '[1]'\nreply: none\n"), None, ()
    )
    assert raw.send is None and raw.send_line == "[1]" and raw.reply is None
    with pytest.raises(LessonError, match="mark the block invalid"):
        parse_expect(
            block("expect rev=2025-11-25 server=demo-orders", "send-line: 'x'\nreply: none\n"), None, ()
        )
    body = (
        'send: {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t", "arguments": {}}}\n'
        'answer:\n  roots/list: {"result": {"roots": []}}\n'
        'along:\n  - {"method": "roots/list"}\n'
        'reply: {"id": 2}\n'
    )
    full = parse_expect(block("expect rev=2025-11-25 server=demo-assistant", body), None, ())
    assert full.answers == (("roots/list", {"result": {"roots": []}}),)
    assert full.along == ({"method": "roots/list"},)
    bad = body.replace('{"result": {"roots": []}}', '{"result": {"roots": 5}}')
    with pytest.raises(LessonError, match="the answer to roots/list is not valid"):
        parse_expect(block("expect rev=2025-11-25 server=demo-assistant", bad), None, ())


def test_a_runnable_block_renders_an_editor_and_run_and_must_compile() -> None:
    text = GOOD.replace("Some *text*.", "Some *text*.\n\n```python run\nprint('<b>hi</b>')\n```")
    html = "".join(str(part.html) for part in parse(text).steps[0].parts if part.html)
    assert "data-runnable" in html and 'data-action="run"' in html
    assert "print(&#39;&lt;b&gt;hi&lt;/b&gt;&#39;)" in html and "<b>hi</b>" not in html  # text, never markup
    broken = GOOD.replace("Some *text*.", "Some *text*.\n\n```python run\nprint('hi'\n```")
    assert "not valid Python" in str(error_of(broken))
    plain = GOOD.replace("Some *text*.", "Some *text*.\n\n```python\nprint('hi'\n```")
    assert "data-runnable" not in "".join(str(p.html) for p in parse(plain).steps[0].parts if p.html)
