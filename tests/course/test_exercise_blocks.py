"""The ```exercise block: what parses, and the file-and-line error for what does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.course import checks
from app.course.models import LessonError
from app.course.parser import parse_lesson
from app.demos import MY_SERVER

LESSON = """\
---
title: Build
slug: build
order: 11
server: my-server
---

## Add {{#add}}

Write it.

```console rev=2025-11-25
{{"jsonrpc": "2.0", "id": 1, "method": "ping"}}
```

```exercise rev=2025-11-25 solution=solutions/add.py
{tests}
```
"""
TESTS = """\
- title: lists `add`
  tool: add
- title: adds
  call: add
  arguments: {"a": 1, "b": 2}
  text: "3"
"""


@pytest.fixture
def lessons(tmp_path: Path) -> Path:
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "add.py").write_text("x = 1\n")
    return tmp_path


def parse(folder: Path, text: str):
    return parse_lesson(folder / "11-build.md", checks=checks.REGISTRY.keys(), servers=["demo-orders", MY_SERVER],
                        text=text)  # fmt: skip


def error_of(folder: Path, text: str) -> LessonError:
    with pytest.raises(LessonError) as caught:
        parse(folder, text)
    return caught.value


def test_an_exercise_parses_with_its_tests_and_solution(lessons: Path) -> None:
    step = parse(lessons, LESSON.format(tests=TESTS)).steps[0]
    assert step.exercise is not None and step.required_checks == ("exercise",)
    assert [t.kind for t in step.exercise.tests] == ["tool", "call"]
    assert step.exercise.solution == (lessons / "solutions" / "add.py").resolve()
    assert str(step.exercise.tests[0].title_html) == "lists <code>add</code>"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            lambda t: t.replace("solution=solutions/add.py", "solution=solutions/none.py"),
            "no reference solution",
        ),
        (
            lambda t: t.replace("solution=solutions/add.py", "solution=../../etc/passwd"),
            "no reference solution",
        ),
        (lambda t: t.replace(" solution=solutions/add.py", ""), "name the reference solution"),
        (lambda t: t.replace("```exercise rev=2025-11-25", "```exercise"), "say which revision"),
        (lambda t: t.replace("tool: add", "tool: add\n  call: add"), "names 2 kinds"),
        (lambda t: t.replace("tool: add", "tool: add\n  colour: red"), "does not take colour"),
        (lambda t: t.replace("- title: lists `add`\n", "- "), "needs a `title`"),
        (lambda t: t.replace('arguments: {"a": 1, "b": 2}', "arguments: [1, 2]"), "`arguments` is an object"),
        (
            lambda t: t.replace("server: my-server", "server: demo-orders"),
            "add a ```console server=my-server",
        ),
    ],
    ids=[
        "missing-solution",
        "solution-outside",
        "no-solution",
        "no-rev",
        "two-kinds",
        "unknown-key",
        "no-title",
        "bad-arguments",
        "not-my-server",
    ],  # fmt: skip
)
def test_a_wrong_exercise_is_refused_with_its_line(lessons: Path, change, words: str) -> None:  # noqa: ANN001
    error = error_of(lessons, change(LESSON.format(tests=TESTS)))
    assert words in error.message, error.message
    assert error.line >= 14
