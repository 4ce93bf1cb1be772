"""`[spec ...]` refs: every one in the course names a real section; a bad one is refused with its line;
the page of every claim renders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from bs4 import BeautifulSoup

from app.course import checks
from app.course.models import LessonError
from app.course.parser import parse_lesson
from app.course.spec import SpecSections, parse_ref, sections
from tests.support.lessons import course

CATALOG = course()
TABLE = sections()

LESSON = """\
---
title: A tiny lesson
slug: tiny
order: 7
---

## First step {#first}

Some text.

A request id is new for each request
[spec 2025-11-25 basic#requests]. Another sentence `[spec not a ref]`.

```quiz id=q1
question: Pick b.
choices:
  - text: a
    why: not a
  - text: b
    correct: true
    why: 'yes b [spec 2025-06-18..2025-11-25 basic/lifecycle#version-negotiation]'
```
"""


def parse(text: str):
    return parse_lesson(Path("07-tiny.md"), checks=checks.REGISTRY.keys(), text=text)


def error_of(text: str) -> LessonError:
    with pytest.raises(LessonError) as caught:
        parse(text)
    return caught.value


def test_the_table_is_generated_from_a_named_commit() -> None:
    assert len(TABLE.commit) == 40 and int(TABLE.commit, 16)
    assert TABLE.ordered[:4] == ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
    assert "2026-07-28" in TABLE.ordered
    assert TABLE.heading("2025-11-25", "basic/lifecycle", "version-negotiation") == "Version Negotiation"
    # Anchors as the spec site makes them (checked against the spec's own links).
    assert TABLE.heading("2025-06-18", "basic", "meta") == "_meta"
    assert TABLE.heading("2026-07-28", "basic/patterns/mrtr", "server-requirements-basic-workflow")


def test_every_ref_in_the_course_names_a_section_of_each_revision_it_claims() -> None:
    claims = CATALOG.claims()
    assert len(claims) >= 60
    for step, claim in claims:
        ref = claim.ref
        for revision in ref.revisions:
            assert TABLE.heading(revision, ref.page, ref.anchor), f"{step.slug}: {ref.section} in {revision}"
        # The revision's overview page (`index`) is the revision's own address.
        page = "" if ref.page == "index" else f"/{ref.page}"
        assert ref.url.startswith(f"https://modelcontextprotocol.io/specification/{ref.revisions[-1]}{page}")
        assert claim.sentence.strip(), f"{step.slug}:{claim.line}: a ref with no claim beside it"


def test_a_ref_renders_as_a_link_to_the_section() -> None:
    lesson = parse(LESSON)
    step = lesson.steps[0]
    html = BeautifulSoup("".join(str(p.html) for p in step.parts if p.html), "html.parser")
    link = html.select_one("a.spec-ref")
    assert link["href"] == "https://modelcontextprotocol.io/specification/2025-11-25/basic#requests"
    assert "Requests" in link.get_text()
    assert html.select_one("code").get_text() == "[spec not a ref]"  # code is not a ref
    assert [(c.line, c.ref.section, c.ref.revisions) for c in step.claims] == [
        (12, "basic#requests", ("2025-11-25",)),
        (21, "basic/lifecycle#version-negotiation", ("2025-06-18", "2025-11-25")),
    ]
    assert step.claims[0].sentence == "A request id is new for each request"


@pytest.mark.parametrize(
    ("ref", "line", "message"),
    [
        ("[spec 2025-11-25 basic#no-such-section]", 12, "has no section #no-such-section"),
        ("[spec 2025-11-25 server/nowhere]", 12, "has no page 'server/nowhere'"),
        ("[spec 2024-10-07 basic#requests]", 12, "no revision 2024-10-07"),
        ("[spec basic#requests]", 12, "write [spec <revision> <page>#<anchor>]"),
        # the page exists in 2025-11-25 but not in 2026-07-28, where lifecycle is gone
        ("[spec 2025-11-25.. basic/lifecycle#shutdown]", 12, "2026-07-28 has no page 'basic/lifecycle'"),
        ("[spec 2025-11-25..2025-03-26 basic#requests]", 12, "runs backwards"),
    ],
)
def test_a_bad_ref_is_refused_with_its_file_and_line(ref: str, line: int, message: str) -> None:
    error = error_of(LESSON.replace("[spec 2025-11-25 basic#requests]", ref))
    assert (error.path.name, error.line) == ("07-tiny.md", line)
    assert message in error.message


def test_a_bad_ref_in_a_quiz_is_refused_with_its_line() -> None:
    error = error_of(LESSON.replace("version-negotiation]", "versions]"))
    assert (error.line, "has no section #versions" in error.message) == (21, True)


def test_a_ref_in_a_step_title_is_refused() -> None:
    error = error_of(LESSON.replace("## First step {#first}", "## First [spec 2025-11-25 basic] {#first}"))
    assert (error.line, "not in a step title" in error.message) == (7, True)


def test_ranges_cover_every_revision_between() -> None:
    ref = parse_ref("2024-11-05..2025-06-18 basic/lifecycle#initialization")
    assert ref.revisions == ("2024-11-05", "2025-03-26", "2025-06-18")
    assert ref.span == "2024-11-05 to 2025-06-18"
    newest = parse_ref("2026-07-28.. server/discover")
    assert newest.revisions == (TABLE.ordered[-1],) and newest.anchor is None
    table = SpecSections("0" * 40, {"2025-11-25": {"index": {"title": "Overview", "sections": {}}}})
    assert (
        parse_ref("2025-11-25 index", table).url == "https://modelcontextprotocol.io/specification/2025-11-25"
    )


@pytest.fixture
def client(app_in_process) -> Iterator[httpx.Client]:
    with app_in_process.client() as c:
        yield c


def test_the_claims_page_lists_every_ref_with_its_section_step_and_revisions(client: httpx.Client) -> None:
    reply = client.get("/spec")
    assert reply.status_code == 200
    soup = BeautifulSoup(reply.text, "html.parser")
    rows = soup.select("tr[data-claim]")
    claims = CATALOG.claims()
    assert len(rows) == len(claims)
    for row, (step, claim) in zip(rows, claims, strict=True):
        assert row.select_one("a[data-step]")["href"] == step.url
        assert row.select_one("a[data-section]")["href"] == claim.ref.url
        assert row.select_one("[data-revisions]").get_text() == ", ".join(claim.ref.revisions)
    assert TABLE.commit[:12] in soup.select_one("main").get_text()
