"""The special fenced blocks of a lesson: console, checks, quiz, expect, and JSON examples.

Each parse function takes the block's info attributes and body and returns a model, or raises
LessonError naming the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS

from app import workspace
from app.course import exercises, test_exercise
from app.course.exercises import Exercise
from app.course.models import Choice, Claim, Console, EndpointPanel, Example, Expect, LessonError, Quiz
from app.course.render import SPEC_REF_OPEN, pretty_json, render_inline, spec_refs_in, without_spec_refs
from app.course.spec import RefError, parse_ref
from app.course.test_exercise import TestExercise
from app.protocol.revisions import parse_strict_json, validate_message

SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SPECIAL = ("console", "checks", "quiz", "expect", "exercise", "test-exercise", "endpoint")
# The revision a deliberately invalid block without rev= is checked against.
DEFAULT_INVALID_REVISION = HANDSHAKE_PROTOCOL_VERSIONS[-1]
# libyaml's loader where PyYAML was built with it (its wheels are): the same safe subset of YAML, read
# in C. Every start of the app reads every lesson's blocks; the pure-Python loader took half of that.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, by the fastest safe loader this PyYAML has."""
    return yaml.load(text, Loader=_YAML_LOADER)


@dataclass(frozen=True)
class Info:
    """A fence's info string: `json rev=2025-06-18 reply-to=initialize` -> language, attrs, flags."""

    language: str
    attrs: dict[str, str]
    flags: frozenset[str]

    @classmethod
    def parse(cls, info: str) -> Info:
        words = info.split()
        attrs: dict[str, str] = {}
        flags: set[str] = set()
        for word in words[1:]:
            if "=" in word:
                key, value = word.split("=", 1)
                attrs[key] = value
            else:
                flags.add(word)
        return cls(words[0] if words else "", attrs, frozenset(flags))


@dataclass(frozen=True)
class Block:
    """Where a block is (for errors) and what it says."""

    path: Path
    line: int  # 1-based line of the opening fence
    info: Info
    body: str

    def error(self, message: str, offset: int = 0) -> LessonError:
        return LessonError(self.path, self.line + offset, message)

    def only(self, attrs: Collection[str] = (), flags: Collection[str] = ()) -> None:
        for key in self.info.attrs:
            if key not in attrs:
                raise self.error(f"```{self.info.language} does not take {key}=; it takes: {_list(attrs)}")
        for flag in self.info.flags:
            if flag not in flags:
                raise self.error(f"```{self.info.language} does not take '{flag}'; it takes: {_list(flags)}")

    def yaml(self) -> Any:
        try:
            return load_yaml(self.body)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            offset = mark.line + 1 if mark is not None else 0
            raise self.error(f"not valid YAML: {getattr(exc, 'problem', exc)}", offset) from None

    def revision(self) -> tuple[str | None, bool]:
        """The block's rev= and whether it is marked invalid; one of the two is required."""
        rev = self.info.attrs.get("rev")
        invalid = "invalid" in self.info.flags
        if rev is not None and rev not in KNOWN_PROTOCOL_VERSIONS:
            raise self.error(f"unknown revision rev={rev}; known: {', '.join(KNOWN_PROTOCOL_VERSIONS)}")
        if rev is None and not invalid:
            raise self.error("say which revision this message is for (rev=2025-06-18) or mark it invalid")
        return rev, invalid


def _list(items: Collection[str]) -> str:
    return ", ".join(sorted(items)) or "nothing"


def check_message(block: Block, message: Any, rev: str | None, invalid: bool, **kwargs: Any) -> None:
    """A valid message must validate for its revision; one marked invalid must not."""
    if invalid:
        if not validate_message(message, rev or DEFAULT_INVALID_REVISION, **kwargs):
            raise block.error(
                f"marked invalid, but it is a valid message for {rev or DEFAULT_INVALID_REVISION}"
            )
        return
    assert rev is not None
    problems = validate_message(message, rev, **kwargs)
    if problems:
        raise block.error(f"not valid for revision {rev}: {problems[0]}")


def parse_example(block: Block) -> Example:
    block.only(attrs=("rev", "reply-to", "from"), flags=("fragment", "invalid", "shown"))
    info = block.info
    fragment = "fragment" in info.flags
    sender: Literal["client", "server"] = "server" if info.attrs.get("from") == "server" else "client"
    if info.attrs.get("from", "client") not in ("client", "server"):
        raise block.error("from= is client or server")
    if fragment:
        if "invalid" in info.flags or "rev" in info.attrs:
            raise block.error("a fragment is not checked: it takes no rev= and no 'invalid'")
        return Example(block.body, block.line, None, fragment=True)
    rev, invalid = block.revision()
    reply_to = info.attrs.get("reply-to")
    try:
        message = parse_strict_json(block.body)
    except ValueError as exc:
        if invalid:
            return Example(block.body, block.line, rev, invalid=True, reply_to=reply_to, sender=sender)
        raise block.error(f"not valid JSON: {exc} (mark a piece of a message 'fragment')") from None
    check_message(block, message, rev, invalid, reply_to=reply_to, sender=sender)
    return Example(block.body, block.line, rev, invalid=invalid, reply_to=reply_to, sender=sender,
                   shown="shown" in info.flags)  # fmt: skip


def parse_console(block: Block, default_server: str | None, servers: Collection[str]) -> Console:
    block.only(attrs=("server", "rev"), flags=("invalid",))
    server = _server(block, block.info.attrs.get("server", default_server), servers)
    rev, invalid = block.revision()
    try:
        message = parse_strict_json(block.body)
    except ValueError as exc:
        if not invalid:
            raise block.error(f"the starting message is not valid JSON: {exc}") from None
        return Console(server, block.body.rstrip("\n"), block.line, rev, invalid)
    check_message(block, message, rev, invalid)
    return Console(server, pretty_json(message), block.line, rev, invalid)


def parse_checks(block: Block, known: Collection[str]) -> tuple[str, ...]:
    block.only()
    names = block.yaml()
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise block.error("```checks holds a YAML list of check names, e.g. '- initialize-answered'")
    for name in names:
        if name not in known:
            raise block.error(f"no hands-on check named {name!r}; known: {_list(known)}")
    if len(set(names)) != len(names):
        raise block.error("a check is listed twice")
    return tuple(names)


def parse_endpoint(block: Block, default_server: str | None, servers: Collection[str]) -> EndpointPanel:
    """```endpoint server=NAME: the step shows the "Connect your own client" panel for NAME."""
    block.only(attrs=("server",))
    if block.body.strip():
        raise block.error("```endpoint takes no body: the panel is the same on every step")
    return EndpointPanel(_server(block, block.info.attrs.get("server", default_server), servers), block.line)


def parse_exercise(block: Block) -> Exercise:
    """```exercise rev=R solution=solutions/NAME.py [python-only]: `python-only` when the exercise checks
    what the Python SDK does and the TypeScript SDK does otherwise (the text says how)."""
    block.only(attrs=("rev", "solution"), flags=("python-only",))
    lessons_dir = block.path.parent
    try:
        return exercises.parse(block.yaml(), revision=block.info.attrs.get("rev"),
                               solution=block.info.attrs.get("solution"), lessons_dir=lessons_dir,
                               line=block.line, python_only="python-only" in block.info.flags)  # fmt: skip
    except exercises.ExerciseError as exc:
        raise block.error(str(exc)) from None


def parse_test_exercise(block: Block) -> TestExercise:
    block.only(attrs=("solution", "server"))
    try:
        return test_exercise.parse(block.yaml(), solution=block.info.attrs.get("solution"),
                                   server=block.info.attrs.get("server"), lessons_dir=block.path.parent,
                                   line=block.line)  # fmt: skip
    except exercises.ExerciseError as exc:
        raise block.error(str(exc)) from None


QUIZ_KEYS = {"question", "kind", "choices"}
CHOICE_KEYS = {"text", "correct", "why"}


def parse_quiz(block: Block) -> Quiz:
    block.only(attrs=("id",))
    quiz_id = block.info.attrs.get("id", "")
    if not SLUG.match(quiz_id):
        raise block.error("a quiz needs a stable id of lowercase words and dashes: ```quiz id=my-quiz")
    data = block.yaml()
    if not isinstance(data, dict):
        raise block.error("```quiz holds a YAML mapping with question, kind and choices")
    _known_keys(block, data, QUIZ_KEYS, "quiz")
    question, kind, choices = data.get("question"), data.get("kind", "single"), data.get("choices")
    if not isinstance(question, str) or not question.strip():
        raise block.error("the quiz has no question")
    if kind not in ("single", "multiple"):
        raise block.error("kind is single or multiple")
    if not isinstance(choices, list) or len(choices) < 2:
        raise block.error("a quiz needs at least two choices")
    parsed = []
    for n, item in enumerate(choices):
        key = chr(ord("a") + n)
        if not isinstance(item, dict):
            raise block.error(f"choice {key} is not a mapping with text, correct, why")
        _known_keys(block, item, CHOICE_KEYS, f"choice {key}")
        text, correct, why = item.get("text"), item.get("correct", False), item.get("why")
        if not isinstance(text, str) or not isinstance(why, str) or not isinstance(correct, bool):
            raise block.error(f"choice {key} needs text (words), why (words) and correct (true/false)")
        parsed.append(Choice(key, render_inline(text), correct, render_inline(why)))
    right = sum(c.correct for c in parsed)
    if kind == "single" and right != 1:
        raise block.error(f"a single-choice quiz has exactly one correct choice, not {right}")
    if kind == "multiple" and right < 1:
        raise block.error("a multiple-choice quiz needs at least one correct choice")
    texts = [question, *(str(item.get(k, "")) for item in choices for k in ("text", "why"))]
    claims = tuple(_quiz_claim(block, question, ref) for text in texts for ref in spec_refs_in(text))
    return Quiz(quiz_id, render_inline(question), kind, tuple(parsed), block.line, claims)


def _quiz_claim(block: Block, question: str, text: str) -> Claim:
    """A `[spec ...]` marker in a quiz: checked like one in the text; the question is its sentence."""
    marker = f"{SPEC_REF_OPEN}{text}]"
    offset = next((n for n, line in enumerate(block.body.splitlines(), 1) if marker in line), 0)
    try:
        ref = parse_ref(text)
    except RefError as exc:
        raise block.error(str(exc), offset) from None
    return Claim(ref, block.line + offset, render_inline(without_spec_refs(question)))


EXPECT_KEYS = {"before", "send", "send-line", "reply", "caption", "answer", "along"}


def parse_expect(block: Block, default_server: str | None, servers: Collection[str]) -> Expect:
    block.only(attrs=("server", "rev"), flags=("invalid",))
    server = _server(block, block.info.attrs.get("server", default_server), servers)
    rev, invalid = block.revision()
    data = block.yaml()
    if not isinstance(data, dict) or ("send" in data) == ("send-line" in data) or "reply" not in data:
        raise block.error(
            "```expect holds a YAML mapping with send (or send-line) and reply "
            "(and maybe before, answer, along, caption)"
        )
    _known_keys(block, data, EXPECT_KEYS, "expect")
    message: dict[str, Any] | None = None
    send_line: str | None = None
    if "send" in data:
        message = _message(block, data["send"], "send")
        check_message(block, message, rev, invalid)
    else:
        send_line = data["send-line"]
        if not isinstance(send_line, str) or "\n" in send_line or not invalid:
            raise block.error(
                "send-line is one line of text sent exactly as written (bad input): mark the block invalid"
            )
    before = data.get("before") or []
    if not isinstance(before, list):
        raise block.error("before is a list of messages sent first")
    earlier = tuple(_message(block, m, "before") for m in before)
    for m in earlier:
        check_message(block, m, rev or DEFAULT_INVALID_REVISION, False)
    reply = data["reply"]
    if reply in (None, "none"):
        reply = None
    elif isinstance(reply, str):
        reply = _json(block, reply, "reply")
    if reply is not None and not isinstance(reply, dict):
        raise block.error("reply is a JSON object (the parts the reply must contain) or none")
    if reply is not None and message is not None and "id" not in message:
        raise block.error("a notification gets no reply: write reply: none")
    caption = data.get("caption")
    if caption is not None and not isinstance(caption, str):
        raise block.error("caption is a line of text")
    answers = _answers(block, data.get("answer") or {}, rev or DEFAULT_INVALID_REVISION)
    along = data.get("along") or []
    if not isinstance(along, list):
        raise block.error("along is a list of messages the server sends before its reply")
    patterns = tuple(_message(block, m, "along") for m in along)
    return Expect(
        server, earlier, message, reply, block.line, rev, invalid, caption, send_line, answers, patterns
    )


def _answers(block: Block, value: Any, rev: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """`answer:` maps a server request's method to the client's reply: {"result": ...} or {"error": ...}."""
    if not isinstance(value, dict):
        raise block.error(
            'answer maps a method the server asks to the reply, e.g. roots/list: {"result": {...}}'
        )
    answers = []
    for method, body in value.items():
        body = _json(block, body, "answer") if isinstance(body, str) else body
        if not isinstance(body, dict) or len(body) != 1 or not ({"result", "error"} & set(body)):
            raise block.error(f"the answer to {method} is an object with result or error")
        response = {"jsonrpc": "2.0", "id": 1, **body}
        problems = validate_message(response, rev, reply_to=method, sender="client")
        if problems:
            raise block.error(f"the answer to {method} is not valid for revision {rev}: {problems[0]}")
        answers.append((str(method), body))
    return tuple(answers)


def _message(block: Block, value: Any, name: str) -> dict[str, Any]:
    message = _json(block, value, name) if isinstance(value, str) else value
    if not isinstance(message, dict):
        raise block.error(f"{name} must be one JSON-RPC message (a JSON object)")
    return message


def _json(block: Block, text: str, name: str) -> Any:
    try:
        return parse_strict_json(text)
    except ValueError as exc:
        raise block.error(f"{name} is not valid JSON: {exc}") from None


def _server(block: Block, server: str | None, servers: Collection[str]) -> str:
    if server is None:
        raise block.error("say which demo server: server=demo-orders (or `server:` in the front matter)")
    if servers and server not in servers:
        raise block.error(f"no demo server named {server!r}; known: {_list(servers)}")
    return server


def _known_keys(block: Block, data: dict[str, Any], keys: set[str], what: str) -> None:
    unknown = set(data) - keys
    if unknown:
        raise block.error(f"{what} has unknown keys {_list(unknown)}; it takes {_list(keys)}")


def check_runnable(block: Block) -> None:
    """A ```python run``` block: Python that compiles, within the size a run may have (app/web/runs.py).
    Nothing of it runs here: `compile` only parses."""
    if len(block.body.encode("utf-8")) > workspace.MAX_SOURCE_BYTES:
        raise block.error(f"a runnable block holds at most {workspace.MAX_SOURCE_BYTES} bytes")
    try:
        compile(block.body, f"{block.path.name}:{block.line}", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise block.error(f"the runnable block is not valid Python (line {exc.lineno}: {exc.msg})") from exc
