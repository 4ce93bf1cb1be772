"""A lesson page's server time and weight."""

from __future__ import annotations

import time

import httpx
from bs4 import BeautifulSoup

from bench.stats import summary
from tests.support.appserver import AppProcess


def first_step_url(app: AppProcess, client: httpx.Client) -> str:
    course = client.get(app.base + "/course")
    soup = BeautifulSoup(course.text, "html.parser")
    link = soup.select_one("a[href^='/course/'][href*='/'][data-step], .course-map a[href^='/course/']")
    return app.base + (link["href"] if link else "/")


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    with httpx.Client(timeout=30) as client:
        url = first_step_url(app, client)
        times = []
        size = 0
        for _ in range(50 if quick else 200):
            began = time.perf_counter()
            page = client.get(url)
            times.append((time.perf_counter() - began) * 1000)
            size = len(page.content)
        soup = BeautifulSoup(page.text, "html.parser")
        assets = [
            tag.get("href") or tag.get("src") for tag in soup.select("link[rel=stylesheet], script[src]")
        ]
        weight = size + sum(len(client.get(app.base + a).content) for a in assets if a and a.startswith("/"))
        home = [client.get(app.base + "/") for _ in range(3)]
        del home
    stats = summary(times)
    figures = {"url": url, "server_ms": stats, "html_bytes": size, "page_weight_bytes": weight}
    table = [
        ("lesson page time p50 (HTTP, loopback)", f"{stats['p50']:.1f} ms", "-", ""),
        ("lesson page weight (HTML + CSS + JS)", f"{weight / 1024:.0f} KiB", "-", "no outside requests"),
    ]
    return figures, table
