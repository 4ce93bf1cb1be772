"""What every step page shows as text: no markup shown as text (escaped tags), no empty example."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from tests.support.lessons import course

CATALOG = course()
# An HTML tag as a learner would see it if markup were escaped into the text.
TAG_AS_TEXT = re.compile(r"</?(?:p|div|pre|code|span|figure|figcaption|strong|em|a|ul|li)(?:\s[^<>]*)?>")


@pytest.mark.parametrize("slug", [step.slug for step in CATALOG.steps()])
def test_a_step_shows_no_markup_as_text_and_no_empty_example(app_in_process, slug: str) -> None:  # noqa: ANN001
    step = CATALOG.step(slug)
    assert step is not None
    reply = app_in_process.get(step.url)
    assert reply.status_code == 200
    soup = BeautifulSoup(reply.text, "html.parser")
    main = soup.select_one("main") or soup
    # A client's set-up is filled in with its URL, and a request's answer (`data-output`) once it comes.
    for block in main.select("pre.code:not([data-snippet]):not([data-output])"):
        assert block.get_text().strip(), f"{slug}: an empty example"
    for editor in main.select("textarea"):
        editor.decompose()  # the console's editor holds JSON as typed, which may hold anything
    shown = main.get_text(" ")
    found = TAG_AS_TEXT.findall(shown)
    assert not found, f"{slug} shows markup as text: {found[:3]}"
