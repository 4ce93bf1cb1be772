"""demo-legacy: a server that speaks only the first released revision, 2024-11-05.

Whatever revision a client asks for in `initialize`, it answers 2024-11-05 (a counter-offer, not an
error); a client that needs something newer decides to disconnect. It knows nothing of later methods
(`server/discover` is "Method not found"). Raw stdio, because the SDK always speaks its newest revisions.
"""

import sys
from typing import Any

from mcp_types import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND

from app.demos._rawwire import Message, error, parse, result, text_result, write_message

INFO = {
    "name": "demo-legacy",
    "title": "Old weather station (2024-11-05 only)",
    "description": (
        "A server stuck on revision 2024-11-05: ask for a newer one and it counter-offers 2024-11-05, "
        "so your client must decide whether to carry on or disconnect."
    ),
    # What the console's templates offer for this server.
    "samples": [{"method": "tools/call", "params": {"name": "get_forecast", "arguments": {"city": "Oslo"}}}],
}

PROTOCOL_VERSION = "2024-11-05"
SERVER_INFO = {"name": "demo-legacy", "version": "0.9.0"}
FORECASTS = {"pune": "Sunny, 31 C", "oslo": "Snow showers, -3 C", "lima": "Overcast, 19 C"}
FORECAST_TOOL = {
    "name": "get_forecast",
    "description": "Tomorrow's weather for a city (Pune, Oslo or Lima).",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def initialize(params: dict[str, Any]) -> Message:
    missing = [key for key in ("protocolVersion", "capabilities", "clientInfo") if key not in params]
    if missing:
        raise _Refusal(INVALID_PARAMS, f"initialize needs {', '.join(missing)}")
    # The counter-offer: always the one revision this server knows, whatever was asked for.
    return {"protocolVersion": PROTOCOL_VERSION, "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}


def call_tool(params: dict[str, Any]) -> Message:
    if params.get("name") != FORECAST_TOOL["name"]:
        raise _Refusal(INVALID_PARAMS, f"Unknown tool: {params.get('name')}")
    city = (params.get("arguments") or {}).get("city")
    if not isinstance(city, str) or city.lower() not in FORECASTS:
        return text_result("No forecast for that city; try Pune, Oslo or Lima.", is_error=True)
    return text_result(f"{city.title()}: {FORECASTS[city.lower()]}")


class _Refusal(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def handle(message: Message, initialized: bool) -> Message:
    """The result of one request; raises _Refusal for an error reply."""
    method, params = message["method"], message.get("params") or {}
    if not isinstance(params, dict):
        raise _Refusal(INVALID_PARAMS, "params must be an object")
    if method == "initialize":
        return initialize(params)
    if method == "ping":
        return {}
    if method not in ("tools/list", "tools/call"):
        raise _Refusal(METHOD_NOT_FOUND, "Method not found")
    if not initialized:
        raise _Refusal(INVALID_REQUEST, "Server not initialized: send initialize first")
    return {"tools": [FORECAST_TOOL]} if method == "tools/list" else call_tool(params)


def serve() -> None:
    """Serve MCP 2024-11-05 on this process's stdin and stdout until stdin closes."""
    initialized = False
    for line in sys.stdin.buffer:
        message = parse(line)
        if message is None or not isinstance(message.get("method"), str):
            continue  # a bad line was answered by parse(); a client's response needs nothing
        if "id" not in message:
            continue  # notifications (initialized, cancelled, ...) need no reply
        try:
            write_message(result(message["id"], handle(message, initialized)))
            initialized = initialized or message["method"] == "initialize"
        except _Refusal as refusal:
            write_message(error(message["id"], refusal.code, str(refusal)))


if __name__ == "__main__":
    serve()
