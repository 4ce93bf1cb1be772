"""Every step of the course can be reached from the course map by following links."""

from __future__ import annotations

from urllib.parse import urljoin, urlparse

from bs4 import BeautifulSoup

from tests.support.lessons import course

CATALOG = course()


def test_every_step_is_reachable_from_the_course_map(app_in_process) -> None:
    wanted = {step.url for step in CATALOG.steps()}
    seen: set[str] = set()
    queue = ["/course"]
    with app_in_process.client() as client:
        while queue:
            path = queue.pop()
            if path in seen:
                continue
            seen.add(path)
            page = client.get(path)  # a lesson's address redirects to a step: follow it as a link
            if page.is_redirect:
                queue.append(urlparse(urljoin(app_in_process.base + path, page.headers["location"])).path)
                continue
            assert page.status_code == 200, path
            for link in BeautifulSoup(page.text, "html.parser").select("a[href]"):
                target = urlparse(urljoin(app_in_process.base + path, link["href"]))
                if target.netloc == urlparse(app_in_process.base).netloc and target.path.startswith(
                    "/course"
                ):
                    queue.append(target.path)
    assert wanted - seen == set()


def test_the_course_is_complete() -> None:
    assert len(CATALOG.lessons) >= 8
    steps = list(CATALOG.steps())
    assert len(steps) >= 40
    for lesson in CATALOG.lessons:
        assert lesson.steps[-1].parts[-1].quiz is not None, f"{lesson.slug} ends with a quiz"
        for step in lesson.steps:
            if step.console is not None:  # something reads what the learner does there
                assert step.checks or step.exercise is not None, step.slug
