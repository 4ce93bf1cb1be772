"""The spec's sections, and a lesson's references to them.

A lesson names the section behind a claim inline: `[spec 2025-11-25 basic/lifecycle#version-negotiation]`.
The revision may be a range, `2025-03-26..2025-11-25` (both ends included), or open-ended,
`2025-06-18..` (through the newest revision we know); the section must exist in every revision the
range covers. The anchor may be left out to name a whole page. Sections come from
`spec_sections.json`, which `scripts/spec_sections.py` generates from the spec repository at a named
commit; nothing here reaches the network.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SECTIONS_FILE = Path(__file__).with_name("spec_sections.json")
SITE = "https://modelcontextprotocol.io/specification"
# What follows "[spec " in a lesson: revision(s), one space, page, maybe #anchor.
REF = re.compile(
    r"^(?P<first>\d{4}-\d{2}-\d{2})(?P<range>\.\.(?P<last>\d{4}-\d{2}-\d{2})?)?"
    r" (?P<page>[a-z0-9_/-]+)(?:#(?P<anchor>[^\s#]+))?$"
)


class RefError(ValueError):
    """A ref that names no section of the table; the message says what is wrong."""


@dataclass(frozen=True)
class SpecSections:
    """The generated table: per revision, per page, its title and {anchor: heading}."""

    commit: str
    revisions: dict[str, dict[str, dict[str, Any]]]

    @classmethod
    def load(cls, path: Path = SECTIONS_FILE) -> SpecSections:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(commit=data["commit"], revisions=data["revisions"])

    @property
    def ordered(self) -> list[str]:
        return sorted(self.revisions)

    def heading(self, revision: str, page: str, anchor: str | None) -> str | None:
        """The section's heading (the page's title without an anchor), or None when it does not exist."""
        entry = self.revisions.get(revision, {}).get(page)
        if entry is None:
            return None
        return entry["title"] if anchor is None else entry["sections"].get(anchor)


@cache
def sections() -> SpecSections:
    return SpecSections.load()


@dataclass(frozen=True)
class SpecRef:
    """One reference: the revisions the claim holds for (oldest first), a page, maybe an anchor."""

    revisions: tuple[str, ...]
    page: str
    anchor: str | None
    page_title: str
    heading: str

    @property
    def revision(self) -> str:
        """The revision the link opens: the newest one the claim holds for."""
        return self.revisions[-1]

    @property
    def url(self) -> str:
        path = "" if self.page == "index" else f"/{self.page}"
        return f"{SITE}/{self.revision}{path}" + (f"#{self.anchor}" if self.anchor else "")

    @property
    def section(self) -> str:
        """`page#anchor` (or the page alone), as the lesson wrote it."""
        return self.page + (f"#{self.anchor}" if self.anchor else "")

    @property
    def span(self) -> str:
        """The revisions in words: "2025-11-25", or "2025-03-26 to 2025-11-25"."""
        if len(self.revisions) == 1:
            return self.revisions[0]
        return f"{self.revisions[0]} to {self.revisions[-1]}"

    @property
    def label(self) -> str:
        if self.anchor is None or self.heading == self.page_title:
            return self.page_title
        return f"{self.page_title}: {self.heading}"


def parse_ref(text: str, table: SpecSections | None = None) -> SpecRef:
    """The ref written as `[spec <text>]`; RefError when it names no section of `table`."""
    table = table or sections()
    match = REF.match(text.strip())
    if match is None:
        raise RefError(
            f"[spec {text}]: write [spec <revision> <page>#<anchor>], "
            "e.g. [spec 2025-11-25 basic/lifecycle#version-negotiation]"
        )
    known = table.ordered
    first, last = match["first"], match["last"]
    if match["range"] and last is None:
        last = known[-1]
    last = last or first
    for revision in (first, last):
        if revision not in known:
            raise RefError(f"[spec {text}]: no revision {revision}; the spec has {', '.join(known)}")
    if known.index(last) < known.index(first):
        raise RefError(f"[spec {text}]: the range runs backwards")
    revisions = tuple(known[known.index(first) : known.index(last) + 1])
    page, anchor = match["page"], match["anchor"]
    for revision in revisions:
        pages = table.revisions[revision]
        if page not in pages:
            raise RefError(f"[spec {text}]: revision {revision} has no page {page!r}")
        if table.heading(revision, page, anchor) is None:
            anchors = ", ".join(pages[page]["sections"]) or "none"
            raise RefError(
                f"[spec {text}]: {revision} {page} has no section #{anchor}; its sections: {anchors}"
            )
    newest = revisions[-1]
    return SpecRef(
        revisions=revisions,
        page=page,
        anchor=anchor,
        page_title=str(table.heading(newest, page, None)),
        heading=str(table.heading(newest, page, anchor)),
    )
