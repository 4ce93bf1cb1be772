"""What a parsed lesson is made of. Built once at start-up by the parser; read-only afterwards."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from markupsafe import Markup

from app.course.spec import SpecRef

if TYPE_CHECKING:
    from app.course.exercises import Exercise
    from app.course.test_exercise import TestExercise


class LessonError(Exception):
    """A lesson file is wrong: says which file and line, so the author can fix it."""

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        super().__init__(f"{self.path}:{line}: {message}")


@dataclass(frozen=True)
class Choice:
    key: str  # "a", "b", ... in file order: what the form posts and progress stores
    text: Markup
    correct: bool
    why: Markup  # shown only once the learner picked this choice


@dataclass(frozen=True)
class Quiz:
    id: str
    question: Markup
    kind: Literal["single", "multiple"]
    choices: tuple[Choice, ...]
    line: int
    claims: tuple[Claim, ...] = ()  # `[spec ...]` markers in the question, choices and explanations

    def choice(self, key: str) -> Choice | None:
        return next((c for c in self.choices if c.key == key), None)


@dataclass(frozen=True)
class Example:
    """A fenced JSON block. Exactly one of: a revision it is valid for, a fragment, deliberately invalid."""

    text: str
    line: int
    revision: str | None
    fragment: bool = False
    invalid: bool = False
    reply_to: str | None = None  # the request method a response example answers
    sender: Literal["client", "server"] = "client"
    shown: bool = False  # only to read: a step that is not ready for it offers no Try-it


@dataclass(frozen=True)
class Expect:
    """A claim about the live server: send `before` then `send`; the reply must contain `reply`.

    `reply` None means the server must send nothing back (checked by a ping that follows).
    `send_line` replaces `send` with an exact line of text (bad input: not JSON, a batch, ...).
    `answers` are the client's replies to requests the server sends meanwhile, by method;
    `along` are messages the server must send between `send` and the reply.
    """

    server: str
    before: tuple[dict[str, Any], ...]
    send: dict[str, Any] | None
    reply: dict[str, Any] | None
    line: int
    revision: str | None
    invalid: bool = False
    caption: str | None = None
    send_line: str | None = None
    answers: tuple[tuple[str, dict[str, Any]], ...] = ()
    along: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Console:
    server: str  # demo server name, e.g. "demo-orders"
    message: str  # the starting JSON, pretty-printed as the learner sees it in the editor
    line: int
    revision: str | None = None
    invalid: bool = False


@dataclass(frozen=True)
class EndpointPanel:
    """A step whose hands-on part is an outside MCP client on the learner's own endpoint URL."""

    server: str
    line: int


@dataclass(frozen=True)
class Claim:
    """A `[spec ...]` marker in a step: the section it names and the sentence it stands beside."""

    ref: SpecRef
    line: int
    sentence: Markup


@dataclass(frozen=True)
class Part:
    """A piece of a step's body: prerendered HTML, or a quiz rendered per learner."""

    html: Markup | None = None
    quiz: Quiz | None = None


@dataclass
class Step:
    slug: str  # "<lesson-slug>/<step-slug>": progress and `check` frames use this
    short_slug: str
    title: Markup
    lesson_slug: str
    lesson_number: int
    index: int  # 1-based position within the lesson
    total: int
    line: int
    parts: list[Part] = field(default_factory=list)
    console: Console | None = None
    checks: tuple[str, ...] = ()
    quizzes: tuple[Quiz, ...] = ()
    examples: tuple[Example, ...] = ()
    expects: tuple[Expect, ...] = ()
    claims: tuple[Claim, ...] = ()
    # A test suite for the learner's own server, or a check of the learner's own tests.
    exercise: Exercise | TestExercise | None = None
    endpoint: EndpointPanel | None = None  # checks read the traffic of the learner's endpoint

    @property
    def url(self) -> str:
        return f"/course/{self.slug}"

    @property
    def required_checks(self) -> tuple[str, ...]:
        """What progress must record for the step to be done: its hands-on checks, and its exercise."""
        return self.checks + (("exercise",) if self.exercise is not None else ())

    def quiz(self, quiz_id: str) -> Quiz | None:
        return next((q for q in self.quizzes if q.id == quiz_id), None)


@dataclass
class Lesson:
    slug: str
    number: int
    title: str
    summary: str
    path: Path
    steps: list[Step] = field(default_factory=list)
    # The workspace's files besides server.py that its steps show (`workspace: test_server.py`).
    workspace: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"/course/{self.slug}"

    def step(self, short_slug: str) -> Step | None:
        return next((s for s in self.steps if s.short_slug == short_slug), None)
