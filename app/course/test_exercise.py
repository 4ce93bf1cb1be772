"""Test exercises: a step's check of the learner's tests (docs/authoring.md, "Testing exercises").

    ```test-exercise solution=solutions/24-test_server.py server=solutions/24-server.py
    - title: your tests catch an `add` that subtracts
      server: solutions/24-broken-add.py
    ```

The learner's test_server.py runs with pytest (app/workspace/run_tests.py) first beside their own
server.py, where every test must pass, then beside each broken server the step supplies, where at
least one test must fail: tests that pass on a broken server do not test what it breaks. Each run
is a fresh sandboxed instance, which a `TestRuns` gives; this module knows no process.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from markupsafe import Markup

from app import workspace
from app.course.conversation import READ_LIMIT_BYTES, ServerLines, listed
from app.course.exercises import ExerciseError, Outcome, Report
from app.course.render import render_inline
from app.protocol.jsonrpc import MAX_ITEMS, json_items
from app.workspace.run_tests import RESULT_PREFIX

# A run of the tests may take this long: pytest's start, and tests that each open a client in memory.
RUN_LIMIT_S = 15.0
# ... and the whole exercise, every run together: each holds a sandboxed instance, and tests that hang
# on every server but the learner's would otherwise hold one for over a minute a click.
EXERCISE_LIMIT_S = 40.0
# The end of a failing run's output the report keeps, for the learner to read.
OUTPUT_KEPT = 6_000
# What of each output line is kept; a run may write READ_LIMIT_BYTES, as a conversation may: the
# learner's tests may write anything on stdout, and megabyte lines without end (summary lines of
# `[[],[],...]`s above all, each parsed) would take the web process's core for seconds of every run.
# A summary holds at most MAX_ITEMS values.
LINE_KEPT = 2_000
PASS_TITLE = "your tests pass on your `server.py`"


class TestRuns(Protocol):
    """Fresh instances for runs of the learner's tests: each runs `program` (the test runner)."""

    gone: type[Exception]  # what an instance's `write_line` raises once it has exited

    def running(self, program: workspace.Program) -> AbstractAsyncContextManager[ServerLines]: ...


@dataclass(frozen=True)
class Check:
    """One line of the exercise: the learner's tests beside a server (None: the learner's own)."""

    title: str
    server: Path | None

    @property
    def title_html(self) -> Markup:
        return render_inline(self.title)


@dataclass(frozen=True)
class TestExercise:
    solution: Path  # the reference test_server.py, beside the lesson files
    server: Path  # the server the reference tests pass on (the step's server.py)
    broken: tuple[Check, ...]
    line: int

    __test__ = False  # not a pytest class, for all its name

    @property
    def check_name(self) -> str:
        return "exercise"

    @property
    def tests(self) -> tuple[Check, ...]:
        """Every line of the exercise, in the order a run reports them."""
        return (Check(PASS_TITLE, None), *self.broken)


def parse(
    data: Any, *, solution: str | None, server: str | None, lessons_dir: Path, line: int
) -> TestExercise:
    def beside_lessons(path: str | None, what: str) -> Path:
        if not path:
            raise ExerciseError(f"name {what} beside the lessons")
        found = (lessons_dir / path).resolve()
        if not found.is_relative_to(lessons_dir.resolve()) or not found.is_file():
            raise ExerciseError(f"no file at {path} (relative to {lessons_dir})")
        return found

    tests = beside_lessons(solution, "the reference tests (solution=solutions/NAME.py)")
    good = beside_lessons(server, "the server they pass on (server=solutions/NAME.py)")
    if not isinstance(data, list) or not data:
        raise ExerciseError("```test-exercise holds a YAML list of broken servers, each with a title")
    broken = []
    for n, item in enumerate(data, 1):
        if not isinstance(item, dict) or set(item) != {"title", "server"} or not str(item["title"]).strip():
            raise ExerciseError(f"broken server {n} has a `title` (what it breaks) and a `server` (its file)")
        broken.append(
            Check(str(item["title"]).strip(), beside_lessons(str(item["server"]), f"broken server {n}"))
        )
    return TestExercise(tests, good, tuple(broken), line)


# --- running ---------------------------------------------------------------------------------------


@dataclass
class TestRun:
    """What one run of the tests said: pytest's exit code, each test's outcome, and its output."""

    exit: int | None  # None: the run gave no summary (it was stopped, or crashed)
    tests: dict[str, str]
    output: list[str]
    problem: str | None = None
    timed_out: bool = False

    __test__ = False

    def failed_tests(self) -> list[str]:
        return [name for name, outcome in self.tests.items() if outcome in ("failed", "error")]


async def run_once(runs: TestRuns, server: str, tests: str, limit_s: float) -> TestRun:
    """The learner's tests beside `server`, in a fresh instance; never raises for the code's faults."""
    output: list[str] = []
    summary: dict[str, Any] | None = None
    read = 0
    try:
        async with (
            asyncio.timeout(limit_s),
            runs.running(workspace.Program.python(workspace.test_runner())) as process,
        ):
            await process.write_line(workspace.test_run_input(server, tests))
            while (line := await process.read_line()) is not None:
                read += len(line)
                if read > READ_LIMIT_BYTES:
                    return TestRun(
                        None, {}, output, f"the tests wrote more than {READ_LIMIT_BYTES // 2**20} MiB"
                    )
                if line.startswith(RESULT_PREFIX):
                    summary = _summary(line[len(RESULT_PREFIX) :])
                else:
                    output.append(line[:LINE_KEPT])
                    del output[:-200]  # the end is what says what failed
    except TimeoutError:
        return TestRun(None, {}, output, f"the tests took longer than {limit_s:.0f} s", timed_out=True)
    except runs.gone:
        pass  # it exited before reading its files: the output says why
    if summary is None:
        return TestRun(None, {}, output, "the test run ended without pytest's summary")
    return TestRun(summary["exit"], summary["tests"], output)


def _summary(text: str) -> dict[str, Any] | None:
    if json_items(text, MAX_ITEMS) > MAX_ITEMS:
        return None  # not the runner's (a name and an outcome a test), and costly to parse
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # the learner's code may print anything on that line
        return None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("exit"), int)
        or not isinstance(value.get("tests"), dict)
    ):
        return None
    return {"exit": value["exit"], "tests": {str(k): str(v) for k, v in value["tests"].items()}}


def _short(nodeid: str) -> str:
    """`test_server.py::test_add[asyncio]` as the learner wrote it: `test_add` (`test_add[2-3]` when
    parametrized)."""
    name = nodeid.split("::")[-1]
    return name.removesuffix("[asyncio]").replace("[asyncio-", "[")  # the anyio backend, always asyncio here


def _copy(server: str) -> str:
    """A server's text as a run gets it: the same code, with a last comment that differs each run.
    Tests that only compare the file with the learner's own (a hash of it) then fail on their own
    server too, as they fail on every broken one: they test the text, not the behaviour."""
    return server + ("" if server.endswith("\n") or not server else "\n") + f"# run {secrets.token_hex(4)}\n"


def judge_own(run: TestRun) -> Outcome:
    if run.problem:
        return Outcome(PASS_TITLE, False, run.problem)
    counts = f"{len(run.tests)} test{'s' if len(run.tests) != 1 else ''}"
    if run.exit == 0 and run.tests:
        return Outcome(PASS_TITLE, True, f"{counts} passed on your server.py")
    if run.exit == 2:
        return Outcome(PASS_TITLE, False, _not_run_words(run.exit))
    if run.exit == 5 or not run.tests:
        return Outcome(PASS_TITLE, False, "pytest found no test in test_server.py: name each one `test_...`")
    failed = run.failed_tests()
    if failed:
        names = listed([_short(n) for n in failed])
        return Outcome(PASS_TITLE, False, f"{len(failed)} of {counts} failed on your own server.py: {names}")
    return Outcome(PASS_TITLE, False, _not_run_words(run.exit))


def _not_run_words(code: int | None) -> str:
    if code == 2:
        return (
            "pytest could not load test_server.py (an import or a syntax error?): its output below says where"
        )
    return f"pytest ended with exit code {code}: its output below says why"


def judge_broken(check: Check, run: TestRun) -> Outcome:
    if run.problem:
        return Outcome(check.title, False, run.problem)
    failed = run.failed_tests()
    if run.exit == 1 and failed:
        names = listed([_short(n) for n in failed])
        return Outcome(check.title, True, f"caught: {names} failed on the broken server")
    if run.exit == 0:
        return Outcome(
            check.title, False, "every test passed on the broken server: none checks what it breaks"
        )
    return Outcome(
        check.title,
        False,
        f"pytest ended with exit code {run.exit} on the broken server, not with a failed test",
    )


async def run(exercise: TestExercise, runs: TestRuns, *, server: str, tests: str,
              read: Callable[[Path], str] = lambda path: path.read_text(encoding="utf-8")) -> Report:  # fmt: skip
    """The learner's tests beside their server, then, if they pass there, beside each broken one (a
    suite that fails on its own server says nothing of broken ones)."""
    report = Report()
    began = time.monotonic()
    own = await run_once(runs, _copy(server), tests, RUN_LIMIT_S)
    report.outcomes.append(judge_own(own))
    shown = own
    if report.outcomes[0].passed:
        stopped: str | None = None  # why the lines left are not run
        for check in exercise.broken:
            assert check.server is not None
            left = began + EXERCISE_LIMIT_S - time.monotonic()
            if stopped is None and left < 1:
                stopped = f"not run: the exercise may take {EXERCISE_LIMIT_S:g} s in all"
            if stopped is not None:
                report.outcomes.append(Outcome(check.title, False, stopped))
                continue
            attempt = await run_once(runs, _copy(read(check.server)), tests, min(RUN_LIMIT_S, left))
            if attempt.timed_out and left < RUN_LIMIT_S:  # the exercise's time ran out, not the run's
                attempt.problem = (
                    f"the exercise may take {EXERCISE_LIMIT_S:g} s in all: they ran out in this run"
                )
            report.outcomes.append(judge_broken(check, attempt))
            if not report.outcomes[-1].passed and shown is own:
                shown = attempt  # the first broken server the tests miss: its output says what ran
            if attempt.timed_out:
                stopped = "not run: your tests ran out of time on a broken server before this one"
    else:
        report.outcomes += [Outcome(c.title, False, "not run: your tests must pass on your own server first")
                            for c in exercise.broken]  # fmt: skip
    if not report.passed:
        report.stderr = "\n".join(shown.output)[-OUTPUT_KEPT:]
    report.seconds = time.monotonic() - began
    return report
