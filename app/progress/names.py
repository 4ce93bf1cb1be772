"""A learner's display name as the class page shows it: one line, short, that shows as something."""

from __future__ import annotations

import unicodedata

MAX_DISPLAY_NAME = 40


def clean_display_name(name: str | None) -> str | None:
    """A display name as stored: trimmed, at most MAX_DISPLAY_NAME characters, None for empty.

    Raises ValueError with a sentence for the learner when the name cannot be used.
    """
    if name is None:
        return None
    name = " ".join(name.split())
    if not name:
        return None
    if len(name) > MAX_DISPLAY_NAME:
        raise ValueError(f"A display name has at most {MAX_DISPLAY_NAME} characters.")
    if any(not ch.isprintable() for ch in name):
        raise ValueError("A display name cannot hold control characters.")
    if not any(unicodedata.category(ch)[0] in "LN" and ch not in _BLANK_LETTERS for ch in name):
        raise ValueError("A display name needs a letter or a digit that shows.")
    if _most_marks(name) > MAX_MARKS:
        raise ValueError(f"A display name has at most {MAX_MARKS} accents on one letter.")
    return name


# Letters that show as nothing: the Hangul fillers (a name of them looks empty on the class page).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
# Accents stacked on one letter: writing uses a few (Vietnamese two, Hebrew with its points four);
# dozens make a name that spills over its neighbours on the class page.
MAX_MARKS = 4


def _most_marks(text: str) -> int:
    """The most combining marks in a row in `text`."""
    most = run = 0
    for ch in text:
        run = run + 1 if unicodedata.category(ch) in ("Mn", "Me") else 0
        most = max(most, run)
    return most
