"""One lesson file -> Lesson. The format is described in docs/authoring.md.

A lesson is Markdown with YAML front matter; each level-2 heading `## Title {#slug}` starts a
step; special fenced blocks (console, checks, quiz, expect) and JSON examples are parsed by
`blocks`. Markdown-it's token line maps give every error its line in the file.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from markdown_it.token import Token
from markupsafe import Markup

from app import workspace
from app.course import blocks
from app.course.blocks import SLUG, Block, Info
from app.course.exercises import Exercise
from app.course.models import (
    Claim,
    Console,
    EndpointPanel,
    Example,
    Expect,
    Lesson,
    LessonError,
    Part,
    Quiz,
    Step,
)
from app.course.render import MARKDOWN, SPEC_REF_OPEN, render_inline, render_tokens, without_spec_refs
from app.course.spec import RefError, parse_ref
from app.course.test_exercise import TestExercise
from app.demos import MY_SERVER

HEADING_SLUG = re.compile(r"\s*\{#([^}]*)\}\s*$")
FILE_NUMBER = re.compile(r"^(\d+)-")
FRONT_KEYS = {"title", "slug", "order", "summary", "server", "workspace"}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_(\[])")


@dataclass
class _Draft:
    """A step while its tokens are collected."""

    short_slug: str
    title: str
    line: int
    tokens: list[Token] = field(default_factory=list)


def parse_lesson(
    path: Path, *, checks: Collection[str], servers: Collection[str] = (), text: str | None = None
) -> Lesson:
    """Parse one lesson file; `checks` and `servers` are the names a lesson may refer to."""
    text = path.read_text(encoding="utf-8") if text is None else text
    front, body, offset = _split_front_matter(path, text)
    lesson = _lesson_from_front(path, front)
    drafts = _drafts(path, MARKDOWN.parse(body), offset)
    if not drafts:
        raise LessonError(path, offset + 1, "a lesson needs at least one step: a '## Title {#slug}' heading")
    for index, draft in enumerate(drafts, start=1):
        step = _build_step(path, lesson, draft, index, len(drafts), front.get("server"), checks, servers)
        if lesson.step(step.short_slug) is not None:
            raise LessonError(path, draft.line, f"two steps have the slug {step.short_slug!r}")
        lesson.steps.append(step)
    return lesson


def _split_front_matter(path: Path, text: str) -> tuple[dict[str, Any], str, int]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise LessonError(path, 1, "a lesson starts with YAML front matter between two '---' lines")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise LessonError(path, 1, "the front matter has no closing '---' line")
    try:
        front = blocks.load_yaml("".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise LessonError(
            path, 2 + (mark.line if mark else 0), f"front matter is not valid YAML: {exc}"
        ) from None
    if not isinstance(front, dict):
        raise LessonError(path, 2, "the front matter is a YAML mapping (title:, slug:, order:, ...)")
    return front, "".join(lines[end + 1 :]), end + 1


def _lesson_from_front(path: Path, front: dict[str, Any]) -> Lesson:
    unknown = set(front) - FRONT_KEYS
    if unknown:
        raise LessonError(path, 2, f"unknown front matter keys: {', '.join(sorted(unknown))}")
    title, slug, summary = front.get("title"), front.get("slug"), front.get("summary", "")
    if not isinstance(title, str) or not title.strip():
        raise LessonError(path, 2, "the front matter needs a title")
    if not isinstance(slug, str) or not SLUG.match(slug):
        raise LessonError(path, 2, "the front matter needs a slug of lowercase words and dashes")
    if not isinstance(summary, str):
        raise LessonError(path, 2, "summary is a line of text")
    files = front.get("workspace", [])
    files = [files] if isinstance(files, str) else files
    extra = [name for name in workspace.FILES if name != workspace.FILE_NAME]
    if not isinstance(files, list) or not all(name in extra for name in files):
        raise LessonError(
            path, 2, f"workspace: names the files beside server.py its steps show ({', '.join(extra)})"
        )
    return Lesson(slug=slug, number=_number(path, front), title=title.strip(), summary=summary.strip(), path=path,
                  workspace=tuple(files))  # fmt: skip


def _number(path: Path, front: dict[str, Any]) -> int:
    """The lesson's number: `order:` in the front matter, else the file name's prefix (04-...)."""
    match = FILE_NUMBER.match(path.name)
    from_name = int(match.group(1)) if match else None
    order = front.get("order")
    if order is not None and (not isinstance(order, int) or isinstance(order, bool) or order < 1):
        raise LessonError(path, 2, "order is a whole number from 1")
    if order is not None and from_name is not None and order != from_name:
        raise LessonError(path, 2, f"order: {order} disagrees with the file name's number {from_name}")
    number = order if order is not None else from_name
    if number is None:
        raise LessonError(
            path, 2, "number the lesson: `order: 4` in the front matter or a file name like 04-x.md"
        )
    return number


def _drafts(path: Path, tokens: list[Token], offset: int) -> list[_Draft]:
    drafts: list[_Draft] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        line = offset + (token.map[0] if token.map else 0) + 1
        if token.type == "heading_open" and token.tag == "h1":
            raise LessonError(
                path, line, "no level-1 headings: the title is in the front matter, steps are '##'"
            )
        if token.type == "heading_open" and token.tag == "h2":
            content = tokens[i + 1].content
            match = HEADING_SLUG.search(content)
            if not match:
                raise LessonError(path, line, "a step heading needs a stable slug: '## Title {#slug}'")
            if not SLUG.match(match.group(1)):
                raise LessonError(path, line, f"step slug {match.group(1)!r}: use lowercase words and dashes")
            title = content[: match.start()].strip()
            if not title:
                raise LessonError(path, line, "the step heading has no title")
            if SPEC_REF_OPEN in title:
                raise LessonError(
                    path, line, "a [spec ...] ref goes beside a claim in the text, not in a step title"
                )
            drafts.append(_Draft(match.group(1), title, line))
            i += 3  # heading_open, inline, heading_close
            continue
        if not drafts:
            raise LessonError(
                path, line, "text before the first step: start with a '## Title {#slug}' heading"
            )
        if token.type in ("fence", "inline"):
            token.meta["line"] = line
        drafts[-1].tokens.append(token)
        i += 1
    return drafts


def _build_step(
    path: Path,
    lesson: Lesson,
    draft: _Draft,
    index: int,
    total: int,
    front_server: str | None,
    checks: Collection[str],
    servers: Collection[str],
) -> Step:
    console: Console | None = None
    endpoint: EndpointPanel | None = None
    exercise: Exercise | TestExercise | None = None
    check_names: tuple[str, ...] = ()
    quizzes: list[Quiz] = []
    examples: list[Example] = []
    expect_blocks: list[Block] = []
    # The console comes first: expect blocks default to its server.
    fences = [t for t in draft.tokens if t.type == "fence"]
    for token in fences:
        block = Block(path, token.meta["line"], Info.parse(token.info), token.content)
        kind = block.info.language
        if kind in blocks.SPECIAL and token.level != 0:
            raise block.error(f"a ```{kind} block must not be nested in a list or quote")
        if kind == "console":
            if console is not None:
                raise block.error("a step has at most one console")
            console = blocks.parse_console(block, front_server, servers)
        elif kind == "endpoint":
            if endpoint is not None:
                raise block.error("a step has at most one endpoint panel")
            endpoint = blocks.parse_endpoint(block, front_server, servers)
            token.meta["kind"] = "endpoint"
        elif kind in ("exercise", "test-exercise"):
            if exercise is not None:
                raise block.error("a step has at most one exercise")
            exercise = (
                blocks.parse_exercise(block) if kind == "exercise" else blocks.parse_test_exercise(block)
            )
            token.meta["kind"] = "exercise"
        elif kind == "checks":
            if check_names:
                raise block.error("a step has one checks block")
            check_names = blocks.parse_checks(block, checks)
        elif kind == "quiz":
            quiz = blocks.parse_quiz(block)
            if any(q.id == quiz.id for q in quizzes):
                raise block.error(f"two quizzes in this step have the id {quiz.id!r}")
            quizzes.append(quiz)
            token.meta.update(kind="quiz", quiz=quiz)
        elif kind == "expect":
            expect_blocks.append(block)
            token.meta["block"] = block
        elif kind == "python" and "run" in block.info.flags:
            blocks.check_runnable(block)
            token.meta["kind"] = "runnable"
        elif kind == "json":
            example = blocks.parse_example(block)
            examples.append(example)
            token.meta["attrs"] = _example_attrs(example)
        if kind in ("console", "checks"):
            token.meta["kind"] = kind
    default_server = console.server if console else front_server
    expects: list[Expect] = []
    for token in fences:
        if "block" in token.meta:
            expect = blocks.parse_expect(token.meta.pop("block"), default_server, servers)
            expects.append(expect)
            token.meta.update(kind="expect", expect=expect)
    if console is not None and not check_names and exercise is None:
        raise LessonError(path, console.line, "a step with a console needs a hands-on check or an exercise")
    if exercise is not None and (console is None or console.server != MY_SERVER):
        raise LessonError(
            path,
            exercise.line,
            f"an exercise tests the learner's server: add a ```console server={MY_SERVER}",
        )
    if console is not None and endpoint is not None:
        raise LessonError(path, endpoint.line, "a step has a console or an endpoint panel, not both")
    if check_names and console is None and endpoint is None:
        raise LessonError(path, draft.line,
                          "hands-on checks read a transcript: add a ```console (or an ```endpoint panel)")  # fmt: skip
    if endpoint is not None and not check_names:
        raise LessonError(
            path, endpoint.line, "a step with an endpoint panel needs at least one hands-on check"
        )
    return Step(
        slug=f"{lesson.slug}/{draft.short_slug}",
        short_slug=draft.short_slug,
        title=render_inline(draft.title),
        lesson_slug=lesson.slug,
        lesson_number=lesson.number,
        index=index,
        total=total,
        line=draft.line,
        parts=_parts(draft.tokens),
        console=console,
        checks=check_names,
        quizzes=tuple(quizzes),
        examples=tuple(examples),
        expects=tuple(expects),
        claims=_claims(path, draft.tokens) + tuple(c for q in quizzes for c in q.claims),
        exercise=exercise,
        endpoint=endpoint,
    )


def _claims(path: Path, tokens: list[Token]) -> tuple[Claim, ...]:
    """Every `[spec ...]` marker in the step's text, checked against the table of the spec's sections."""
    claims: list[Claim] = []
    for token in tokens:
        if token.type != "inline" or not token.children:
            continue
        first_line = token.meta.get("line") or 0
        searched = 0
        for child in token.children:
            if child.type != "spec_ref":
                continue
            marker = f"{SPEC_REF_OPEN}{child.content}]"
            at = token.content.find(marker, searched)
            searched = at + len(marker) if at >= 0 else searched
            line = first_line + token.content.count("\n", 0, max(at, 0))
            try:
                ref = parse_ref(child.content)
            except RefError as exc:
                raise LessonError(path, line, str(exc)) from None
            claims.append(Claim(ref, line, _sentence(token.content, at)))
    return tuple(claims)


def _sentence(paragraph: str, at: int) -> Markup:
    """The sentence a marker at `at` stands beside: the last one before it (the first, if none)."""
    before = without_spec_refs(paragraph[: max(at, 0)]).strip()
    if not before:
        before = without_spec_refs(paragraph).strip()
    text = " ".join(SENTENCE_END.split(before)[-1].split())
    return render_inline(text)


def _example_attrs(example: Example) -> dict[str, str]:
    """Hooks for the console: a complete client message can be loaded into the editor."""
    if example.fragment or example.invalid or example.reply_to or example.sender != "client" or example.shown:
        return {}
    return {"data-example": "message", "data-rev": example.revision or ""}


def _parts(tokens: list[Token]) -> list[Part]:
    """Split the step's tokens at its quizzes: HTML is rendered now, quizzes per learner."""
    parts: list[Part] = []
    chunk: list[Token] = []
    for token in tokens:
        if token.type == "fence" and token.meta.get("kind") == "quiz":
            if chunk:
                parts.append(Part(html=render_tokens(chunk)))
                chunk = []
            parts.append(Part(quiz=token.meta["quiz"]))
        else:
            chunk.append(token)
    if chunk:
        parts.append(Part(html=render_tokens(chunk)))
    return parts
