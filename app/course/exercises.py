"""Exercises: a lesson step's test suite for the learner's own server.

A step declares its exercise in a fenced block (docs/authoring.md):

    ```exercise rev=2025-11-25 solution=build/first-tool.py
    - title: lists a tool named `add`
      tool: add
      input_schema: {"required": ["a", "b"]}
    - title: "`add` with 2 and 3 answers 5"
      call: add
      arguments: {"a": 2, "b": 3}
      text: "5"
    ```

The runner opens a conversation with a fresh instance of the learner's server (the handshake, or for
2026-07-28 the `_meta` envelope on every request), runs each test in order, and reports each as
passed or failed with a reason in plain words, like a test runner. It speaks to any `ServerLines`
(app/course/conversation.py): a sandboxed instance in the app and in `check-lessons`, a plain
subprocess in the tests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup
from mcp.server.apps import APP_MIME_TYPE
from mcp.server.apps import EXTENSION_ID as APPS_EXTENSION

from app.course.conversation import Conversation, Failed, ServerLines, Stop, cut
from app.course.exercise_kinds import RUNNERS
from app.course.render import render_inline
from app.protocol import messages
from app.workspace import typescript

log = logging.getLogger(__name__)

# A whole run must end within this (each reply within conversation.REPLY_LIMIT_S).
RUN_LIMIT_S = 30.0
# A reason or a problem is cut here: a report is answered, kept for the instructor, and read by a
# person, whatever the learner's server sent.
REASON_CHARS = 1_000
# What reading a server's answer raises when it is not shaped as MCP says (a list where an object
# goes, a number where a text goes): the server's fault, said in the report, never a 500.
MISSHAPEN = (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError)
# What every kind of test must and may say (besides `title`).
KINDS: dict[str, tuple[set[str], set[str]]] = {
    "tool": ({"tool"}, {"description", "input_schema", "output_schema"}),
    "call": (
        {"call"},
        {
            "arguments",
            "text",
            "text_contains",
            "structured",
            "is_error",
            "error_code",
            "notifies",
            "never_notifies",
            "progress",
            "elicit",
            "elicit_schema",
        },
    ),  # fmt: skip
    "read": ({"read"}, {"text", "text_contains", "mime_type", "error_code"}),
    "resource": ({"resource"}, {"name"}),
    "template": ({"template"}, set()),
    "prompt": ({"prompt"}, {"arguments"}),
    "get_prompt": ({"get_prompt"}, {"arguments", "text_contains", "error_code"}),
    "capability": ({"capability"}, {"value"}),
    "complete": ({"complete"}, {"values_include", "values_exclude", "max_values", "error_code"}),
    "app": ({"app"}, {"resource_uri", "visibility", "html_contains"}),
}
# How a user may answer an elicitation (2025-11-25 client/elicitation, Response Actions).
ELICIT_ACTIONS = ("accept", "decline", "cancel")


class ExerciseError(ValueError):
    """An exercise block is wrong (the parser turns this into a LessonError with file and line)."""


@dataclass(frozen=True)
class ExerciseTest:
    title: str
    kind: str
    spec: dict[str, Any]

    @property
    def title_html(self) -> Markup:
        return render_inline(self.title)


@dataclass(frozen=True)
class Exercise:
    revision: str
    solution: Path  # the reference solution, beside the lesson files
    tests: tuple[ExerciseTest, ...]
    line: int
    # It checks what the Python SDK does where the TypeScript SDK does otherwise (the lesson says how).
    python_only: bool = False

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the run's client declares: `elicitation` (form mode) when a test answers one; MCP Apps
        when a test looks at an app, as a host that renders apps does."""
        declared: dict[str, Any] = {}
        if any("elicit" in test.spec for test in self.tests):
            declared["elicitation"] = {}
        if any(test.kind == "app" for test in self.tests):
            declared["extensions"] = {APPS_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}
        return declared

    @property
    def check_name(self) -> str:
        """The name progress records a passed exercise under (beside the hands-on checks)."""
        return "exercise"


@dataclass
class Outcome:
    title: str
    passed: bool
    reason: str  # in plain words: what was seen, and on failure what was expected

    def __post_init__(self) -> None:
        self.reason = cut(self.reason, REASON_CHARS)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "passed": self.passed, "reason": self.reason}


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    problem: str | None = None  # the run could not finish (the server exited, did not answer, ...)
    stderr: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.problem is None and bool(self.outcomes) and all(o.passed for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        problem = cut(self.problem, REASON_CHARS) if self.problem is not None else None
        return {"passed": self.passed, "outcomes": [o.to_json() for o in self.outcomes],
                "problem": problem, "stderr": self.stderr[-4000:], "seconds": round(self.seconds, 3)}  # fmt: skip


# --- parsing ---------------------------------------------------------------------------------------


def parse(data: Any, *, revision: str | None, solution: str | None, lessons_dir: Path, line: int,
          python_only: bool = False) -> Exercise:  # fmt: skip
    if revision is None:
        raise ExerciseError("say which revision the exercise speaks (rev=2025-11-25)")
    if revision != messages.STATELESS_REVISION and revision not in _handshake_revisions():
        raise ExerciseError(f"unknown revision rev={revision}")
    if not solution:
        raise ExerciseError("name the reference solution beside the lessons (solution=build/NAME.py)")
    path = (lessons_dir / solution).resolve()
    if not path.is_relative_to(lessons_dir.resolve()) or not path.is_file():
        raise ExerciseError(f"no reference solution at {solution} (relative to {lessons_dir})")
    if not isinstance(data, list) or not data:
        raise ExerciseError("```exercise holds a YAML list of tests, each with a title and one kind")
    tests = tuple(_parse_test(item, n) for n, item in enumerate(data, 1))
    if revision == messages.STATELESS_REVISION and any("elicit" in test.spec for test in tests):
        raise ExerciseError(
            f"`elicit` needs a handshake revision: in rev={revision} a server sends no requests of its own"
        )
    return Exercise(revision, path, tests, line, python_only)


def _handshake_revisions() -> tuple[str, ...]:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    return tuple(HANDSHAKE_PROTOCOL_VERSIONS)


def _parse_test(item: Any, n: int) -> ExerciseTest:
    if not isinstance(item, dict) or not isinstance(item.get("title"), str) or not item["title"].strip():
        raise ExerciseError(f"test {n} needs a `title`: what it checks, in plain words")
    kinds = [kind for kind in KINDS if kind in item]
    if len(kinds) != 1:
        raise ExerciseError(
            f"test {n} ({item['title']!r}) names {len(kinds)} kinds; name one of {', '.join(KINDS)}"
        )
    kind = kinds[0]
    required, optional = KINDS[kind]
    unknown = set(item) - required - optional - {"title"}
    if unknown:
        raise ExerciseError(f"test {n} ({kind}) does not take {', '.join(sorted(unknown))}")
    spec = {key: value for key, value in item.items() if key != "title"}
    if "arguments" in spec and kind != "prompt" and not isinstance(spec["arguments"], dict):
        raise ExerciseError(f"test {n}: `arguments` is an object")
    for key in ("notifies", "never_notifies"):
        if key in spec and not (isinstance(spec[key], list) and all(isinstance(m, str) for m in spec[key])):
            raise ExerciseError(f"test {n}: `{key}` is a list of notification methods")
    if "elicit" in spec:
        _check_elicit(spec, n)
    elif "elicit_schema" in spec:
        raise ExerciseError(f"test {n}: `elicit_schema` goes with `elicit` (how the user answers)")
    if kind == "complete":
        _check_complete(spec, n)
    if kind == "app":
        _check_app(spec, n)
    return ExerciseTest(item["title"].strip(), kind, spec)


def _check_elicit(spec: dict[str, Any], n: int) -> None:
    answer = spec["elicit"]
    if (
        not isinstance(answer, dict)
        or answer.get("action") not in ELICIT_ACTIONS
        or set(answer) - {"action", "content"}
    ):
        raise ExerciseError(f'test {n}: `elicit` is the user\'s answer, {{"action": "accept", "content": {{...}}}}, '
                            f'or an action of {", ".join(ELICIT_ACTIONS)} alone')  # fmt: skip
    if (answer["action"] == "accept") != isinstance(answer.get("content"), dict):
        raise ExerciseError(f"test {n}: `elicit` has `content` (an object) with `accept`, and only then")
    if "elicit_schema" in spec and not isinstance(spec["elicit_schema"], dict):
        raise ExerciseError(
            f"test {n}: `elicit_schema` is an object (what the requestedSchema holds at least)"
        )


def _check_app(spec: dict[str, Any], n: int) -> None:
    if not isinstance(spec["app"], str) or not spec["app"]:
        raise ExerciseError(f"test {n}: `app` names the tool that has an app")
    if "resource_uri" in spec and not str(spec["resource_uri"]).startswith("ui://"):
        raise ExerciseError(f"test {n}: `resource_uri` is the app's `ui://` URI")
    visibility = spec.get("visibility", ["model"])
    if not isinstance(visibility, list) or not visibility or not set(visibility) <= {"model", "app"}:
        raise ExerciseError(f"test {n}: `visibility` lists `model`, `app` or both")


def _check_complete(spec: dict[str, Any], n: int) -> None:
    params = spec["complete"]
    ref = params.get("ref") if isinstance(params, dict) else None
    argument = params.get("argument") if isinstance(params, dict) else None
    named = isinstance(ref, dict) and (
        (ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str))
        or (ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str))
    )
    if (
        not named
        or not isinstance(argument, dict)
        or not all(isinstance(argument.get(key), str) for key in ("name", "value"))
    ):
        raise ExerciseError(
            f'test {n}: `complete` holds the request\'s params: {{"ref": {{"type": "ref/prompt", "name": ...}} '
            f'or {{"type": "ref/resource", "uri": ...}}, "argument": {{"name": ..., "value": ...}}}}'
        )
    unknown = set(params) - {"ref", "argument", "context"}
    context = params.get("context", {"arguments": {}})
    if unknown or not isinstance(context, dict) or not isinstance(context.get("arguments"), dict):
        raise ExerciseError(f"test {n}: `complete` takes `ref`, `argument` and `context` "
                            '({"arguments": {NAME: VALUE}}), nothing else')  # fmt: skip
    for key in ("values_include", "values_exclude"):
        if key in spec and not (isinstance(spec[key], list) and all(isinstance(v, str) for v in spec[key])):
            raise ExerciseError(f"test {n}: `{key}` is a list of values (strings)")
    limit = spec.get("max_values", 0)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise ExerciseError(f"test {n}: `max_values` is a whole number")


# --- running ---------------------------------------------------------------------------------------


async def run(exercise: Exercise, server: ServerLines, *, gone: type[Exception]) -> Report:
    """Run every test against `server` (fresh, started for this run), whose `write_line` raises `gone`
    once it has exited. Never raises for the server's faults."""
    report = Report()
    began = time.monotonic()
    talk = Conversation(server, exercise.revision, gone, client_capabilities=exercise.client_capabilities)
    try:
        async with asyncio.timeout(RUN_LIMIT_S):
            await talk.open()
            for test in exercise.tests:
                report.outcomes.append(await _run_test(talk, test))
    except Stop as exc:
        report.problem = str(exc)
    except Failed as exc:
        report.problem = f"the server refused to open the conversation: {exc.words}"
    except TimeoutError:
        report.problem = f"the exercise took longer than {RUN_LIMIT_S:g} s"
    except MISSHAPEN as exc:  # opening: an answer to initialize shaped as no MCP answer is
        log.info("exercise run: the server's answer could not be read", exc_info=True)
        report.problem = f"the server's answer could not be read as MCP shapes it ({type(exc).__name__})"
    report.seconds = time.monotonic() - began
    if report.problem is not None:
        done = {o.title for o in report.outcomes}
        report.outcomes += [Outcome(t.title, False, "not run: " + report.problem)
                            for t in exercise.tests if t.title not in done]  # fmt: skip
    return report


async def _run_test(talk: Conversation, test: ExerciseTest) -> Outcome:
    check = RUNNERS[test.kind]
    try:
        passed, reason = await check(talk, test.spec)
    except Failed as exc:
        passed, reason = _expected_error(test.spec, exc)
    except MISSHAPEN as exc:
        log.info("exercise test %r: the server's answer could not be read", test.title, exc_info=True)
        passed, reason = (
            False,
            f"the server's answer could not be read as MCP shapes it ({type(exc).__name__})",
        )
    return Outcome(test.title, passed, reason)


def _expected_error(spec: dict[str, Any], failed: Failed) -> tuple[bool, str]:
    wanted = spec.get("error_code")
    words = failed.words
    if wanted is not None:
        if failed.error.get("code") == wanted:
            return True, f"the server answered with the protocol error {words}, as it should"
        return False, f"expected the protocol error code {wanted}, got {words}"
    return False, f"the server answered with a protocol error: {words}"


def not_for_typescript(exercise: Exercise) -> str | None:
    """Why a learner who writes TypeScript cannot take this exercise yet, or None when they can: the
    TypeScript SDK serves protocol revisions up to typescript.SDK_NEWEST_REVISION."""
    if exercise.python_only:
        return (
            "this exercise checks what the Python SDK does, and the TypeScript SDK does otherwise (the text "
            "above says how): switch your server to Python for this step, or read on"
        )
    if exercise.revision <= typescript.SDK_NEWEST_REVISION:  # revisions are dates: as text, in time order
        return None
    return (
        f"this exercise speaks protocol revision {exercise.revision}, which the TypeScript SDK "
        f"({typescript.SDK_VERSION}) does not serve yet (its newest is {typescript.SDK_NEWEST_REVISION}): "
        "switch your server to Python for this step, or read on"
    )
