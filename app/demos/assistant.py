"""demo-assistant: tools that use the client's own features, but only when the client declared them.

Each tool asks the client something mid-call (`sampling/createMessage`, `roots/list`,
`elicitation/create`); the learner plays the client and answers in the console. When the client did not
declare the capability in `initialize`, the tool sends nothing and says plainly what it could not do.
"""

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    ClientCapabilities,
    ElicitationCapability,
    RootsCapability,
    SamplingCapability,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, ValidationError

from app.demos.stdio import serving

INFO = {
    "name": "demo-assistant",
    "title": "Travel assistant",
    "description": (
        "Tools that ask the client for help mid-call: its model (sampling), its folders (roots), "
        "the user (elicitation). Without the capability declared, each tool says what it could not do."
    ),
    # What the console's templates offer for this server.
    "samples": [{"method": "tools/call", "params": {"name": "suggest_trip", "arguments": {"city": "Pune"}}}],
}

server = MCPServer(
    "demo-assistant",
    instructions="Declare sampling, roots or elicitation in initialize, then call a tool and answer its request.",
)

# Answers a learner types are short; the sampling request asks for no more than this.
SAMPLING_MAX_TOKENS = 200


def _refuse_unless_possible(feature: str, capability: str, ctx: Context) -> None:
    """Raise a tool error (isError: true, in plain words) when this connection cannot ask for `feature`."""
    if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        raise ToolError(
            f"Could not use {feature}: this request uses revision {ctx.session.protocol_version}, in which "
            "a server may not send requests to the client in the middle of a call. Use the handshake "
            "(initialize with 2025-11-25) to try this tool."
        )
    wanted = {
        "sampling": ClientCapabilities(sampling=SamplingCapability()),
        "roots": ClientCapabilities(roots=RootsCapability()),
        "elicitation": ClientCapabilities(elicitation=ElicitationCapability()),
    }[capability]
    if not ctx.session.check_client_capability(wanted):
        raise ToolError(
            f"Could not use {feature}: the client did not declare the '{capability}' capability in "
            f"initialize, so this server must not send it a request for it. Nothing was sent. Reconnect "
            f'and declare "capabilities": {{"{capability}": {{}}}} to try again.'
        )


@server.tool(structured_output=False)
async def suggest_trip(city: str, ctx: Context) -> str:
    """Ask the client's language model (sampling) for a one-line trip idea for a city."""
    _refuse_unless_possible("sampling (asking your model)", "sampling", ctx)
    try:
        reply = await ctx.session.create_message(
            [
                SamplingMessage(
                    role="user", content=TextContent(type="text", text=f"Suggest a one-day trip in {city}.")
                )
            ],
            max_tokens=SAMPLING_MAX_TOKENS,
            system_prompt="You are a travel assistant. Answer in one sentence.",
            related_request_id=ctx.request_id,
        )
    except MCPError as exc:
        return f"The client refused the sampling request: {exc.error.message} (code {exc.error.code})."
    except ValidationError:
        return "The client's answer was not a valid sampling result (it needs role, content and model)."
    text = reply.content.text if isinstance(reply.content, TextContent) else "(a non-text answer)"
    return f"Trip idea for {city}, written by {reply.model}: {text}"


@server.tool(structured_output=False)
async def find_itineraries(ctx: Context) -> str:
    """List the folders (roots) the client shares with this server, to look for itinerary files."""
    _refuse_unless_possible("roots (asking which folders you share)", "roots", ctx)
    try:
        result = await ctx.session.list_roots()
    except MCPError as exc:
        return f"The client refused the roots/list request: {exc.error.message} (code {exc.error.code})."
    except ValidationError:
        return "The client's answer was not a valid roots/list result (it needs a list of roots with file:// URIs)."
    if not result.roots:
        return "The client shares no folders, so there is nowhere to look for itineraries."
    lines = [f"- {root.name or '(no name)'}: {root.uri}" for root in result.roots]
    return "I would look for itineraries in the folders you shared:\n" + "\n".join(lines)


class Booking(BaseModel):
    """What the user is asked for when booking."""

    travellers: int = Field(ge=1, le=9, description="How many people travel")
    window_seat: bool = Field(default=False, description="Whether a window seat is wanted")


@server.tool(structured_output=False)
async def book_train(destination: str, ctx: Context) -> str:
    """Book a train ticket, asking the user (elicitation) how many travel."""
    _refuse_unless_possible("elicitation (asking you for details)", "elicitation", ctx)
    try:
        answer = await ctx.elicit(f"How many people travel to {destination}?", schema=Booking)
    except MCPError as exc:
        return f"The client refused the elicitation: {exc.error.message} (code {exc.error.code})."
    except (ValueError, ValidationError):
        return "The user's answer did not match the requested form, so nothing was booked."
    if answer.action != "accept":
        return f"Nothing was booked: the user chose '{answer.action}'."
    seat = "window seats" if answer.data.window_seat else "any seats"
    return f"Booked {answer.data.travellers} ticket(s) to {destination}, {seat}."


# Sampling and roots are deprecated in 2026-07-28; the SDK warns on stderr, which learners see.
serve = serving(server, quiet=(MCPDeprecationWarning,))  # what the sandbox calls

if __name__ == "__main__":
    serve()
