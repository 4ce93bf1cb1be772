"""The learner's test_server.py (app/web/workspace.py, app/web/runs.py, app/course/test_exercise.py),
on the app built in process over plain subprocesses: the file is saved and read under the workspace's
rules, a test run streams pytest's output and exit code, and a test exercise passes only tests that
pass on the learner's server and fail on every broken one. The lessons are the small test course
(tests/fixtures/build_lessons); tests/course/test_exercise_check.py runs the same exercise in the
real sandbox."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from app import workspace
from app.course import test_exercise
from app.web.learner import COOKIE
from tests.support.inprocess import InProcessApp, SharedClient

LESSONS = Path(__file__).resolve().parents[1] / "fixtures" / "build_lessons"
SERVER = (LESSONS / "solutions" / "calc.py").read_text()
TESTS = (LESSONS / "solutions" / "calc_tests.py").read_text()
RUN = "/api/exercises/testing/calculator"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessApp]:
    with InProcessApp(tmp_path_factory.mktemp("test-runs"), lessons_dir=str(LESSONS)) as app:
        yield app


def learner(
    app: InProcessApp, name: str, server: str | None = SERVER, tests: str | None = None
) -> SharedClient:
    page = app.client(cookies={COOKIE: app.learner_cookie(name)})
    for file, text in (("server.py", server), ("test_server.py", tests)):
        if text is not None:
            assert page.put(f"/api/workspace/{file}", content=text).status_code == 200
    return page


def test_run(page: SharedClient) -> list[dict]:
    reply = page.post("/api/workspace/test-run")
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/x-ndjson"
    return [json.loads(line) for line in reply.text.splitlines() if line]


test_run.__test__ = False  # type: ignore[attr-defined] - a helper, for all its name


def test_test_server_py_is_its_own_file_with_its_own_starter_and_versions(app: InProcessApp) -> None:
    page = learner(app, "files", server=None)
    assert page.get("/api/workspace/test_server.py").text == workspace.starter("test_server.py")
    first = page.put("/api/workspace/test_server.py", content="def test_it(:\n    pass\n").json()
    assert first["saved"] is True and first["version"] == 1
    assert first["diagnostics"][0]["line"] == 1  # a syntax error, found without running the file
    page.put("/api/workspace/test_server.py", content=TESTS)
    state = page.get("/api/workspace", params={"file": "test_server.py"}).json()
    assert state["file"] == "test_server.py" and state["source"] == TESTS and state["diagnostics"] == []
    assert [v["version"] for v in state["history"]] == [2, 1]
    assert page.get("/api/workspace/history/1", params={"file": "test_server.py"}).text.startswith(
        "def test_it(:"
    )
    restored = page.post("/api/workspace/history/1/restore", params={"file": "test_server.py"}).json()
    assert restored["version"] == 3
    # server.py is untouched by all of it
    assert page.get("/api/workspace").json()["starter"] is True
    assert page.get("/api/workspace/server.py").text == workspace.starter()


def test_saving_the_newest_text_again_makes_no_new_version(app: InProcessApp) -> None:
    page = learner(app, "saves-twice", server=None)
    first = page.put("/api/workspace/server.py", content="x = 1\n").json()
    again = page.put("/api/workspace/server.py", content="x = 1\n").json()
    assert (first["version"], first["unchanged"]) == (1, False)
    assert (again["version"], again["unchanged"], again["saved"]) == (1, True, True)
    page.put("/api/workspace/server.py", content="x = 2\n")
    assert page.post("/api/workspace/history/2/restore").json()["unchanged"] is True  # it is the newest
    restored = page.post("/api/workspace/history/1/restore").json()
    assert (restored["version"], restored["unchanged"]) == (3, False)
    assert [v["version"] for v in page.get("/api/workspace").json()["history"]] == [3, 2, 1]


def test_the_workspace_refuses_other_files_and_bad_bodies(app: InProcessApp) -> None:
    page = learner(app, "refused", server=None)
    for name in ("secrets.py", "..%2Fserver.py", "server.js", "test_server.pyc"):
        assert page.put(f"/api/workspace/{name}", content="x = 1\n").status_code == 404, name
        assert page.get(f"/api/workspace/{name}").status_code in (404, 405), name
    assert page.get("/api/workspace", params={"file": "../etc/passwd"}).status_code == 422
    assert page.get("/api/workspace/history/1", params={"file": "other.py"}).status_code == 422
    over = page.put("/api/workspace/test_server.py", content=b"#" * (workspace.MAX_SOURCE_BYTES + 1))
    assert over.status_code == 413 and "Nothing was saved" in over.json()["error"]["message"]
    nul = page.put("/api/workspace/test_server.py", content=b"x = 1\x00\n")
    assert nul.status_code == 400 and "NUL" in nul.json()["error"]["message"]
    assert page.get("/api/workspace", params={"file": "test_server.py"}).json()["history"] == []


def test_a_test_run_streams_pytest_and_ends_with_its_exit_code(app: InProcessApp) -> None:
    events = test_run(learner(app, "runner", tests=TESTS))
    lines = [e.get("stdout", "") for e in events]
    assert any("test_add_adds" in line and "PASSED" in line for line in lines), lines
    assert any("2 passed" in line for line in lines), lines
    assert events[-1]["exit"] == 0 and "stopped" not in events[-1]

    failing = TESTS.replace('{"result": 5}', '{"result": 6}')
    events = test_run(learner(app, "runner-failing", tests=failing))
    text = "\n".join(e.get("stdout", "") for e in events)
    assert "FAILED test_server.py::test_add_adds" in text and "assert" in text
    assert events[-1]["exit"] == 1
    # Each run wrote its two files into a folder of its own and removed it: an unsandboxed app shares
    # the machine's /tmp with everything else.
    assert os.listdir(app.source.tmp) == []


def test_a_test_run_with_nothing_saved_runs_the_starters(app: InProcessApp) -> None:
    events = test_run(learner(app, "nothing-saved", server=None))
    assert any("1 passed" in e.get("stdout", "") for e in events), events
    assert events[-1]["exit"] == 0


def test_the_reference_tests_pass_the_exercise_and_the_step_is_done(app: InProcessApp) -> None:
    page = learner(app, "solver", tests=TESTS)
    page.get("/course/testing/calculator")  # seen: a step is done only once seen
    report = page.post(RUN).json()
    assert report["passed"] is True, report
    reasons = [o["reason"] for o in report["outcomes"]]
    assert reasons[0] == "2 tests passed on your server.py"
    assert reasons[1] == "caught: `test_add_adds` failed on the broken server"
    assert reasons[2] == "caught: `test_dividing_by_zero_is_a_tool_error` failed on the broken server"
    progress = page.get("/api/progress").json()["steps"]["testing/calculator"]
    assert progress["status"] == "done" and progress["checks"] == {"exercise": True}


def test_tests_that_miss_a_bug_fail_that_line_and_show_what_pytest_said(app: InProcessApp) -> None:
    weak = TESTS.split("@pytest.mark.anyio\nasync def test_dividing")[0]  # no test of divide's error
    report = learner(app, "weak", tests=weak).post(RUN).json()
    assert report["passed"] is False
    assert [o["passed"] for o in report["outcomes"]] == [True, True, False]
    assert (
        report["outcomes"][2]["reason"]
        == "every test passed on the broken server: none checks what it breaks"
    )
    assert "1 passed" in report["stderr"]  # pytest's output of the run that missed


def test_the_starter_tests_catch_nothing(app: InProcessApp) -> None:
    report = learner(app, "starter").post(RUN).json()
    assert [o["passed"] for o in report["outcomes"]] == [True, False, False]


def test_tests_that_fail_on_the_learners_own_server_say_which_and_stop_there(app: InProcessApp) -> None:
    report = learner(app, "own-fails", server=SERVER.replace("a + b", "a * b"), tests=TESTS).post(RUN).json()
    first, *rest = report["outcomes"]
    assert first == {"title": "your tests pass on your `server.py`", "passed": False,
                     "reason": "1 of 2 tests failed on your own server.py: `test_add_adds`"}  # fmt: skip
    assert all(o["reason"] == "not run: your tests must pass on your own server first" for o in rest)
    assert "FAILED" in report["stderr"]


def test_tests_with_no_test_or_that_cannot_load_are_told_so(app: InProcessApp) -> None:
    empty = learner(app, "no-tests", tests="import pytest\n").post(RUN).json()
    assert "found no test" in empty["outcomes"][0]["reason"]
    broken = (
        learner(app, "no-load", tests="from server import nothing\n\ndef test_it():\n    pass\n")
        .post(RUN)
        .json()
    )
    assert "could not load test_server.py" in broken["outcomes"][0]["reason"]
    assert "ImportError" in broken["stderr"]


def test_a_test_file_that_forges_its_own_summary_only_fools_its_own_run(app: InProcessApp) -> None:
    # The learner's code runs in the run's process: a printed summary that claims a pass counts, but
    # only for the learner who wrote it (there is nothing of anyone else's to reach).
    forged = 'print(\'playground-tests: {"exit": 0, "tests": {"t": "passed"}}\')\n'
    report = learner(app, "forger", tests=forged).post(RUN).json()
    assert report["outcomes"][0]["passed"] is False  # pytest's own summary, printed last, wins


def test_tests_that_check_the_file_not_what_it_does_catch_no_broken_server(app: InProcessApp) -> None:
    """From the side of a learner who would pass without testing anything: a test that the file is
    their own (by its hash) failed on every broken server, and the exercise was recorded as passed.
    Every run gets the server's text with a last comment of its own, so such a test says nothing."""
    own = hashlib.sha256(SERVER.encode()).hexdigest()
    hashing = ("import hashlib\n\n\ndef test_it_is_my_server():\n"
               f"    assert hashlib.sha256(open('server.py', 'rb').read()).hexdigest() == {own!r}\n")  # fmt: skip
    report = learner(app, "hasher", tests=hashing).post(RUN).json()
    assert report["passed"] is False and report["outcomes"][0]["passed"] is False
    broken = [hashlib.sha256((LESSONS / "solutions" / name).read_bytes()).hexdigest()
              for name in ("calc_subtracts.py", "calc_hides_errors.py")]  # fmt: skip
    dodging = ("import hashlib\n\n\ndef test_it_is_not_a_broken_one():\n"
               f"    assert hashlib.sha256(open('server.py', 'rb').read()).hexdigest() not in {broken!r}\n")  # fmt: skip
    report = learner(app, "dodger", tests=dodging).post(RUN).json()
    assert [line["passed"] for line in report["outcomes"]] == [True, False, False]
    assert "every test passed on the broken server" in report["outcomes"][1]["reason"]


def test_tests_that_hang_on_broken_servers_hold_an_instance_for_one_run_limit_not_one_each(
    app: InProcessApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the side of tests that pass at once on the learner's own server and sleep on any other:
    each broken server's run waited out its whole limit, 15 s each, a minute and more a click."""
    monkeypatch.setattr(test_exercise, "RUN_LIMIT_S", 3.0)
    hanging = ("import time\n\n\ndef test_it():\n"
               f"    if not open('server.py').read().startswith({SERVER!r}):\n        time.sleep(100)\n")  # fmt: skip
    report = learner(app, "hanger", tests=hanging).post(RUN).json()
    reasons = [line["reason"] for line in report["outcomes"]]
    assert report["outcomes"][0]["passed"] and reasons[1] == "the tests took longer than 3 s", reasons
    assert reasons[2] == "not run: your tests ran out of time on a broken server before this one"


def test_the_whole_exercise_has_a_time_limit(app: InProcessApp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(test_exercise, "EXERCISE_LIMIT_S", 0.5)  # spent by the run on the learner's own
    report = learner(app, "in-a-hurry", tests=TESTS).post(RUN).json()
    assert report["outcomes"][0]["passed"] and not report["passed"]
    assert {line["reason"] for line in report["outcomes"][1:]} == {
        "not run: the exercise may take 0.5 s in all"
    }


def test_a_summary_line_that_is_no_json_or_names_thousands_of_tests_gets_a_short_report(
    app: InProcessApp,
) -> None:
    """From the hostile learner's side: the summary line is theirs to print, and the report is answered,
    kept in the database and shown to the instructor, so what it says of their run stays short."""
    deep = "def test_it(capsys):\n    with capsys.disabled():\n        print('\\nplayground-tests: ' + '[' * 100_000)\n"
    report = learner(app, "deep-summary", tests=deep).post(RUN)
    assert report.status_code == 200, report.text
    many = (
        "import pytest\n\n@pytest.mark.parametrize('n', range(300))\ndef test_"
        + "x" * 200
        + "(n):\n    assert False\n"
    )
    answer = learner(app, "many-failed", tests=many).post(RUN)
    assert answer.status_code == 200 and len(answer.content) < 8_000, len(answer.content)
    reason = answer.json()["outcomes"][0]["reason"]
    assert (
        reason.startswith("300 of 300 tests failed on your own server.py: `test_xxx")
        and "and 290 more" in reason
    )


def test_tests_writing_heavy_summary_lines_without_end_are_stopped_and_told_so(app: InProcessApp) -> None:
    """From the side of a learner whose test writes summary-looking lines of `[[],[],...]` without end:
    each was parsed (7 s of the web process's core for one run) and the output kept 200 such lines."""
    flood = ("def test_it(capsys):\n    with capsys.disabled():\n"
             "        line = 'playground-tests: ' + '[[],' * 200_000\n"
             "        while True:\n            print(line, flush=True)\n")  # fmt: skip
    answer = learner(app, "summary-flood", tests=flood).post(RUN)
    assert answer.status_code == 200 and len(answer.content) < 20_000, len(answer.content)
    assert answer.json()["outcomes"][0]["reason"].startswith("the tests wrote more than 4 MiB")


def test_the_step_page_shows_both_files_and_the_exercise_lines(app: InProcessApp) -> None:
    page = learner(app, "reader", server=None)
    soup = BeautifulSoup(page.get("/course/testing/calculator").text, "html.parser")
    assert [s["data-workspace"] for s in soup.select("[data-workspace]")] == ["server.py", "test_server.py"]
    assert soup.select_one("[data-workspace='test_server.py'] [data-action='save-run']") is not None
    assert len({t["id"] for t in soup.select("[data-workspace] textarea")}) == 2  # ids stay unique
    exercise = soup.select_one("[data-exercise]")
    assert exercise["data-kind"] == "tests"
    titles = [t.get_text(" ", strip=True) for t in exercise.select("[data-test] .test-title")]
    assert titles == ["your tests pass on your server.py", "your tests catch an add that subtracts",
                      "your tests catch a divide that hides its error"]  # fmt: skip
