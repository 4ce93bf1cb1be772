"""demo-stateless: the 2026-07-28 revision only, as the SDK serves it: no handshake, no session.

Every request carries `_meta` with `io.modelcontextprotocol/protocolVersion` and
`io.modelcontextprotocol/clientCapabilities`; `server/discover` describes the server; an unsupported
version, or an `initialize`, gets -32022 naming the supported versions. A server may not send requests
mid-call in this revision, so `transfer` asks the user by returning an input-required result that the
client answers by retrying the call.
"""

import warnings
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import BaseModel, Field

from app.demos.stdio import lowlevel, serve_stateless, stdio_streams, untraced

INFO = {
    "name": "demo-stateless",
    "title": "Currency desk (2026-07-28, stateless)",
    "description": (
        "Speaks only the stateless revision 2026-07-28: no initialize, every request carries its "
        "protocol version and client capabilities in _meta, server/discover describes the server."
    ),
    # What the console's templates offer for this server (each sent with the `_meta` envelope).
    "samples": [
        {
            "method": "tools/call",
            "params": {
                "name": "convert",
                "arguments": {"amount": 10, "from_currency": "EUR", "to_currency": "INR"},
            },
        },
    ],
}

server = MCPServer(
    "demo-stateless",
    version="1.0.0",
    instructions="No initialize here: start with server/discover, and put the _meta envelope on every request.",
)

# Fixed rates keep replies reproducible for the lessons' checked examples.
RATES_PER_EUR = {"EUR": 1.0, "INR": 90.0, "USD": 1.1, "JPY": 160.0}
MAX_TRANSFER = 10_000


def _rate(currency: str) -> float:
    if currency.upper() not in RATES_PER_EUR:
        raise ToolError(f"Unknown currency {currency!r}; this desk knows {', '.join(RATES_PER_EUR)}.")
    return RATES_PER_EUR[currency.upper()]


@server.tool(structured_output=False)
async def convert(amount: float, from_currency: str, to_currency: str, ctx: Context) -> str:
    """Convert an amount between EUR, INR, USD and JPY at the desk's fixed rates."""
    converted = amount / _rate(from_currency) * _rate(to_currency)
    # Sent only when this request's _meta asked for logs (io.modelcontextprotocol/logLevel).
    await ctx.info(f"converted {amount} {from_currency.upper()} at fixed rates")
    return f"{amount:.2f} {from_currency.upper()} = {converted:.2f} {to_currency.upper()}"


class Confirmation(BaseModel):
    """What the user is asked before money moves."""

    confirm: bool = Field(description="Send the money")


def ask_to_confirm(amount: float, to_account: str) -> Elicit[Confirmation]:
    return Elicit(f"Send {amount:.2f} EUR to account {to_account}?", Confirmation)


@server.tool(structured_output=False)
def transfer(
    amount: float,
    to_account: str,
    answer: Annotated[ElicitationResult[Confirmation], Resolve(ask_to_confirm)],
) -> str:
    """Send money after the user confirms; the question comes back as an input-required result."""
    if not 0 < amount <= MAX_TRANSFER:
        raise ToolError(f"amount must be more than 0 and at most {MAX_TRANSFER}.")
    if answer.action != "accept" or not answer.data.confirm:
        return f"Nothing was sent: the user did not confirm ({answer.action})."
    return f"Sent {amount:.2f} EUR to account {to_account}."


def serve() -> None:
    """Serve MCP 2026-07-28 on this process's stdin and stdout (the sandbox calls this)."""
    # ctx.info is logging, deprecated in 2026-07-28 itself; the SDK's warning would reach stderr.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    inner = lowlevel(untraced(server))

    async def main() -> None:
        async with stdio_streams() as (read_stream, write_stream), inner.lifespan(inner) as state:
            await serve_stateless(inner, read_stream, write_stream, state)

    anyio.run(main)


if __name__ == "__main__":
    serve()
