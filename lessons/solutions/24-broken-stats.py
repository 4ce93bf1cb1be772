"""Broken on purpose (lesson 24): `note_stats` renamed its `characters` field to `chars`."""

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

mcp = MCPServer("notes")

NOTES = {
    "shopping": "milk, eggs and bread",
    "ideas": "a server that comes with its own tests",
}


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@mcp.tool()
def read_note(title: str) -> str:
    """Read the note with this title."""
    if title not in NOTES:
        raise ToolError(f"There is no note titled {title!r}; the notes are: {', '.join(sorted(NOTES))}.")
    return NOTES[title]


class NoteStats(BaseModel):
    title: str
    words: int = Field(description="How many words the note has")
    chars: int = Field(description="How many characters it has, spaces included")


@mcp.tool()
def note_stats(title: str) -> NoteStats:
    """Count the words and the characters of a note."""
    text = read_note(title)  # the decorator leaves the function as it was: a missing note raises here too
    return NoteStats(title=title, words=len(text.split()), chars=len(text))


if __name__ == "__main__":
    mcp.run()  # only when run as a program (`python server.py`), never when a test imports this file
