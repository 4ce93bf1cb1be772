"""demo-modern: revision 2026-07-28 in depth, on the SDK.

- `subscriptions/listen`: the server agrees only to the notifications it can ever send (tools list
  changes, updates of its one resource); the acknowledgment names that subset, and a stream left
  with nothing to carry is ended at once, gracefully, with the listen result.
- The tool list changes on the box office's own clock, never because of a request: sales for the
  late show open and close every `LATE_SHOW_EVERY_S` seconds, adding or removing `book_late_show`
  (2026-07-28 server/tools, Capabilities: the list must not vary as a side effect of requests).
- Multi round-trip requests beyond one round: `book_seats` asks where, then asks a second question
  that depends on the first answer; the first answer rides the (sealed) `requestState`.
- Caching hints: list and read results carry `ttlMs` and `cacheScope` chosen per method.
- Extension negotiation: it advertises MCP Apps (`io.modelcontextprotocol/ui`); `seat_map` answers a
  client that declared it differently from one that did not (the core fallback: plain text).

A dual-era server like the SDK's others: an `initialize` first opens a handshake connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server.apps import Apps, client_supports_apps
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    InMemorySubscriptionBus,
    ListenHandler,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)
from pydantic import BaseModel, Field

from app.demos.stdio import lowlevel, serving
from app.protocol import messages

INFO = {
    "name": "demo-modern",
    "title": "Box office (2026-07-28 in depth)",
    "description": (
        "A theatre box office for the stateless revision's finer points: subscriptions/listen streams, "
        "a booking that asks two questions in two rounds, caching hints, and the MCP Apps extension."
    ),
    # What the console's templates offer for this server.
    "samples": [
        {"method": "tools/call", "params": {"name": "seat_map", "arguments": {}}},
        {"method": "resources/read", "params": {"uri": "boxoffice://my-bookings"}},
    ],
}

BOOKINGS_URI = "boxoffice://my-bookings"
SEAT_MAP_URI = "ui://boxoffice/seat-map.html"
LATE_SHOW_TOOL = "book_late_show"
SEATS: dict[str, int] = {"stalls": 40, "balcony": 20}
BOOKINGS: list[str] = []  # this learner's instance only: each is its own forked process
MAX_SEATS = 6
# Sales for the late show open or close this often: soon enough for a learner watching a stream.
LATE_SHOW_EVERY_S = 10.0

bus = InMemorySubscriptionBus()
apps = Apps()

SEAT_MAP_TEXT = "Stage\n[stalls: rows 1-20, {stalls} free]\n[balcony: rows A-E, {balcony} free]"
# The interactive map (an MCP App), read before the sandbox forks its instances from this module.
SEAT_MAP_HTML = (Path(__file__).parent / "apps" / "seat-map.html").read_text(encoding="utf-8")


@apps.tool(resource_uri=SEAT_MAP_URI, structured_output=False)
def seat_map(ctx: Context) -> str:
    """Tonight's seat map: an interactive view for hosts with MCP Apps, plain text for the rest."""
    if client_supports_apps(ctx):
        return (
            f"Your client declared MCP Apps: it can show the interactive map from {SEAT_MAP_URI}. "
            f"Free now: stalls {SEATS['stalls']}, balcony {SEATS['balcony']}."
        )
    # The core fallback every client understands (2026-07-28 basic/versioning, Extension Negotiation).
    return SEAT_MAP_TEXT.format(**SEATS)


apps.add_html_resource(SEAT_MAP_URI, SEAT_MAP_HTML)


@asynccontextmanager
async def box_office_clock(_: MCPServer[Any]) -> AsyncIterator[None]:
    """While the server serves, the late show's sales open and close on a timer (closed at first)."""
    set_late_show(False)  # the fork server's warm-up serves too: every instance starts alike
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(late_show_clock, LATE_SHOW_EVERY_S)
        try:
            yield
        finally:
            tasks.cancel_scope.cancel()


# The extension's tools and resources are taken when the server is built: define them first.
server = MCPServer(
    "demo-modern",
    version="1.0.0",
    instructions=(
        "Open a subscriptions/listen stream (the late show's sales open and close every few seconds), "
        "book seats (two questions), and read my-bookings."
    ),
    extensions=[apps],
    subscriptions=bus,
    lifespan=box_office_clock,
    # The same list for every caller, for five minutes; a booking list is one caller's own.
    cache_hints={
        "server/discover": CacheHint(ttl_ms=3_600_000, scope="public"),
        "tools/list": CacheHint(ttl_ms=300_000, scope="public"),
        "resources/list": CacheHint(ttl_ms=300_000, scope="public"),
        "resources/read": CacheHint(ttl_ms=10_000, scope="private"),
    },
)


class HonestListen(ListenHandler):
    """Acknowledges only what this server can ever send; ends at once a stream left with nothing.

    The SDK's handler honours every kind asked for. This one narrows the filter first, so the
    acknowledgment shows the learner the subset (2026-07-28 basic/patterns/subscriptions,
    Acknowledgment), and ends an empty stream with the graceful listen result (Graceful Closure).
    """

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        asked = params.notifications
        honoured = SubscriptionFilter(
            tools_list_changed=True if asked.tools_list_changed else None,
            resource_subscriptions=[uri for uri in asked.resource_subscriptions or () if uri == BOOKINGS_URI]
            or None,
        )
        if honoured.tools_list_changed or honoured.resource_subscriptions:
            return await super().__call__(ctx, params.model_copy(update={"notifications": honoured}))
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        await ctx.session.send_notification(
            SubscriptionsAcknowledgedNotification(
                params=SubscriptionsAcknowledgedNotificationParams(notifications=honoured, _meta=meta)
            ),
            related_request_id=ctx.request_id,
        )
        return SubscriptionsListenResult(_meta=meta)


lowlevel(server).add_request_handler(  # no public route to replace MCPServer's handler
    "subscriptions/listen", SubscriptionsListenRequestParams, HonestListen(bus)
)


class Section(BaseModel):
    """The first question: where to sit."""

    section: Literal["stalls", "balcony"] = Field(description="stalls or balcony")


class Confirmation(BaseModel):
    """The second question, which depends on the first answer."""

    confirm: bool = Field(description="Book these seats")


def ask_section(count: int) -> Elicit[Section]:
    return Elicit(f"Where should the {count} seat(s) be: stalls or balcony?", Section)


def ask_to_confirm(
    count: int, where: Annotated[ElicitationResult[Section], Resolve(ask_section)]
) -> Elicit[Confirmation]:
    # Asked only once the first answer is known: a second round, not a second key in the first.
    if where.action == "accept" and where.data.section == "balcony":
        return Elicit(f"The balcony is up 60 steps, with no lift. Book {count} seat(s) there?", Confirmation)
    return Elicit(f"Book {count} seat(s) in the stalls, row 12 or behind?", Confirmation)


@server.tool(structured_output=False)
async def book_seats(
    count: int,
    where: Annotated[ElicitationResult[Section], Resolve(ask_section)],
    sure: Annotated[ElicitationResult[Confirmation], Resolve(ask_to_confirm)],
    ctx: Context,
) -> str:
    """Book seats for tonight: asks where (stalls or balcony), then asks to confirm what that means."""
    if not 1 <= count <= MAX_SEATS:
        raise ToolError(f"count must be between 1 and {MAX_SEATS}.")
    if where.action != "accept" or sure.action != "accept" or not sure.data.confirm:
        return "Nothing was booked: the user did not confirm."
    section = where.data.section
    if SEATS[section] < count:
        return f"Only {SEATS[section]} seat(s) left in the {section}; nothing was booked."
    SEATS[section] -= count
    BOOKINGS.append(f"{count} seat(s) in the {section}")
    await ctx.notify_resource_updated(BOOKINGS_URI)
    return f"Booked {count} seat(s) in the {section}; {SEATS[section]} left there."


def book_late_show(count: int) -> str:
    """Book seats for the late show (a tool only while its sales are open)."""
    if not 1 <= count <= MAX_SEATS:
        raise ToolError(f"count must be between 1 and {MAX_SEATS}.")
    BOOKINGS.append(f"{count} seat(s) at the late show")
    return f"Booked {count} seat(s) at the late show."


SALES = {"late_show": False}  # while the late show's sales are open, `book_late_show` is a tool


def set_late_show(open_: bool) -> None:
    """Open or close the late show's sales, adding or removing its tool."""
    if open_ == SALES["late_show"]:
        return
    if open_:
        server.add_tool(book_late_show, name=LATE_SHOW_TOOL, structured_output=False)
    else:
        server.remove_tool(LATE_SHOW_TOOL)
    SALES["late_show"] = open_


async def late_show_clock(every_s: float) -> None:
    """Every `every_s` seconds, open the late show's sales if closed, else close them, and tell the
    streams that asked for toolsListChanged. No request causes it: it is the box office's own clock."""
    while True:
        await anyio.sleep(every_s)
        set_late_show(not SALES["late_show"])
        await bus.publish(ToolsListChanged())


@server.resource(BOOKINGS_URI, mime_type="text/plain")
def my_bookings() -> str:
    """Your bookings tonight (yours alone: its cache scope is private)."""
    return "; ".join(BOOKINGS) if BOOKINGS else "No bookings yet."


# Requests the fork server sends once before forking (read-only: no booking).
WARM_UP = [
    messages.discover(1),
    messages.request(2, "tools/list", {"_meta": messages.envelope()}),
    messages.request(3, "resources/read", {"_meta": messages.envelope(), "uri": BOOKINGS_URI}),
    messages.request(
        4,
        "tools/call",
        {"_meta": messages.envelope({"elicitation": {}}), "name": "book_seats", "arguments": {"count": 1}},
    ),
]


serve = serving(server, quiet=(MCPDeprecationWarning,))  # what the sandbox calls

if __name__ == "__main__":
    serve()
