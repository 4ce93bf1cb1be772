"""The host figure reads every page it means to, and reports both readings."""

from __future__ import annotations

import mmap

from bench.host import read_pages, touch_cost


def test_every_page_is_read_once() -> None:
    buf = mmap.mmap(-1, 8 * mmap.PAGESIZE)
    for i in range(8):
        buf[i * mmap.PAGESIZE] = 1
    buf[3 * mmap.PAGESIZE + 1] = 1  # not at a page's start: not read
    _, seen = read_pages(buf, 8)
    assert seen == 8


def test_the_figure_has_a_hot_and_a_paused_reading_of_every_sample() -> None:
    figures = touch_cost(pages=16, pause_s=0.001, samples=3)
    assert figures["hot_ms"]["n"] == figures["after_pause_ms"]["n"] == 3
    assert figures["hot_ms"]["p50"] > 0 and figures["after_pause_ms"]["p50"] > 0
