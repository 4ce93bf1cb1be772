"""Exercises over a real uvicorn: a step's tests run against a fresh instance of the
learner's saved server.py, report each test with its reason, and record the step's progress on a pass.

The lessons are a small test course (tests/fixtures/build_lessons), so these tests do not depend on
the wording of the real Build track."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app import workspace
from app.web.learner import COOKIE
from tests.support.inprocess import ServedApp

LESSONS = Path(__file__).resolve().parents[1] / "fixtures" / "build_lessons"
SOLUTION = (LESSONS / "solutions" / "add.py").read_text()
RUN = "/api/exercises/first-tool/add"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with ServedApp(tmp_path_factory.mktemp("exercises"), lessons_dir=str(LESSONS), warm_pool_size=0) as app:
        yield app


def page(app: ServedApp, name: str) -> httpx.Client:
    return app.client(cookies={COOKIE: app.learner_cookie(name)})


def test_the_starter_fails_with_a_reason_for_each_test(app: ServedApp) -> None:
    with page(app, "starter") as browser:
        report = browser.post(RUN).json()
    assert report["passed"] is False and report["problem"] is None
    reasons = [o["reason"] for o in report["outcomes"]]
    assert [o["passed"] for o in report["outcomes"]] == [False, False, False]
    assert reasons[0] == "tools/list has no tool named `add` (it has: none)"
    assert reasons[1] == reasons[2] == "tools/list has no tool named `add` to call (it has: none)"


def test_the_solution_passes_and_the_step_is_done(app: ServedApp) -> None:
    with page(app, "solver") as browser:
        browser.get("/course/first-tool/add")  # seen: a step is done only once seen
        assert browser.put("/api/workspace/server.py", content=SOLUTION).status_code == 200
        report = browser.post(RUN).json()
        progress = browser.get("/api/progress").json()
    assert report["passed"] is True, report
    assert [o["passed"] for o in report["outcomes"]] == [True, True, True]
    assert report["outcomes"][1]["reason"] == "`add` answered '5'"
    assert progress["steps"]["first-tool/add"]["status"] == "done"
    assert progress["steps"]["first-tool/add"]["checks"] == {"exercise": True}


def test_a_wrong_answer_fails_saying_what_came_back(app: ServedApp) -> None:
    wrong = SOLUTION.replace("return a + b", "return a - b")
    with page(app, "wrong") as browser:
        browser.put("/api/workspace/server.py", content=wrong)
        report = browser.post(RUN).json()
    assert [o["passed"] for o in report["outcomes"]] == [True, False, True]
    assert report["outcomes"][1]["reason"] == "expected the text '5'; got '-1'"


def test_a_server_that_crashes_at_import_reports_its_traceback(app: ServedApp) -> None:
    with page(app, "crash") as browser:
        browser.put("/api/workspace/server.py", content="import nosuchmodule\n")
        report = browser.post(RUN).json()
    assert report["passed"] is False
    assert report["problem"].startswith("the server exited")  # before or while `initialize` (a race)
    assert "ModuleNotFoundError" in report["stderr"] and 'server.py", line 1' in report["stderr"]
    # As Python printed it, a line each.
    assert "\nModuleNotFoundError: No module named 'nosuchmodule'" in report["stderr"], report["stderr"]
    assert "    import nosuchmodule\n" in report["stderr"]
    assert all(o["reason"].startswith("not run:") for o in report["outcomes"])


@pytest.mark.slow  # the reply limit, on the real clock
def test_a_server_that_never_serves_is_reported_within_the_reply_limit(app: ServedApp) -> None:
    with page(app, "sleeper") as browser:
        browser.put("/api/workspace/server.py", content="import time\ntime.sleep(3600)\n")
        report = browser.post(RUN).json()
    assert report["problem"] == "the server did not answer `initialize` within 5 s"


def test_a_step_without_an_exercise_is_404(app: ServedApp) -> None:
    with page(app, "lost") as browser:
        reply = browser.post("/api/exercises/first-tool/nope")
    assert reply.status_code == 404 and reply.json()["error"]["message"] == "This step has no exercise."


def test_the_step_page_shows_the_editor_and_the_tests(app: ServedApp) -> None:
    from bs4 import BeautifulSoup

    with page(app, "reader") as browser:
        html = browser.get("/course/first-tool/add").text
    soup = BeautifulSoup(html, "html.parser")
    assert soup.select_one("[data-workspace] textarea#workspace-source-server") is not None
    tests = soup.select("[data-exercise='first-tool/add'] [data-test]")
    assert len(tests) == 3 and tests[0].select_one(".test-title code").text == "add"
    assert soup.select_one(".console")["data-server"] == "my-server"


def test_the_starter_is_what_a_new_learner_runs() -> None:
    assert "MCPServer" in workspace.starter() and workspace.diagnose(workspace.starter()) == []


def test_a_server_that_logs_much_on_stderr_is_not_stalled_by_it(app: ServedApp) -> None:
    noisy = SOLUTION.replace(
        'if __name__ == "__main__":',
        'import sys\nsys.stderr.write("x" * 300_000 + "\\nlast words\\n")\n\nif __name__ == "__main__":',
    )
    with page(app, "noisy") as browser:
        browser.put("/api/workspace/server.py", content=noisy)
        report = browser.post(RUN).json()
    assert report["passed"] is True, report["problem"]
    assert "last words" in report["stderr"] and len(report["stderr"]) <= 16_000  # its end, bounded


@pytest.mark.slow  # a run that waits out the reply limit, on the real clock
def test_a_learner_runs_one_exercise_at_a_time(app: ServedApp) -> None:
    """The exercise budget from the learner's side: two runs at once, one is refused with when to retry."""
    from concurrent.futures import ThreadPoolExecutor

    with page(app, "hasty") as browser:
        browser.put(
            "/api/workspace/server.py", content="import time\ntime.sleep(3600)\n"
        )  # each run takes 5 s
        with ThreadPoolExecutor(2) as pool:
            replies = list(pool.map(lambda _: browser.post(RUN), range(2)))
    assert sorted(r.status_code for r in replies) == [200, 429]
    refused = next(r for r in replies if r.status_code == 429)
    assert "still going" in refused.json()["error"]["message"] and refused.headers["retry-after"]
