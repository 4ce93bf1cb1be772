"""demo-catalog: a library catalog that shows what tool results and lists can carry beyond text.

Structured output (`outputSchema`, `structuredContent`), resource links, embedded resources, tool
annotations, titles and icons (lesson 16); lists served in pages of five with `nextCursor`, and
`completion/complete` for a prompt argument and for a resource template's variables (lesson 17).

MCPServer lists everything at once, so the four list methods are served here, page by page, from
what MCPServer has registered.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import TextResource
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    Annotations,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    Icon,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    PromptReference,
    ResourceLink,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from app.demos.stdio import lowlevel, serving
from app.protocol import messages

INFO = {
    "name": "demo-catalog",
    "title": "Library catalog",
    "description": (
        "A city library's catalog: tools with structured output, resource links and embedded "
        "resources, annotations and icons; every list comes in pages of five; arguments complete."
    ),
    # What the console's templates offer for this server.
    "samples": [
        {"method": "tools/call", "params": {"name": "get_book", "arguments": {"book_id": "b-101"}}},
        {"method": "resources/list"},
        {
            "method": "completion/complete",
            "params": {
                "ref": {"type": "ref/prompt", "name": "recommend"},
                "argument": {"name": "genre", "value": "s"},
            },
        },
    ],
}

# The handshake revisions, oldest first.
HANDSHAKE_REVISIONS = sorted(HANDSHAKE_PROTOCOL_VERSIONS)  # dated names sort by date
# A 16x16 PNG of a closed book, inline so that the icon needs no network (spec: https: or data:).
BOOK_ICON = Icon(
    src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAHklEQVR42mNgGFRAJK/iPwiAaHx41IBRA4a7AQMCAL0kBOwcn7EgAAAAAElFTkSuQmCC",
    mime_type="image/png",
    sizes=["16x16"],
)
# Every list answers with at most this many items, and a cursor to the rest.
PAGE_SIZE = 5
# Completion answers with at most this many values (the spec's ceiling is 100).
MAX_COMPLETIONS = 5

server = MCPServer(
    "demo-catalog",
    title="City library catalog",
    version="1.0.0",
    icons=[BOOK_ICON],
    instructions="Lists come in pages of five: follow nextCursor. get_book answers with structuredContent.",
)


class Book(BaseModel):
    """One book of the catalog, as get_book returns it."""

    book_id: str = Field(description="The catalog's id, like b-101")
    title: str
    author: str
    genre: str = Field(description="mystery, science-fiction, fantasy or poetry")
    year: int
    copies_available: int = Field(ge=0, description="Copies on the shelf now")


BOOKS: dict[str, Book] = {
    book.book_id: book
    for book in [
        Book(book_id="b-101", title="The Salt Road", author="Meera Pillai", genre="mystery", year=2019, copies_available=2),
        Book(book_id="b-102", title="Quiet Orbit", author="Tomas Lind", genre="science-fiction", year=2021, copies_available=0),
        Book(book_id="b-103", title="Monsoon Ledger", author="Meera Pillai", genre="mystery", year=2022, copies_available=1),
        Book(book_id="b-104", title="Seeds of Glass", author="Ada Okafor", genre="science-fiction", year=2018, copies_available=3),
        Book(book_id="b-105", title="The Lantern Keeper", author="Hugo Brandt", genre="fantasy", year=2015, copies_available=1),
        Book(book_id="b-106", title="Small Hours", author="Ines Duarte", genre="poetry", year=2020, copies_available=4),
        Book(book_id="b-107", title="River of Clocks", author="Hugo Brandt", genre="fantasy", year=2017, copies_available=0),
        Book(book_id="b-108", title="Cold Case at Kovalam", author="Sunil Varma", genre="mystery", year=2023, copies_available=2),
        Book(book_id="b-109", title="Signal Garden", author="Ada Okafor", genre="science-fiction", year=2024, copies_available=1),
        Book(book_id="b-110", title="Paper Boats", author="Ines Duarte", genre="poetry", year=2016, copies_available=2),
        Book(book_id="b-111", title="The Ninth Stair", author="Sunil Varma", genre="mystery", year=2020, copies_available=0),
        Book(book_id="b-112", title="Stone and Feather", author="Lena Sorensen", genre="fantasy", year=2022, copies_available=5),
    ]
}  # fmt: skip
GENRES = sorted({book.genre for book in BOOKS.values()})
RESERVED: set[str] = set()  # this instance's reservations: one learner's session


def _book(book_id: str) -> Book:
    if book_id not in BOOKS:
        raise ToolError(f"No book {book_id!r} in the catalog; ids run from b-101 to b-112.")
    return BOOKS[book_id]


def _uri(book: Book) -> str:
    return f"library://books/{book.book_id}"


def _author_key(book: Book) -> str:
    """How the shelf template names an author: `meera-pillai` (a URI has no spaces)."""
    return book.author.lower().replace(" ", "-")


def _card(book: Book) -> str:
    return f"# {book.title}\n\n{book.author}, {book.year} ({book.genre}). Shelf id {book.book_id}."


# --- Tools: the first page of tools/list holds the five that lesson 16 uses ----------------------


@server.tool(
    title="Book details",
    icons=[BOOK_ICON],
    annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
)
def get_book(book_id: str) -> Book:
    """Look up one book by its id (b-101 to b-112). Answers with structured data."""
    return _book(book_id)


@server.tool(title="Search the catalog", annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def search_books(words: str) -> list[TextContent | ResourceLink]:
    """Find books whose title or author holds the words; answers with links to the books' resources."""
    found = [b for b in BOOKS.values() if words.lower() in f"{b.title} {b.author}".lower()]
    if not found:
        return [TextContent(type="text", text=f"No book matches {words!r}.")]
    links: list[TextContent | ResourceLink] = [
        TextContent(type="text", text=f"{len(found)} book(s) match {words!r}; read a link for its card.")
    ]
    for book in found:
        links.append(
            ResourceLink(
                type="resource_link",
                uri=_uri(book),
                name=book.book_id,
                title=book.title,
                description=f"{book.author}, {book.year}",
                mime_type="text/markdown",
            )
        )
    return links


@server.tool(title="Catalog card", annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def book_card(book_id: str) -> list[TextContent | EmbeddedResource]:
    """The book's catalog card, embedded in the result (no second request needed)."""
    book = _book(book_id)
    card = TextResourceContents(uri=_uri(book), mime_type="text/markdown", text=_card(book))
    return [
        TextContent(type="text", text=f"The card of {book.book_id} is embedded below."),
        EmbeddedResource(
            type="resource", resource=card, annotations=Annotations(audience=["user"], priority=0.5)
        ),
    ]


@server.tool(
    title="Reserve a book",
    annotations=ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
    ),
    structured_output=False,
)
def reserve_book(book_id: str) -> str:
    """Reserve a book for pick-up. Reserving it again changes nothing."""
    book = _book(book_id)
    if book.book_id in RESERVED:
        return f"{book.title} was already reserved for you; nothing changed."
    RESERVED.add(book.book_id)
    return f"{book.title} is reserved for you."


@server.tool(
    title="Cancel every reservation",
    annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False),
    structured_output=False,
)
def cancel_reservations() -> str:
    """Cancel all of your reservations at once. They cannot be restored."""
    count = len(RESERVED)
    RESERVED.clear()
    return f"Cancelled {count} reservation(s)."


@server.tool(title="Opening hours", annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def library_hours() -> str:
    """When the library is open."""
    return "Monday to Saturday, 9:00 to 19:00; closed on Sundays."


@server.tool(
    title="Ask another library",
    annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=True),
    structured_output=False,
)
def interlibrary_request(title: str) -> str:
    """Ask the partner libraries for a book this one lacks (they answer by e-mail within a week)."""
    return f"Asked the partner libraries for {title!r}; they answer within a week."


# --- Resources, a template and a prompt ----------------------------------------------------------

for _book_entry in BOOKS.values():
    server.add_resource(
        TextResource(
            uri=_uri(_book_entry),
            name=_book_entry.book_id,
            title=_book_entry.title,
            description=f"Catalog card: {_book_entry.author}, {_book_entry.year}",
            mime_type="text/markdown",
            text=_card(_book_entry),
        )
    )


@server.resource(
    "library://shelves/{genre}/{author}", title="A shelf: one author in one genre", mime_type="text/plain"
)
def shelf(genre: str, author: str) -> str:
    """The books of one author in one genre."""
    titles = [b.title for b in BOOKS.values() if b.genre == genre and _author_key(b) == author]
    if not titles:
        return f"No {genre} by {author} on the shelves."
    return "\n".join(titles)


@server.prompt(title="Recommend a book")
def recommend(genre: str, mood: str = "any") -> str:
    """Ask the model for a recommendation from one genre of this catalog."""
    shelf_titles = ", ".join(f"{b.title} ({b.author})" for b in BOOKS.values() if b.genre == genre)
    return f"Recommend one {genre} book for a reader in a {mood} mood, from: {shelf_titles or 'none'}."


@server.prompt(title="Summarize a catalog card")
def summarize_card(book_id: str) -> str:
    """Ask the model for a two-line summary of one book's catalog card."""
    return f"Summarize this catalog card in two lines:\n{_card(_book(book_id))}"


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    """Genres for recommend's `genre` and the shelf's `{genre}`; authors for `{author}`, given the genre."""
    typed = argument.value.lower()
    if argument.name == "genre" and (
        isinstance(ref, PromptReference)
        and ref.name == "recommend"
        or isinstance(ref, ResourceTemplateReference)
        and ref.uri == "library://shelves/{genre}/{author}"
    ):
        return _completion([g for g in GENRES if g.startswith(typed)])
    if argument.name == "author" and isinstance(ref, ResourceTemplateReference):
        genre = (context.arguments or {}).get("genre") if context else None
        authors = sorted({_author_key(b) for b in BOOKS.values() if genre is None or b.genre == genre})
        return _completion([a for a in authors if a.startswith(typed)])
    return None


def _completion(matches: list[str]) -> Completion:
    shown = matches[:MAX_COMPLETIONS]
    return Completion(values=shown, total=len(matches), has_more=len(matches) > len(shown))


# --- Pagination: every list in pages of PAGE_SIZE, with an opaque cursor ------------------------


def _cursor(listing: str, offset: int) -> str:
    """Opaque to clients; stable, so that the same position always has the same cursor."""
    raw = json.dumps({"list": listing, "at": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _offset(listing: str, cursor: str | None, size: int) -> int:
    if cursor is None:
        return 0
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        decoded = None
    if (
        not isinstance(decoded, dict)
        or decoded.get("list") != listing
        or not isinstance(decoded.get("at"), int)
        or not 0 < decoded["at"] < size
        or _cursor(listing, decoded["at"]) != cursor
    ):
        raise MCPError(
            code=INVALID_PARAMS,
            message="Invalid cursor",
            data={"cursor": cursor, "reason": f"not a cursor this server gave for {listing}"},
        )
    return decoded["at"]


def _page(
    listing: str, items: Sequence[Any], params: PaginatedRequestParams | None
) -> tuple[list[Any], str | None]:
    offset = _offset(listing, params.cursor if params else None, len(items))
    end = offset + PAGE_SIZE
    return list(items[offset:end]), _cursor(listing, end) if end < len(items) else None


async def _tools(ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListToolsResult:
    tools, after = _page("tools", await server.list_tools(), params)
    return ListToolsResult(tools=tools, next_cursor=after)


async def _resources(
    ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
) -> ListResourcesResult:
    resources, after = _page("resources", await server.list_resources(), params)
    return ListResourcesResult(resources=resources, next_cursor=after)


async def _templates(
    ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
) -> ListResourceTemplatesResult:
    templates, after = _page("templates", await server.list_resource_templates(), params)
    return ListResourceTemplatesResult(resource_templates=templates, next_cursor=after)


async def _prompts(
    ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
) -> ListPromptsResult:
    prompts, after = _page("prompts", await server.list_prompts(), params)
    return ListPromptsResult(prompts=prompts, next_cursor=after)


_LISTS: dict[str, Callable[..., Awaitable[Any]]] = {
    "tools/list": _tools,
    "resources/list": _resources,
    "resources/templates/list": _templates,
    "prompts/list": _prompts,
}
for _method, _handler in _LISTS.items():
    lowlevel(server).add_request_handler(_method, PaginatedRequestParams, _handler)

# --- Each session gets only what its revision has ------------------------------------------------
# The SDK sends the newest fields to every handshake revision. This catalog, like a careful server,
# leaves out what a session's revision does not define (the same facts as RULES in
# app/protocol/revisions.py): titles, outputSchema, structuredContent and resource links arrived in
# 2025-06-18, icons in 2025-11-25, tool annotations and the completions capability in 2025-03-26.

TITLES_FROM, ICONS_FROM, ANNOTATIONS_FROM = "2025-06-18", "2025-11-25", "2025-03-26"
LIST_KEYS = {"tools/list": "tools", "resources/list": "resources", "resources/templates/list": "resourceTemplates",
             "prompts/list": "prompts"}  # fmt: skip


def _before(version: str, since: str) -> bool:
    return version in HANDSHAKE_REVISIONS and HANDSHAKE_REVISIONS.index(version) < HANDSHAKE_REVISIONS.index(
        since
    )


def _drop(item: dict[str, Any], version: str) -> dict[str, Any]:
    dropped = {"title"} if _before(version, TITLES_FROM) else set()
    dropped |= {"outputSchema"} if _before(version, TITLES_FROM) else set()
    dropped |= {"icons"} if _before(version, ICONS_FROM) else set()
    dropped |= {"annotations"} if _before(version, ANNOTATIONS_FROM) and "inputSchema" in item else set()
    return {key: value for key, value in item.items() if key not in dropped}


def _unlinked(block: dict[str, Any]) -> dict[str, Any]:
    """A resource link, for a revision without them: its URI in words."""
    return {"type": "text", "text": f"{block.get('title') or block.get('name')}: {block.get('uri')}"}


def for_revision(method: str, version: str, result: dict[str, Any]) -> dict[str, Any]:
    """`result` as a server speaking `version` may send it."""
    if method in LIST_KEYS and isinstance(result.get(LIST_KEYS[method]), list):
        return {**result, LIST_KEYS[method]: [_drop(item, version) for item in result[LIST_KEYS[method]]]}
    if method == "tools/call" and _before(version, TITLES_FROM):
        content = [_unlinked(b) if b.get("type") == "resource_link" else b for b in result.get("content", [])]
        return {
            key: value for key, value in {**result, "content": content}.items() if key != "structuredContent"
        }
    if method == "initialize":
        info = _drop(dict(result.get("serverInfo") or {}), result.get("protocolVersion", ""))
        capabilities = dict(result.get("capabilities") or {})
        if _before(result.get("protocolVersion", ""), ANNOTATIONS_FROM):
            capabilities.pop("completions", None)
        return {**result, "serverInfo": info, "capabilities": capabilities}
    return result


async def _by_revision(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    result = await call_next(ctx)
    if isinstance(result, dict):
        return for_revision(ctx.method, ctx.protocol_version, result)
    return result


server.middleware.append(_by_revision)

# Requests the fork server sends once before forking, so every instance starts warm.
WARM_UP = [
    *messages.handshake(1, client_info=messages.WARM_UP_CLIENT_INFO),
    messages.request(2, "tools/list"),
    messages.request(3, "tools/list", {"cursor": _cursor("tools", PAGE_SIZE)}),
    messages.request(4, "tools/call", {"name": "get_book", "arguments": {"book_id": "b-101"}}),
    messages.request(5, "tools/call", {"name": "search_books", "arguments": {"words": "salt"}}),
    messages.request(6, "tools/call", {"name": "book_card", "arguments": {"book_id": "b-101"}}),
    messages.request(7, "resources/list"),
    messages.request(8, "resources/read", {"uri": "library://books/b-101"}),
    messages.request(9, "resources/templates/list"),
    messages.request(10, "prompts/list"),
    messages.request(
        11,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "recommend"}, "argument": {"name": "genre", "value": "m"}},
    ),
    messages.request(12, "resources/list", {"cursor": "not-a-cursor"}),
]


serve = serving(server)  # what the sandbox calls

if __name__ == "__main__":
    serve()
