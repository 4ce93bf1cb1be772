"""The messages that open a conversation with an MCP server, built in one place.

The handshake (`initialize`, then `notifications/initialized`) for the dated revisions up to
2025-11-25, and `server/discover` with the `_meta` envelope for 2026-07-28. Warm-up, the demo
servers, the pages and the tests all build them here, so they cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

Message = dict[str, Any]

# The newest handshake revision, and the stateless one that has no handshake.
NEWEST_HANDSHAKE_REVISION = "2025-11-25"
STATELESS_REVISION = "2026-07-28"
# Who the playground's own console says it is.
CONSOLE_CLIENT_INFO = {"name": "playground-console", "version": "1.0.0"}
# Who the fork server's warm-up says it is, to the servers it exercises before any learner arrives.
WARM_UP_CLIENT_INFO = {"name": "warm-up", "version": "1"}


def request(id_: Any, method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(
    id_: Any = 1,
    revision: str = NEWEST_HANDSHAKE_REVISION,
    *,
    capabilities: dict[str, Any] | None = None,
    client_info: dict[str, Any] | None = None,
) -> Message:
    """An `initialize` request asking for `revision`."""
    return request(
        id_,
        "initialize",
        {
            "protocolVersion": revision,
            "capabilities": capabilities if capabilities is not None else {},
            "clientInfo": dict(client_info if client_info is not None else CONSOLE_CLIENT_INFO),
        },
    )


def initialized() -> Message:
    """The notification that ends the handshake, once `initialize` has its result."""
    return notification("notifications/initialized")


def handshake(
    id_: Any = 1,
    revision: str = NEWEST_HANDSHAKE_REVISION,
    *,
    capabilities: dict[str, Any] | None = None,
    client_info: dict[str, Any] | None = None,
) -> list[Message]:
    """`initialize` and `notifications/initialized`, to send in order (the second after the reply)."""
    return [initialize(id_, revision, capabilities=capabilities, client_info=client_info), initialized()]


def envelope(
    capabilities: dict[str, Any] | None = None, revision: str = STATELESS_REVISION
) -> dict[str, Any]:
    """The `_meta` every 2026-07-28 request carries: its revision and the client's capabilities."""
    return {PROTOCOL_VERSION_META_KEY: revision, CLIENT_CAPABILITIES_META_KEY: capabilities or {}}


def discover(id_: Any = 1, capabilities: dict[str, Any] | None = None) -> Message:
    """A `server/discover` request with the envelope (2026-07-28)."""
    return request(id_, "server/discover", {"_meta": envelope(capabilities)})


def opening(revision: str, id_: Any = 1) -> Message:
    """The first message of a conversation in `revision`: server/discover when stateless, else initialize."""
    return discover(id_) if revision == STATELESS_REVISION else initialize(id_, revision)
