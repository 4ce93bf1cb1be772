"""demo-prints: a photo print shop that needs the user to sign in to their photo cloud, by URL.

Signing in to another service is exactly what a form must never ask for: the server sends the user
to a web page instead (URL-mode elicitation, 2025-11-25), and what the user types there never
passes through the client. `connect_album` asks mid-call (`elicitation/create` with `"mode": "url"`);
`print_photos` refuses with `-32042` (URL elicitation required) until the user has signed in. No
browser opens in the playground: `finish_sign_in` plays the user finishing on that page, and the
server then sends `notifications/elicitation/complete`. On 2026-07-28 the same question comes back
as an `input_required` result, answered by retrying the call.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, UrlElicitationRequiredError
from mcp_types import ElicitRequestURLParams, ElicitResult, InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from app.demos.stdio import serving
from app.protocol import messages

INFO = {
    "name": "demo-prints",
    "title": "Photo print shop (URL elicitation)",
    "description": (
        "Prints photos from your photo cloud. Signing in there happens on a web page the server sends "
        "you to (URL-mode elicitation), never in a form."
    ),
    # What the console's templates offer for this server.
    "samples": [{"method": "tools/call", "params": {"name": "connect_album", "arguments": {}}}],
}

server = MCPServer(
    "demo-prints",
    version="1.0.0",
    instructions=(
        'Declare "elicitation": {"url": {}} in initialize, then call connect_album or print_photos. '
        "No browser opens here: finish_sign_in plays the user finishing on the sign-in page."
    ),
)

# The sign-in page. `.example` is reserved (RFC 2606): it never resolves, as nothing may open it here.
SIGN_IN_PAGE = "https://photos.example/connect"
# The key of the question in a 2026-07-28 input_required result.
SIGN_IN_KEY = "sign_in"
ALBUM = ("harbour-at-dawn.jpg", "grandmother-90.jpg", "first-snow.jpg")
MAX_COPIES = 20

# Each sandboxed instance is its own process: this is one learner's session.
signed_in = False
pending: list[str] = []  # elicitation ids sent and not yet completed, oldest first
_issued = 0


def _new_elicitation() -> ElicitRequestURLParams:
    """A URL-mode question: the page, why, and an id to say later that it is done."""
    global _issued
    _issued += 1
    elicitation_id = f"sign-in-{_issued}"
    pending.append(elicitation_id)
    # The URL names only the elicitation, nothing about the user (spec: Safe URL Handling).
    return ElicitRequestURLParams(
        mode="url",
        message="Sign in to your photo cloud so that the print shop can read your album.",
        url=f"{SIGN_IN_PAGE}?elicitation={elicitation_id}",
        elicitation_id=elicitation_id,
    )


def _url_mode_declared(ctx: Context) -> bool:
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities else None
    return elicitation is not None and elicitation.url is not None


def _refuse_without_url_mode(ctx: Context) -> None:
    """A form must not carry a password: without URL mode, this server asks nothing at all."""
    if _url_mode_declared(ctx):
        return
    raise ToolError(
        "Signing in needs URL-mode elicitation, and this client did not declare it "
        '(it needs "elicitation": {"url": {}} in its capabilities). This server will not ask for your '
        "photo-cloud password in a form instead: secrets never go through a form. Nothing was sent."
    )


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


@server.tool(title="Connect your photo album", structured_output=False)
async def connect_album(ctx: Context) -> str | InputRequiredResult:
    """Connect the print shop to your photo cloud: you sign in there, on a web page, not here."""
    global signed_in
    if signed_in:
        return "You are already signed in to your photo cloud."
    _refuse_without_url_mode(ctx)
    if _modern(ctx):
        return _ask_by_result(ctx)
    question = _new_elicitation()
    try:
        answer = await ctx.elicit_url(question.message, question.url, question.elicitation_id or "")
    except MCPError as exc:
        pending.remove(question.elicitation_id or "")
        return f"The client refused the elicitation: {exc.error.message} (code {exc.error.code})."
    except ValidationError:
        pending.remove(question.elicitation_id or "")
        return "The client's answer was not a valid elicitation result (it needs an action)."
    if answer.action != "accept":
        pending.remove(question.elicitation_id or "")
        return f"Not connected: the user chose '{answer.action}', and nothing was opened."
    return (
        f"The user agreed to open {question.url}. Accepting is consent to go there, not being done: the "
        f"sign-in happens on that page, outside MCP, and this server will send "
        f"notifications/elicitation/complete for {question.elicitation_id} when it is over. No browser "
        "opens in the playground: call finish_sign_in to play the user signing in on that page."
    )


def _ask_by_result(ctx: Context) -> str | InputRequiredResult:
    """2026-07-28: no request of the server's own; the question rides the result, the answer the retry."""
    global signed_in
    answer = (ctx.input_responses or {}).get(SIGN_IN_KEY)
    if isinstance(answer, ElicitResult):
        if answer.action != "accept":
            return f"Not connected: the user chose '{answer.action}', and nothing was opened."
        # The playground plays the web page: the retry finds the sign-in done.
        signed_in = True
        return f"Signed in: your album has {len(ALBUM)} photos. (The playground played the sign-in page.)"
    question = {
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": "Sign in to your photo cloud so that the print shop can read your album.",
            "url": SIGN_IN_PAGE,
        },
    }
    return InputRequiredResult.model_validate(
        {"resultType": "input_required", "inputRequests": {SIGN_IN_KEY: question}}
    )


@server.tool(title="Play the user: finish signing in", structured_output=False)
async def finish_sign_in(ctx: Context) -> str:
    """Playground only: act as the user finishing on the sign-in page (no browser opens here)."""
    global signed_in
    if not pending:
        raise ToolError("No sign-in is waiting: call connect_album or print_photos first.")
    done = list(pending)
    pending.clear()
    signed_in = True
    if not _modern(ctx) and ctx.protocol_version == "2025-11-25":
        for elicitation_id in done:
            await ctx.session.send_elicit_complete(elicitation_id, related_request_id=ctx.request_id)
    return (
        f"The user signed in on the page ({', '.join(done)}); the server sent "
        "notifications/elicitation/complete. Retry what was waiting."
    )


@server.tool(title="Print photos", structured_output=False)
async def print_photos(ctx: Context, copies: int = 1) -> str:
    """Print every photo of your album; needs you signed in to your photo cloud."""
    if not 1 <= copies <= MAX_COPIES:
        raise ToolError(f"copies must be between 1 and {MAX_COPIES}.")
    if not signed_in:
        _refuse_without_url_mode(ctx)
        if _modern(ctx):
            raise ToolError("Not signed in: call connect_album first (its answer asks you to sign in).")
        # 2025-11-25: refuse the whole request, naming the page the user must visit first.
        raise UrlElicitationRequiredError([_new_elicitation()], message="Sign in to your photo cloud first.")
    return f"Printing {copies} cop{'y' if copies == 1 else 'ies'} of {len(ALBUM)} photos: {', '.join(ALBUM)}."


# Requests the fork server sends once before forking, so every instance starts warm. None of them
# changes the shop's state, which every forked instance inherits: each is refused before it acts.
WARM_UP = [
    *messages.handshake(1, client_info=messages.WARM_UP_CLIENT_INFO),
    messages.request(2, "tools/list"),
    messages.request(3, "tools/call", {"name": "connect_album", "arguments": {}}),
    messages.request(4, "tools/call", {"name": "print_photos", "arguments": {"copies": 0}}),
]


serve = serving(server, quiet=(MCPDeprecationWarning,))  # what the sandbox calls

if __name__ == "__main__":
    serve()
