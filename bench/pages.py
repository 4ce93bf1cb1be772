"""A lesson page's server time and weight."""

from __future__ import annotations

import time

import httpx
from bs4 import BeautifulSoup

from bench.stats import summary
from tests.support.appserver import AppProcess


def step_with_console_url(app: AppProcess, client: httpx.Client) -> str:
    """The first step page of lesson 4 (the initialize request, with its console), from the course map."""
    soup = BeautifulSoup(client.get(app.base + "/course").text, "html.parser")
    steps = [a["href"] for a in soup.select("a[href^='/course/']") if a["href"].count("/") == 3]
    chosen = next((h for h in steps if h.startswith("/course/initialize-handshake/")), steps[0])
    return app.base + chosen


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        url = step_with_console_url(app, client)
        times = []
        size = 0
        for _ in range(50 if quick else 200):
            began = time.perf_counter()
            page = client.get(url)
            assert page.status_code == 200, (url, page.status_code)
            times.append((time.perf_counter() - began) * 1000)
            size = len(page.content)
        soup = BeautifulSoup(page.text, "html.parser")
        assets = [
            tag.get("href") or tag.get("src") for tag in soup.select("link[rel=stylesheet], script[src]")
        ]
        assets += _imported_modules(client, app, [a for a in assets if a and a.endswith(".js")])
        outside = [a for a in assets if a and not a.startswith("/")]
        weight = size + sum(
            len(client.get(app.base + a).content) for a in set(assets) if a and a.startswith("/")
        )
    stats = summary(times)
    figures = {
        "url": url,
        "server_ms": stats,
        "html_bytes": size,
        "page_weight_bytes": weight,
        "outside_requests": outside,
    }
    table = [
        ("lesson page time p50 (HTTP, loopback)", f"{stats['p50']:.1f} ms", "-", ""),
        (
            "lesson page weight (HTML + CSS + JS)",
            f"{weight / 1024:.0f} KiB, {len(outside)} outside",
            "-",
            "no outside requests",
        ),
    ]
    return figures, table


def _imported_modules(client: httpx.Client, app: AppProcess, scripts: list[str]) -> list[str]:
    """ES modules the page's scripts import, followed transitively (they load without a build step)."""
    import re

    seen: set[str] = set()
    todo = list(scripts)
    while todo:
        path = todo.pop()
        if path in seen or not path.startswith("/"):
            continue
        seen.add(path)
        base = path.rsplit("/", 1)[0]
        for name in re.findall(r"""from\s+["']\./([\w./-]+)["']""", client.get(app.base + path).text):
            todo.append(f"{base}/{name}")
    return sorted(seen - set(scripts))
