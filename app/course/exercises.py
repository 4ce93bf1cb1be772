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
passed or failed with a reason in plain words, like a test runner. It speaks to any ServerProcess:
a sandboxed instance in the app, the same for `check-lessons` with the reference solution.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from app.course.render import render_inline
from app.protocol import messages
from app.sandbox.errors import SandboxError
from app.sandbox.process import ServerProcess

# Each test's reply must come within this; a whole run within RUN_LIMIT_S.
REPLY_LIMIT_S = 5.0
RUN_LIMIT_S = 30.0
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
            "progress",
        },
    ),  # fmt: skip
    "read": ({"read"}, {"text", "text_contains", "mime_type", "error_code"}),
    "resource": ({"resource"}, {"name"}),
    "template": ({"template"}, set()),
    "prompt": ({"prompt"}, {"arguments"}),
    "get_prompt": ({"get_prompt"}, {"arguments", "text_contains", "error_code"}),
    "capability": ({"capability"}, {"value"}),
}


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

    @property
    def check_name(self) -> str:
        """The name progress records a passed exercise under (beside the hands-on checks)."""
        return "exercise"


@dataclass
class Outcome:
    title: str
    passed: bool
    reason: str  # in plain words: what was seen, and on failure what was expected

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
        return {"passed": self.passed, "outcomes": [o.to_json() for o in self.outcomes],
                "problem": self.problem, "stderr": self.stderr[-4000:], "seconds": round(self.seconds, 3)}  # fmt: skip


# --- parsing ---------------------------------------------------------------------------------------


def parse(data: Any, *, revision: str | None, solution: str | None, lessons_dir: Path, line: int) -> Exercise:
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
    return Exercise(revision, path, tests, line)


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
    if "notifies" in spec and not (
        isinstance(spec["notifies"], list) and all(isinstance(m, str) for m in spec["notifies"])
    ):
        raise ExerciseError(f"test {n}: `notifies` is a list of notification methods")
    return ExerciseTest(item["title"].strip(), kind, spec)


# --- running ---------------------------------------------------------------------------------------


class _Stop(Exception):
    """The run cannot go on: the server exited, or did not answer in time."""


class _Conversation:
    """One client of the learner's server: ids, replies by id, and the notifications seen meanwhile."""

    def __init__(self, process: ServerProcess, revision: str) -> None:
        self.process = process
        self.revision = revision
        self.next_id = 1
        self.capabilities: dict[str, Any] = {}

    async def open(self) -> None:
        if self.revision == messages.STATELESS_REVISION:
            result, _ = await self.request("server/discover", {})
            self.capabilities = result.get("capabilities") or {}
            return
        message = messages.initialize(
            self._id(), self.revision, client_info={"name": "exercise", "version": "1"}
        )
        reply, _ = await self._exchange(message)
        if "error" in reply:
            raise _Stop(f"the server refused `initialize`: {_error_words(reply['error'])}")
        result = reply.get("result") or {}
        self.capabilities = result.get("capabilities") or {}
        await self._write(messages.initialized())

    async def _write(self, message: dict[str, Any]) -> None:
        try:
            await self.process.write_line(json.dumps(message))
        except SandboxError:  # it exited (a syntax error, a crash at import) before this could be sent
            what = message.get("method") or "a reply"
            raise _Stop(f"the server exited before `{what}` could be sent to it") from None

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    async def request(
        self, method: str, params: dict[str, Any]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(result, notifications seen before it); raises _Failed with the error when it is one."""
        if self.revision == messages.STATELESS_REVISION:
            params = {**params, "_meta": {**params.get("_meta", {}), **messages.envelope()}}
        reply, notes = await self._exchange(messages.request(self._id(), method, params))
        if "error" in reply:
            raise _Failed(reply["error"], notes)
        result = reply.get("result")
        return (result if isinstance(result, dict) else {}), notes

    async def _exchange(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        await self._write(message)
        notes: list[dict[str, Any]] = []
        deadline = time.monotonic() + REPLY_LIMIT_S
        while True:
            try:
                line = await asyncio.wait_for(
                    self.process.read_line(), max(deadline - time.monotonic(), 0.01)
                )
            except TimeoutError:
                raise _Stop(
                    f"the server did not answer `{message['method']}` within {REPLY_LIMIT_S:g} s"
                ) from None
            if line is None:
                raise _Stop(f"the server exited while answering `{message['method']}`")
            try:
                incoming = json.loads(line)
            except ValueError:
                raise _Stop(f"the server wrote a line that is not JSON on stdout: {line[:120]!r} "
                            "(print to stderr, never stdout)") from None  # fmt: skip
            if not isinstance(incoming, dict):
                raise _Stop(f"the server wrote JSON that is not one message: {line[:120]!r}")
            if "method" in incoming and "id" in incoming:  # a request of its own: we offer nothing
                refusal = {"jsonrpc": "2.0", "id": incoming["id"],
                           "error": {"code": -32601, "message": "the exercise client offers no features"}}  # fmt: skip
                await self._write(refusal)
            elif "method" in incoming:
                notes.append(incoming)
            elif incoming.get("id") == message["id"]:
                return incoming, notes


class _Failed(Exception):
    def __init__(self, error: Any, notes: list[dict[str, Any]]) -> None:
        self.error = error if isinstance(error, dict) else {}
        self.notes = notes


async def run(exercise: Exercise, process: ServerProcess) -> Report:
    """Run every test against `process` (fresh, started for this run). Never raises for the server's faults."""
    report = Report()
    began = time.monotonic()
    talk = _Conversation(process, exercise.revision)
    try:
        async with asyncio.timeout(RUN_LIMIT_S):
            await talk.open()
            for test in exercise.tests:
                report.outcomes.append(await _run_test(talk, test))
    except _Stop as exc:
        report.problem = str(exc)
    except _Failed as exc:
        report.problem = f"the server refused to open the conversation: {_error_words(exc.error)}"
    except TimeoutError:
        report.problem = f"the exercise took longer than {RUN_LIMIT_S:g} s"
    report.seconds = time.monotonic() - began
    if report.problem is not None:
        done = {o.title for o in report.outcomes}
        report.outcomes += [Outcome(t.title, False, "not run: " + report.problem)
                            for t in exercise.tests if t.title not in done]  # fmt: skip
    return report


async def _run_test(talk: _Conversation, test: ExerciseTest) -> Outcome:
    check = RUNNERS[test.kind]
    try:
        passed, reason = await check(talk, test.spec)
    except _Failed as exc:
        passed, reason = _expected_error(test.spec, exc.error)
    return Outcome(test.title, passed, reason)


def _expected_error(spec: dict[str, Any], error: dict[str, Any]) -> tuple[bool, str]:
    wanted = spec.get("error_code")
    words = _error_words(error)
    if wanted is not None:
        if error.get("code") == wanted:
            return True, f"the server answered with the protocol error {words}, as it should"
        return False, f"expected the protocol error code {wanted}, got {words}"
    return False, f"the server answered with a protocol error: {words}"


def _error_words(error: dict[str, Any]) -> str:
    return f"{error.get('code')} ({error.get('message', '')})"


async def _list_all(talk: _Conversation, method: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(20):  # a server that pages forever is cut short
        result, _ = await talk.request(method, {"cursor": cursor} if cursor else {})
        items += [item for item in result.get(key) or [] if isinstance(item, dict)]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return items


# A text quoted in a reason is cut here: the reason says what came back, not all of it.
QUOTED_CHARS = 160


def _quoted(text: str) -> str:
    return repr(text) if len(text) <= QUOTED_CHARS else repr(text[:QUOTED_CHARS]) + "…"


def _names(items: list[dict[str, Any]], key: str = "name") -> str:
    names = [f"`{item.get(key)}`" for item in items]
    return ", ".join(names) if names else "none"


async def _tool(talk: _Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    tools = await _list_all(talk, "tools/list", "tools")
    tool = next((t for t in tools if t.get("name") == spec["tool"]), None)
    if tool is None:
        return False, f"tools/list has no tool named `{spec['tool']}` (it has: {_names(tools)})"
    if spec.get("description") and not str(tool.get("description") or "").strip():
        return False, f"`{spec['tool']}` has no description: a model reads it to know when to call the tool"
    for key, field_name in (("input_schema", "inputSchema"), ("output_schema", "outputSchema")):
        if key not in spec:
            continue
        schema = tool.get(field_name)
        if spec[key] is True:
            if not isinstance(schema, dict):
                return False, f"`{spec['tool']}` has no `{field_name}`"
            continue
        problem = _missing(spec[key], schema, field_name)
        if problem:
            return False, f"`{spec['tool']}`: {problem}"
    return True, f"`{spec['tool']}` is listed" + (
        " with the expected schema" if "input_schema" in spec else ""
    )


async def _call(talk: _Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    # A call to a tool that does not exist may come back `isError: true` too (the SDK answers so):
    # a test that expects a tool error must not pass on a server without the tool.
    tools = await _list_all(talk, "tools/list", "tools")
    if not any(t.get("name") == spec["call"] for t in tools):
        return False, f"tools/list has no tool named `{spec['call']}` to call (it has: {_names(tools)})"
    params: dict[str, Any] = {"name": spec["call"], "arguments": spec.get("arguments", {})}
    token = f"exercise-{talk.next_id}"
    if spec.get("progress"):
        params["_meta"] = {"progressToken": token}
    result, notes = await talk.request("tools/call", params)
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the call returned a result"
    texts = [
        c.get("text", "")
        for c in result.get("content") or []
        if isinstance(c, dict) and c.get("type") == "text"
    ]
    shown = " / ".join(_quoted(t) for t in texts) or "no text content"
    is_error = bool(result.get("isError"))
    if "is_error" in spec and is_error != bool(spec["is_error"]):
        if spec["is_error"]:
            return False, f"expected a result with `isError: true`; got a normal result: {shown}"
        return False, f"the call failed (`isError: true`): {shown}"
    if "text" in spec and str(spec["text"]) not in texts:
        return False, f"expected the text {str(spec['text'])!r}; got {shown}"
    if "text_contains" in spec and not any(str(spec["text_contains"]) in t for t in texts):
        return False, f"expected a text containing {str(spec['text_contains'])!r}; got {shown}"
    if "structured" in spec:
        problem = _missing(spec["structured"], result.get("structuredContent"), "structuredContent")
        if problem:
            return False, problem
    seen = [n.get("method") for n in notes]
    for method in spec.get("notifies", []):
        if method not in seen:
            return (
                False,
                f"expected the notification `{method}` during the call; saw {', '.join(map(str, seen)) or 'none'}",
            )
    if spec.get("progress"):
        mine = [n for n in notes if n.get("method") == "notifications/progress"
                and (n.get("params") or {}).get("progressToken") == token]  # fmt: skip
        if not mine:
            return False, "expected `notifications/progress` with the call's progressToken; none came"
    said = f"`{spec['call']}` answered {shown}"
    return True, said + (" with `isError: true`" if is_error else "")


async def _read(talk: _Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    result, _ = await talk.request("resources/read", {"uri": spec["read"]})
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the read returned contents"
    contents = [c for c in result.get("contents") or [] if isinstance(c, dict)]
    texts = [str(c.get("text", "")) for c in contents]
    shown = " / ".join(_quoted(t) for t in texts) or "no text"
    if "text" in spec and str(spec["text"]) not in texts:
        return False, f"expected the text {str(spec['text'])!r}; got {shown}"
    if "text_contains" in spec and not any(str(spec["text_contains"]) in t for t in texts):
        return False, f"expected a text containing {str(spec['text_contains'])!r}; got {shown}"
    if "mime_type" in spec and not any(c.get("mimeType") == spec["mime_type"] for c in contents):
        types = ", ".join(str(c.get("mimeType")) for c in contents) or "none"
        return False, f"expected the mimeType {spec['mime_type']!r}; got {types}"
    return True, f"`{spec['read']}` reads {shown}"


async def _resource(talk: _Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    resources = await _list_all(talk, "resources/list", "resources")
    found = next((r for r in resources if r.get("uri") == spec["resource"]), None)
    if found is None:
        return False, f"resources/list has no `{spec['resource']}` (it has: {_names(resources, 'uri')})"
    if "name" in spec and found.get("name") != spec["name"]:
        return False, f"`{spec['resource']}` is named {found.get('name')!r}, expected {spec['name']!r}"
    return True, f"`{spec['resource']}` is listed"


async def _template(talk: _Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    templates = await _list_all(talk, "resources/templates/list", "resourceTemplates")
    if not any(t.get("uriTemplate") == spec["template"] for t in templates):
        return (
            False,
            f"resources/templates/list has no `{spec['template']}` (it has: {_names(templates, 'uriTemplate')})",
        )
    return True, f"the template `{spec['template']}` is listed"


async def _prompt(talk: _Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    prompts = await _list_all(talk, "prompts/list", "prompts")
    found = next((p for p in prompts if p.get("name") == spec["prompt"]), None)
    if found is None:
        return False, f"prompts/list has no prompt named `{spec['prompt']}` (it has: {_names(prompts)})"
    wanted = spec.get("arguments") or []
    have = [a.get("name") for a in found.get("arguments") or [] if isinstance(a, dict)]
    missing = [name for name in wanted if name not in have]
    if missing:
        return False, f"`{spec['prompt']}` takes no argument named {', '.join(f'`{m}`' for m in missing)}"
    return True, f"`{spec['prompt']}` is listed"


async def _get_prompt(talk: _Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    result, _ = await talk.request(
        "prompts/get", {"name": spec["get_prompt"], "arguments": spec.get("arguments", {})}
    )
    if "error_code" in spec:
        return False, f"expected the protocol error code {spec['error_code']}, but the prompt came back"
    texts = [
        str((m.get("content") or {}).get("text", ""))
        for m in result.get("messages") or []
        if isinstance(m, dict)
    ]
    if "text_contains" in spec and not any(str(spec["text_contains"]) in t for t in texts):
        shown = " / ".join(_quoted(t) for t in texts) or "no messages"
        return False, f"expected a message containing {str(spec['text_contains'])!r}; got {shown}"
    return True, f"`{spec['get_prompt']}` gives {len(texts)} message(s)"


async def _capability(talk: _Conversation, spec: dict[str, Any]) -> tuple[bool, str]:
    value: Any = talk.capabilities
    for part in str(spec["capability"]).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    wanted = spec.get("value", True)
    if wanted is True and value is not None and value is not False:
        return True, f"the server declares `{spec['capability']}`"
    if value == wanted:
        return True, f"`{spec['capability']}` is {json.dumps(value)}"
    return (
        False,
        f"expected the capability `{spec['capability']}` to be {json.dumps(wanted)}; it is {json.dumps(value)}",
    )


RUNNERS: dict[str, Callable[[_Conversation, dict[str, Any]], Any]] = {
    "tool": _tool,
    "call": _call,
    "read": _read,
    "resource": _resource,
    "template": _template,
    "prompt": _prompt,
    "get_prompt": _get_prompt,
    "capability": _capability,
}


def _missing(expected: Any, actual: Any, where: str) -> str:
    """'' when `actual` holds everything `expected` says (objects: at least these keys; lists: these
    items, in any order), else what is missing, in words."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"`{where}` is not an object"
        for key, value in expected.items():
            if key not in actual:
                return f"`{where}` has no `{key}`"
            problem = _missing(value, actual[key], f"{where}.{key}")
            if problem:
                return problem
        return ""
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"`{where}` is not a list"
        for item in expected:
            if not any(not _missing(item, have, where) for have in actual):
                return f"`{where}` does not hold {json.dumps(item)}"
        return ""
    if expected != actual:
        return f"`{where}` is {json.dumps(actual)}, expected {json.dumps(expected)}"
    return ""
