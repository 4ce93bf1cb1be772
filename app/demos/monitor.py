"""demo-monitor: resource subscriptions, progress notifications and logging, on one greenhouse.

A client may subscribe to the temperature resource (`resources/subscribe`) and is then told of each
change (`notifications/resources/updated`); a long diagnostic reports progress when the request carries
`_meta.progressToken`; log messages (`notifications/message`) respect the level set by `logging/setLevel`.
"""

from typing import Any, get_args

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    INVALID_PARAMS,
    EmptyResult,
    LoggingLevel,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

from app.demos.stdio import lowlevel, serving

INFO = {
    "name": "demo-monitor",
    "title": "Greenhouse monitor",
    "description": (
        "A greenhouse sensor: subscribe to its temperature resource and be told when it changes, "
        "watch progress notifications of a diagnostic run, and set the log level of its messages."
    ),
    # What the console's templates offer for this server.
    "samples": [
        {"method": "tools/call", "params": {"name": "set_temperature", "arguments": {"celsius": 24}}},
        {"method": "resources/read", "params": {"uri": "sensor://greenhouse/temperature"}},
    ],
}

server = MCPServer(
    "demo-monitor",
    instructions=(
        "Subscribe to sensor://greenhouse/temperature, then call set_temperature; "
        "call run_diagnostics with _meta.progressToken; change logging/setLevel and compare."
    ),
)

TEMPERATURE_URI = "sensor://greenhouse/temperature"
# Above this the server logs a warning rather than an info message.
TOO_HOT_C = 35.0
# The diagnostic waits between steps so progress is visible; bounded so a call cannot hang a session.
MAX_STEPS = 10
MAX_STEP_SECONDS = 2.0
# RFC 5424 severities, least severe first, as the SDK's LoggingLevel literal lists them.
LEVELS: tuple[str, ...] = get_args(LoggingLevel)

# Each sandboxed instance is its own forked process, so this state belongs to one learner's session.
state: dict[str, Any] = {"celsius": 24.0, "subscribed": set(), "min_level": "info"}


async def _log(ctx: Context, level: LoggingLevel, text: str) -> None:
    """Send notifications/message unless the client asked for less (logging/setLevel)."""
    if LEVELS.index(level) >= LEVELS.index(state["min_level"]):
        await ctx.session.send_log_message(
            level, text, logger="greenhouse", related_request_id=ctx.request_id
        )


@server.resource(TEMPERATURE_URI, mime_type="text/plain")
def temperature() -> str:
    """The greenhouse temperature in degrees Celsius; subscribe to hear of every change."""
    return f"{state['celsius']:.1f} C"


@server.tool(structured_output=False)
async def set_temperature(celsius: float, ctx: Context) -> str:
    """Change the greenhouse temperature (-20 to 60 C); subscribers get notifications/resources/updated."""
    if not -20 <= celsius <= 60:
        raise ToolError("celsius must be between -20 and 60.")
    state["celsius"] = celsius
    level: LoggingLevel = "warning" if celsius > TOO_HOT_C else "info"
    await _log(ctx, level, f"temperature set to {celsius:.1f} C")
    # 2026-07-28 clients hear of it on a subscriptions/listen stream; handshake clients by subscribing.
    await ctx.notify_resource_updated(TEMPERATURE_URI)
    if TEMPERATURE_URI in state["subscribed"]:
        await ctx.session.send_resource_updated(TEMPERATURE_URI)
        return f"Temperature is now {celsius:.1f} C; subscribers were notified."
    return f"Temperature is now {celsius:.1f} C; nobody is subscribed, so no notification was sent."


@server.tool(structured_output=False)
async def run_diagnostics(ctx: Context, steps: int = 5, step_seconds: float = 0.5) -> str:
    """Check the sensors in steps, reporting progress when the request carries _meta.progressToken."""
    if not 1 <= steps <= MAX_STEPS:
        raise ToolError(f"steps must be between 1 and {MAX_STEPS}.")
    if not 0 <= step_seconds <= MAX_STEP_SECONDS:
        raise ToolError(f"step_seconds must be between 0 and {MAX_STEP_SECONDS}.")
    await _log(ctx, "info", f"diagnostics started: {steps} steps")
    for step in range(1, steps + 1):
        await anyio.sleep(step_seconds)
        await _log(ctx, "debug", f"sensor {step} answered")
        # A no-op when the request carried no progressToken: progress is opt-in per request.
        await ctx.report_progress(step, steps, f"checked sensor {step} of {steps}")
    await _log(ctx, "info", "diagnostics finished: all sensors answered")
    return f"All {steps} sensors answered."


async def _subscribe(ctx: ServerRequestContext, params: SubscribeRequestParams) -> EmptyResult:
    if str(params.uri) != TEMPERATURE_URI:
        raise MCPError(code=INVALID_PARAMS, message="Resource not found", data={"uri": str(params.uri)})
    state["subscribed"].add(TEMPERATURE_URI)
    return EmptyResult()


async def _unsubscribe(ctx: ServerRequestContext, params: UnsubscribeRequestParams) -> EmptyResult:
    state["subscribed"].discard(str(params.uri))
    return EmptyResult()


async def _set_level(ctx: ServerRequestContext, params: SetLevelRequestParams) -> EmptyResult:
    state["min_level"] = params.level
    return EmptyResult()


# MCPServer has no decorators for these; registering them also makes the server declare
# resources.subscribe and logging in initialize (the SDK derives capabilities from handlers).
_lowlevel = lowlevel(server)
_lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, _subscribe)
_lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, _unsubscribe)
_lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)


# Logging is deprecated in 2026-07-28; the SDK warns on stderr, which learners would see.
serve = serving(server, NotificationOptions(), quiet=(MCPDeprecationWarning,))  # what the sandbox calls

if __name__ == "__main__":
    serve()
