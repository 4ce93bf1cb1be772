"""Course pages through the app built in process (tests/support/inprocess.py), asserted through selectors."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from bs4 import BeautifulSoup

from app.course.models import Step
from tests.support.lessons import course

CATALOG = course()
LESSON = CATALOG.lesson("initialize-handshake")
assert LESSON is not None and len(LESSON.steps) >= 3
# Pages are asserted through what the catalog holds, never the lessons' prose: a lesson's
# wording can change without a test noticing, as it should.
FIRST, SECOND, THIRD = LESSON.steps[:3]


def position(step: Step) -> str:
    return f"Lesson {step.lesson_number}, step {step.index} of {step.total}"


@pytest.fixture
def client(app_in_process) -> Iterator[httpx.Client]:
    """A browser of its own: a fresh learner identity per test (from a first action, as a console's)."""
    with app_in_process.client() as c:
        c.post("/api/identity").raise_for_status()
        yield c


def soup_of(response: httpx.Response) -> BeautifulSoup:
    return BeautifulSoup(response.text, "html.parser")


def page(client: httpx.Client, path: str) -> BeautifulSoup:
    response = client.get(path)
    assert response.status_code == 200, response.text[:500]
    return soup_of(response)


def test_the_course_map_lists_lesson_4_with_its_steps(client: httpx.Client) -> None:
    soup = page(client, "/course")
    lesson = soup.select_one('.map-lesson[data-lesson="initialize-handshake"]')
    assert lesson is not None
    assert lesson.select_one(".map-lesson-title").get_text(strip=True)
    steps = lesson.select(".map-step")
    assert [s["data-step"] for s in steps] == [s.slug for s in LESSON.steps]
    assert {s["data-status"] for s in steps} == {"new"}
    assert [s.select_one("a")["href"] for s in steps] == [s.url for s in LESSON.steps]
    assert len(soup.select(".map-lesson")) == len(CATALOG.lessons)
    assert soup.select_one("a[data-resume]")["href"] == next(CATALOG.steps()).url


def test_a_step_page_has_position_navigation_console_and_checks(client: httpx.Client) -> None:
    step = SECOND
    assert step.console is not None and step.checks
    soup = page(client, step.url)
    assert soup.select_one(".step-position").get_text(strip=True) == position(step)
    assert soup.select_one("article.step h1").get_text(strip=True)
    assert soup.select_one('head link[rel="prev"]')["href"] == FIRST.url
    assert soup.select_one('head link[rel="next"]')["href"] == THIRD.url
    assert soup.select_one('.step-nav a[data-nav="next"]')["href"] == THIRD.url
    console = soup.select_one("section.console")
    assert console["data-server"] == step.console.server
    assert console["data-step"] == step.slug
    assert console.select_one("textarea").get_text() == step.console.message
    assert json.loads(console.select_one("textarea").get_text())["method"] == "initialize"
    assert [li["data-check"] for li in console.select("li.check")] == list(step.checks)
    assert {li["data-passed"] for li in console.select("li.check")} == {"false"}
    current = soup.select_one('.lesson-steps a[aria-current="page"]')
    assert current["href"] == step.url
    assert len(soup.select(".lesson-steps a")) == len(LESSON.steps)


def test_json_examples_are_highlighted_on_the_server_and_hooked_for_try_it(client: httpx.Client) -> None:
    soup = page(client, SECOND.url)
    hooked = soup.select('pre.code[data-lang="json"][data-example]')
    assert hooked, "no JSON example carries the try-it hook"
    assert hooked[0].select("span.nt"), "JSON keys are not highlighted"
    assert json.loads(hooked[0].get_text())["method"] == "initialize"
    # Fragments and invalid examples get no hook.
    assert len(soup.select('pre.code[data-lang="json"]')) > len(hooked)
    assert soup.select("figure.exchange[data-expect]")


def test_step_pages_make_no_outside_requests(client: httpx.Client) -> None:
    for step in LESSON.steps:
        soup = page(client, step.url)
        for tag, attr in (("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src")):
            for element in soup.select(f"{tag}[{attr}]"):
                value = element[attr]
                assert value.startswith("/") and not value.startswith("//"), (step.slug, tag, value)
        assert soup.select_one('script[type="module"][src="/static/course.js"]') is not None
    assert client.get("/static/course.js").status_code == 200


def test_first_and_last_step_navigation(client: httpx.Client) -> None:
    steps = list(CATALOG.steps())
    first = page(client, steps[0].url)
    assert first.select_one('head link[rel="prev"]') is None
    assert first.select_one(".step-position").get_text(strip=True) == position(steps[0])
    shape = page(client, FIRST.url)
    assert shape.select_one(".step-position").get_text(strip=True) == position(FIRST)
    last = page(client, steps[-1].url)
    assert last.select_one('head link[rel="next"]') is None
    assert last.select_one('.step-nav a[data-nav="map"]')["href"] == "/course"


def test_a_lesson_url_goes_to_its_first_step(client: httpx.Client) -> None:
    response = client.get(f"/course/{LESSON.slug}", follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == FIRST.url


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/course/no-such-lesson", "no lesson called"),
        ("/course/no-such-lesson/shape", "no lesson called"),
        ("/course/initialize-handshake/no-such-step", "no step called"),
    ],
)
def test_a_missing_lesson_or_step_is_a_404_page(client: httpx.Client, path: str, words: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    soup = soup_of(response)
    assert soup.select_one("h1").get_text(strip=True) == "404"
    assert words in soup.select_one(".message").get_text()
    assert soup.select_one('a[href="/course"]') is not None


def test_quiz_answers_are_not_in_the_page(client: httpx.Client) -> None:
    for step in LESSON.steps:
        if not step.quizzes:
            continue
        response = client.get(step.url)
        soup = soup_of(response)
        for quiz in step.quizzes:
            form = soup.select_one(f"form#quiz-{quiz.id}")
            assert form is not None and form["method"] == "post"
            inputs = form.select('input[name="choice"]')
            assert [i["value"] for i in inputs] == [c.key for c in quiz.choices]
            for element in form.find_all(True):
                assert not any("correct" in name or "answer" in name for name in element.attrs), element
            for choice in quiz.choices:
                assert str(choice.why) not in response.text, "an explanation is in the page before answering"
            assert not form.select(".quiz-feedback *")


def test_the_quiz_works_as_a_plain_form_with_retry(client: httpx.Client) -> None:
    step = LESSON.step("versions")
    quiz = step.quiz("unknown-revision")  # type: ignore[union-attr]
    right = next(c for c in quiz.choices if c.correct)
    wrong = next(c for c in quiz.choices if not c.correct)
    action = f"{step.url}/quiz/{quiz.id}"  # type: ignore[union-attr]
    response = client.post(action, data={"choice": wrong.key}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].endswith(f"#quiz-{quiz.id}")
    form = page(client, step.url).select_one(f"form#quiz-{quiz.id}")  # type: ignore[union-attr]
    assert "wrong" in form.select_one(".quiz-verdict")["class"]
    assert [li["data-choice"] for li in form.select(".quiz-why li")] == [wrong.key]
    assert form.select_one(f'input[value="{wrong.key}"]').has_attr("checked")
    assert str(right.why) not in str(form)
    client.post(action, data={"choice": right.key})
    form = page(client, step.url).select_one(f"form#quiz-{quiz.id}")  # type: ignore[union-attr]
    assert "right" in form.select_one(".quiz-verdict")["class"]
    progress = client.get("/api/progress").json()
    assert progress["steps"][step.slug]["quizzes"][quiz.id] == {"answered": True, "correct": True}  # type: ignore[union-attr]


def test_the_quiz_api_grades_multiple_choice(client: httpx.Client) -> None:
    step = LESSON.step("capabilities")
    quiz = step.quiz("which-features")  # type: ignore[union-attr]
    url = f"/api/course/{step.slug}/quiz/{quiz.id}"  # type: ignore[union-attr]
    right = [c.key for c in quiz.choices if c.correct]
    partial = client.post(url, json={"choices": right[:1]}).json()
    assert partial["correct"] is False and partial["missed"] == len(right) - 1
    assert [f["choice"] for f in partial["feedback"]] == right[:1]
    assert BeautifulSoup(partial["html"], "html.parser").select_one(".quiz-verdict.wrong") is not None
    full = client.post(url, json={"choices": right}).json()
    assert full["correct"] is True and full["missed"] == 0


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        (
            "/api/course/initialize-handshake/capabilities/quiz/which-features",
            {"choices": []},
            422,
            "Choose an answer",
        ),
        (
            "/api/course/initialize-handshake/capabilities/quiz/which-features",
            {"choices": ["z"]},
            422,
            "no choice 'z'",
        ),
        (
            "/api/course/initialize-handshake/versions/quiz/unknown-revision",
            {"choices": ["a", "b"]},
            422,
            "one answer",
        ),
        (
            "/api/course/initialize-handshake/capabilities/quiz/no-such-quiz",
            {"choices": ["a"]},
            404,
            "no quiz",
        ),
        (
            "/api/course/initialize-handshake/capabilities/quiz/which-features",
            {"choice": "a"},
            422,
            "not valid",
        ),
    ],
)
def test_bad_quiz_answers_get_a_clear_error(
    client: httpx.Client, path: str, body: dict, status: int, words: str
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == status
    assert words in response.json()["error"]["message"]


def test_an_empty_form_answer_is_a_clear_error_page(client: httpx.Client) -> None:
    response = client.post("/course/initialize-handshake/capabilities/quiz/which-features", data={})
    assert response.status_code == 422
    assert "Choose an answer" in soup_of(response).select_one(".message").get_text()


def test_seen_steps_are_marked_on_the_map(client: httpx.Client) -> None:
    page(client, THIRD.url)
    soup = page(client, "/course")
    marks = {li["data-step"]: li["data-status"] for li in soup.select(".map-step")}
    assert marks[THIRD.slug] == "started"
    assert marks[FIRST.slug] == "new"
    assert client.get("/api/progress").json()["steps"][THIRD.slug]["seen"] is True


def test_a_visitor_without_an_identity_reads_the_map_and_is_recorded_nowhere(app_in_process) -> None:
    with app_in_process.client() as visitor:
        page(visitor, THIRD.url)
        marks = {li["data-step"]: li["data-status"] for li in page(visitor, "/course").select(".map-step")}
        assert marks[THIRD.slug] == "new"
        assert not visitor.cookies


def test_display_name_by_form_and_api(client: httpx.Client) -> None:
    response = client.post("/course/name", data={"display_name": "  Ada  "}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/course?named=1"
    assert page(client, "/course").select_one("input#display-name")["value"] == "Ada"
    assert (
        page(client, "/course?named=1").select_one("[data-notice]").get_text() == "Your name is saved: “Ada”."
    )
    assert client.put("/api/progress/name", json={"display_name": "Grace"}).json() == {
        "display_name": "Grace"
    }
    assert client.get("/api/progress").json()["display_name"] == "Grace"
    too_long = client.put("/api/progress/name", json={"display_name": "x" * 41})
    assert too_long.status_code == 422 and "at most 40" in too_long.json()["error"]["message"]
    assert client.put("/api/progress/name", json={"display_name": ""}).json() == {"display_name": None}
