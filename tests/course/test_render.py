"""Lesson Markdown to HTML: what render.py promises about images."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from app.course.render import render_inline


def images(markdown: str) -> BeautifulSoup:
    return BeautifulSoup(str(render_inline(markdown)), "html.parser")


def test_an_image_from_our_static_folder_is_shown() -> None:
    soup = images("![the handshake](/static/handshake.svg)")
    img = soup.select_one("img")
    assert img is not None and img["src"] == "/static/handshake.svg" and img["alt"] == "the handshake"


@pytest.mark.parametrize(
    "src",
    [
        "https://example.com/x.png",
        "//example.com/x.png",
        "/static/../app/secret.png",
        "/elsewhere/x.png",
        "data:image/png;base64,AAAA",
        "static/x.png",
    ],
)
def test_an_image_from_anywhere_else_is_only_its_words(src: str) -> None:
    soup = images(f"![a diagram]({src})")
    assert soup.select("img") == []
    assert soup.select_one(".image-refused").get_text() == "a diagram"
