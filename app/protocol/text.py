"""Text as the playground keeps and quotes it: what a client or a server sent may be megabytes, and a
transcript, a report or a header value keeps enough of it to show what it was."""

from __future__ import annotations


def clip(text: str, most: int) -> str:
    """`text`, or its first `most - 1` characters and an ellipsis when it is longer than `most`."""
    return text if len(text) <= most else text[: most - 1] + "…"
