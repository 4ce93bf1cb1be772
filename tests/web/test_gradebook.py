"""The grade book (app/web/gradebook.py), from the instructor's side and from a hostile learner's: one
row per learner, scores that agree with what each learner did, plain numbers only, no cell a
spreadsheet would read as a date or run as a formula. The app is built in process."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator

import pytest

from app.progress.store import LearnerProgress
from app.web.gradebook import scores, step_points
from app.web.learner import COOKIE
from tests.support.appserver import learner_id_of
from tests.support.inprocess import InProcessApp
from tests.support.lessons import course
from tests.web.test_hosting import TOKEN, instructor, learner, make_class

NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
LOOKS_LIKE_A_DATE = re.compile(r"^\d{1,4}[/-]\d{1,2}([/-]\d{1,4})?$")
# Names a learner may choose that a spreadsheet would run, or read as something else.
HOSTILE_NAMES = ['=HYPERLINK("http://evil","x")', "+1+1", "-2", "@SUM(A1)", "\tTabbed", "1/2", "Ada"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessApp]:
    with InProcessApp(tmp_path_factory.mktemp("gradebook"), instructor_token=TOKEN) as site:
        yield site


def test_the_grade_book_agrees_with_what_each_learner_did_and_holds_only_safe_cells(
    site: InProcessApp,
) -> None:
    class_id, code = make_class(site, "Grading")
    catalog = site.state.catalog
    first = catalog.lessons[0]
    step, quiz = next((s, s.quizzes[0]) for s in first.steps if s.quizzes)
    ids = {}
    for n, name in enumerate(HOSTILE_NAMES):
        with learner(site, code, name) as client:
            ids[name] = learner_id_of(client.cookies[COOKIE])
            if n % 2 == 0:  # every other one does a step: seen, a quiz right, its checks passed
                client.get(f"/course/{step.slug}").raise_for_status()
                right = next(c for c in quiz.choices if c.correct).key
                client.post(
                    f"/api/course/{step.slug}/quiz/{quiz.id}", json={"choices": [right]}
                ).raise_for_status()
                for check in step.required_checks:
                    site.state.progress.record_check(ids[name], step.slug, check)
    with instructor(site) as client:
        book = client.get(f"/instructor/classes/{class_id}/gradebook.csv")
        detail = client.get(f"/instructor/classes/{class_id}/progress.csv")
        as_json = client.get(f"/instructor/classes/{class_id}/gradebook.json").json()
    assert book.status_code == 200 and book.headers["content-type"].startswith("text/csv")
    assert book.headers["content-disposition"] == f'attachment; filename="gradebook-{class_id}.csv"'
    join_code = site.state.progress.get_class(class_id).join_code  # a secret: exports travel by email
    for export in (book, detail):
        assert join_code not in export.headers["content-disposition"] and join_code not in export.text
    assert join_code not in json.dumps(as_json) and as_json["class"]["id"] == class_id
    header, *rows = list(csv.reader(io.StringIO(book.text)))
    assert len(rows) == len(HOSTILE_NAMES)  # one row per learner
    assert header[:5] == ["name", "student id", "learner", "steps done", "steps"] and header[-4:] == [
        "course (%)", "points", "points offered", "last activity (UTC)"]  # fmt: skip
    lesson_columns = header[5:-4]
    assert len(lesson_columns) == len(catalog.lessons) and lesson_columns[0].startswith("lesson 1:")
    for row in rows:
        name = row[0]
        assert not name.startswith(("=", "+", "-", "@", "\t", "\r")), name  # a formula is kept as text
        numbers = row[3:-1]
        assert all(NUMBER.match(cell) for cell in numbers), numbers
        assert not any(LOOKS_LIKE_A_DATE.match(cell) for cell in row[2:]), row
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", row[-1]), row[-1]
    # The totals, read back, agree with each learner's own progress.
    by_name = {row[0].removeprefix("'"): row for row in rows}
    for name, learner_id in ids.items():
        progress = site.state.progress.learner(learner_id)
        row = by_name[progress.display_name or ""]  # as stored: the join trims a leading tab
        earned = sum(step_points(s, progress)[0] for s in catalog.steps())
        offered = sum(step_points(s, progress)[1] for s in catalog.steps())
        assert (int(row[-3]), int(row[-2])) == (earned, offered)
        assert float(row[-4]) == round(100 * earned / offered, 1)
        did = HOSTILE_NAMES.index(name) % 2 == 0
        assert (earned == 1 + len(step.required_checks)) if did else earned == 0
        lesson_score = float(row[5])
        first_offered = sum(step_points(s, progress)[1] for s in first.steps)
        assert lesson_score == round(100 * (earned if did else 0) / first_offered, 1)
        assert int(row[3]) == (1 if did else 0)  # the step is done: seen, its quiz right, its checks
    # The JSON says the same, as numbers.
    assert [item["course"] for item in as_json["learners"]] == [float(row[-4]) for row in rows]
    assert as_json["lessons"][0]["slug"] == first.slug and "percent" in as_json["score"]
    # The detail per step: plain numbers too.
    dheader, *drows = list(csv.reader(io.StringIO(detail.text)))
    assert dheader[3:8] == [f"{catalog.lessons[0].steps[0].slug} {k}" for k in
                            ("seen", "quizzes right", "quizzes", "checks passed", "checks")]  # fmt: skip
    for row in drows:
        assert all(NUMBER.match(cell) for cell in row[2:]), row
        assert not row[0].startswith(("=", "+", "-", "@", "\t"))


def test_a_step_scores_quizzes_right_and_checks_passed() -> None:

    catalog = course()
    step = next(s for s in catalog.steps() if s.quizzes and s.required_checks)
    nobody = LearnerProgress("nobody")
    assert step_points(step, nobody) == (0, len(step.quizzes) + len(step.required_checks))
    everything = LearnerProgress("all", checks={step.slug: set(step.required_checks)})
    assert step_points(step, everything)[0] == len(step.required_checks)
    assert scores(catalog, nobody).total == "0" and set(scores(catalog, nobody).lessons) == {"0"}


def test_the_grade_book_is_the_instructors_alone(site: InProcessApp) -> None:
    class_id, code = make_class(site, "Private")
    with learner(site, code, "Mallory") as mallory:
        for what in ("gradebook.csv", "gradebook.json", "progress.csv"):
            assert mallory.get(f"/instructor/classes/{class_id}/{what}").status_code == 401
    with instructor(site) as client:
        assert client.get("/instructor/classes/no-such-class/gradebook.csv").status_code == 404


def _row_of(client, class_id: str, name: str) -> str:  # noqa: ANN001
    from bs4 import BeautifulSoup

    page = BeautifulSoup(client.get(f"/instructor/classes/{class_id}").text, "html.parser")
    link = next(a for a in page.select("a[data-learner-page]") if a.get_text() == name)
    return link["href"].rsplit("/", 1)[1]


def test_the_roster_renames_identifies_messages_and_removes(site: InProcessApp) -> None:
    from bs4 import BeautifulSoup

    class_id, code = make_class(site, "Roster")
    with learner(site, code, "Grace") as grace, instructor(site) as teacher:
        row = _row_of(teacher, class_id, "Grace")
        base = f"/instructor/classes/{class_id}/learners/{row}"
        # A message every member's pages show; too long a one is refused, nothing changed.
        assert (
            teacher.post(
                f"/instructor/classes/{class_id}/message", data={"message": "Break  until 3 pm"}
            ).status_code
            == 303
        )
        assert (
            teacher.post(f"/instructor/classes/{class_id}/message", data={"message": "x" * 281}).status_code
            == 422
        )
        shown = BeautifulSoup(grace.get("/course").text, "html.parser").select_one("[data-class-message]")
        assert shown.get_text() == "From your instructor: Break until 3 pm"
        # A student identifier, even one a spreadsheet would run, reaches the grade book as text.
        assert teacher.post(base + "/student-id", data={"student_id": "=2+3"}).status_code == 303
        assert teacher.post(base + "/name", data={"display_name": "Grace H."}).status_code == 303
        sheet = list(
            csv.reader(io.StringIO(teacher.get(f"/instructor/classes/{class_id}/gradebook.csv").text))
        )
        assert sheet[1][:2] == ["Grace H.", "'=2+3"]
        # Her resume code, shown to the instructor, replaced by a new one: the old opens nothing.
        page = BeautifulSoup(teacher.get(base).text, "html.parser")
        old = page.select_one("[data-resume-code]").get_text()
        assert teacher.post(base + "/resume-code").status_code == 303
        new = BeautifulSoup(teacher.get(base).text, "html.parser").select_one("[data-resume-code]").get_text()
        assert new != old and site.state.progress.learner_for_resume_code(old) is None
        assert site.state.progress.learner_for_resume_code(new) == learner_id_of(grace.cookies[COOKIE])
        # ... and every device signed in before is signed out: Grace comes back with the new code.
        assert BeautifulSoup(grace.get("/course").text, "html.parser").select_one("[data-member-of]") is None
        assert grace.post("/resume", data={"code": new}).status_code == 303
        assert (
            BeautifulSoup(grace.get("/course").text, "html.parser").select_one("[data-member-of]") is not None
        )
        # Removed: the class no longer shows her; her progress is still hers, her pages name no class.
        assert teacher.post(base + "/remove").status_code == 303
        assert teacher.get(base).status_code == 404
        assert "Grace" not in teacher.get(f"/instructor/classes/{class_id}/gradebook.csv").text
        assert BeautifulSoup(grace.get("/course").text, "html.parser").select_one("[data-member-of]") is None


def test_the_roster_is_the_instructors_alone(site: InProcessApp) -> None:
    class_id, code = make_class(site, "Roster, guarded")
    with learner(site, code, "Eve") as eve, instructor(site) as teacher:
        row = _row_of(teacher, class_id, "Eve")
        base = f"/instructor/classes/{class_id}/learners/{row}"
        for path, data in ((f"/instructor/classes/{class_id}/message", {"message": "hi"}), (base + "/name", {}),
                           (base + "/student-id", {}), (base + "/resume-code", {}), (base + "/remove", {})):  # fmt: skip
            assert eve.post(path, data=data).status_code == 401, path
        assert eve.get(base).status_code == 401
        assert eve.get(base + "/follow").status_code == 401
        assert eve.get(f"/api/instructor/classes/{class_id}/learners/{row}/console").status_code == 401
        assert teacher.get(f"/api/instructor/classes/{class_id}/learners/{row}/console").json() == {
            "session": None
        }
        assert teacher.get(f"/instructor/classes/{class_id}/learners/not-a-row").status_code == 404
        other, _ = make_class(site, "Another")
        assert teacher.get(f"/instructor/classes/{other}/learners/{row}").status_code == 404  # not its member


def test_the_grids_filters_mark_stuck_behind_and_inactive_learners() -> None:
    from types import SimpleNamespace

    from app.web.instructor import INACTIVE_AFTER_S, STUCK_AFTER_S, mark_filters

    now = 1_000_000.0
    step_a, step_b = SimpleNamespace(slug="l/a"), SimpleNamespace(slug="l/b")

    def row(done: int, last: float, current: tuple | None, a_status: str = "started") -> dict:
        learner = LearnerProgress("x", current_step=current)
        cells = [{"step": step_a, "status": a_status}, {"step": step_b, "status": "new"}]
        return {"learner": learner, "done": done, "last_seen": last, "cells": cells}

    stuck = row(4, now - 60, ("l/a", now - STUCK_AFTER_S - 1, now - 60))
    fresh = row(4, now - 60, ("l/a", now - STUCK_AFTER_S + 60, now - 60))  # on it 14 minutes: not yet
    finished = row(4, now - 60, ("l/a", now - STUCK_AFTER_S - 1, now - 60), a_status="done")
    away = row(4, now - INACTIVE_AFTER_S, ("l/a", now - 2 * STUCK_AFTER_S, now - INACTIVE_AFTER_S))
    behind = row(1, now - 60, None)
    crashed, crashed_long_ago = row(4, now - 60, None), row(4, now - 60, None)
    crashed["learner"].server_exit = json.dumps(
        {"at": now - 60, "exit": "exited with status 1", "failed": True}
    )
    crashed_long_ago["learner"].server_exit = json.dumps(
        {"at": now - STUCK_AFTER_S - 1, "exit": "killed", "failed": True}
    )
    rows = [stuck, fresh, finished, away, behind, crashed, crashed_long_ago]
    mark_filters(rows, now)
    marks = {key: [bool(r[key]) for r in rows] for key in ("stuck_on", "stuck", "inactive", "behind")}
    assert marks["stuck_on"] == [True, False, False, False, False, False, False]
    assert marks["stuck"] == [True, False, False, False, False, True, False]  # away is inactive instead
    assert marks["inactive"] == [False, False, False, True, False, False, False]
    assert marks["behind"] == [False, False, False, False, True, False, False]  # under half the median (4)


def test_seats_from_a_pasted_roster_give_joiners_their_student_ids(site: InProcessApp) -> None:
    from bs4 import BeautifulSoup

    class_id, code = make_class(site, "Seated")
    with instructor(site) as teacher:
        roster = "Lovelace, Ada, s-1815\nAlan Turing\ts-1912\n\nGrace Hopper\n"
        assert (
            teacher.post(f"/instructor/classes/{class_id}/seats", data={"roster": roster}).status_code == 303
        )
        too_many = "\n".join(f"Learner {n}" for n in range(501))
        refused = teacher.post(f"/instructor/classes/{class_id}/seats", data={"roster": too_many})
        assert refused.status_code == 422 and "500 at most" in refused.text
        long_id = teacher.post(f"/instructor/classes/{class_id}/seats", data={"roster": "Ok, " + "9" * 65})
        assert long_id.status_code == 422 and "it may have 64" in long_id.text
        bad = teacher.post(
            f"/instructor/classes/{class_id}/seats", data={"roster": "Ok\n" + "x" * 41 + ", s-9"}
        )
        assert bad.status_code == 422 and "Line 2" in bad.text and "Nothing was added" in bad.text
        with learner(site, code, "alan  turing"):
            pass
        page = BeautifulSoup(teacher.get(f"/instructor/classes/{class_id}").text, "html.parser")
        seats = {li["data-seat"]: li["data-claimed"] for li in page.select("[data-seats] li")}
        assert seats == {"Lovelace, Ada": "false", "Alan Turing": "true", "Grace Hopper": "false"}
        assert "Ok" not in seats  # the refused roster added nothing
        sheet = list(
            csv.reader(io.StringIO(teacher.get(f"/instructor/classes/{class_id}/gradebook.csv").text))
        )
        assert sheet[1][:2] == ["alan turing", "s-1912"]


def test_a_failing_exercise_shows_in_the_grid_and_on_the_learners_page(site: InProcessApp) -> None:
    from bs4 import BeautifulSoup

    class_id, code = make_class(site, "Failing")
    exercise_step = "your-first-tool/first-tool"
    with learner(site, code, "Barbara") as barbara, instructor(site) as teacher:
        barbara.get(f"/course/{exercise_step}")
        broken = "import requests_that_do_not_exist\n"
        assert barbara.put("/api/workspace/server.py", content=broken).status_code == 200
        report = barbara.post(f"/api/exercises/{exercise_step}").json()
        assert report["passed"] is False
        page = BeautifulSoup(teacher.get(f"/instructor/classes/{class_id}").text, "html.parser")
        cell = page.select_one(f'tr[data-learner] td[data-step="{exercise_step}"]')
        assert "failing" in cell["class"] and cell.get_text(strip=True) == "✗"
        assert page.select_one("tr[data-learner]").has_attr("data-stuck")  # a failing exercise: stuck at once
        row = page.select_one("a[data-learner-page]")["href"]
        detail = BeautifulSoup(teacher.get(row).text, "html.parser")
        run = detail.select_one(f'[data-run="{exercise_step}"]')
        assert run["data-passed"] == "false" and "ModuleNotFoundError" in run.select_one("pre").get_text()
        assert "your-first-tool" in detail.select_one("[data-current-step] a")["href"]


def test_how_a_learners_own_server_last_ended_shows_on_their_page(site: InProcessApp) -> None:
    import json

    from bs4 import BeautifulSoup

    class_id, code = make_class(site, "Crashing")
    with learner(site, code, "Hedy") as hedy, instructor(site) as teacher:
        hedy_id = learner_id_of(hedy.cookies[COOKIE])
        before = site.state.progress.learner(hedy_id)
        report = {"at": 1_800_000_000.0, "exit": "exited with status 1", "reason": "the server exited with status 1",
                  "stderr": "Traceback (most recent call last):\nSystemExit: the config is missing"}  # fmt: skip
        site.state.progress.record_server_exit(hedy_id, json.dumps(report))
        assert site.state.progress.class_learners(class_id)[0].last_seen_at == before.last_seen_at  # not hers
        grid = BeautifulSoup(teacher.get(f"/instructor/classes/{class_id}").text, "html.parser")
        page = BeautifulSoup(teacher.get(grid.select_one("a[data-learner-page]")["href"]).text, "html.parser")
        ended = page.select_one("[data-server-exit]").get_text(" ", strip=True)
        assert "ended by itself 2027-01-15" in ended and "status 1" in ended
        assert "the config is missing" in page.select_one("[data-server-exit] + details pre").get_text()
