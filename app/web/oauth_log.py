"""Watching the dance: every step of a protected endpoint's authorization flows, recorded for its owner
(`GET /api/endpoints/{id}/auth`, shown by the endpoint panel), each with what it means and the section
of the MCP specification (2025-11-25, basic/authorization) or the RFC that defines it.

No secret is recorded: codes and tokens appear as their first four characters. Steps are kept in the
progress store (the newest OAUTH_EVENTS_KEPT of an endpoint), so a flow that crosses replicas shows
whole.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.progress.store import ProgressStore
from app.web.client import client_key, site_url
from app.web.oauth_steps import STEPS
from app.web.templating import page

log = logging.getLogger(__name__)
REPEAT_S = 10.0
LAST_STEPS_KEPT = 10_000  # endpoints whose last step is remembered (this process's, at most)


# Why the client of the `/authorize` request being handled could not be known, as the provider found
# (`client_refused`): the SDK answers any such client "not found", and `AuthorizeWatch` says why.
_CLIENT_REFUSED: ContextVar[list[str] | None] = ContextVar("oauth_client_refused", default=None)
REASON_CHARS = 500
LISTED_KEPT = 10


def client_refused(reason: str) -> None:
    """Say why the request's client cannot be used (outside `/authorize`, nobody asks)."""
    reasons = _CLIENT_REFUSED.get()
    if reasons is not None:
        reasons.append(reason[:REASON_CHARS])


# Who read which endpoint's Protected Resource Metadata is remembered this long (FlowLog).
READER_MEMORY_S = 60.0


def masked(secret: str | None) -> str | None:
    return None if not secret else secret[:4] + "…"


class FlowLog:
    """Each endpoint's authorization flow as its owner watches it: the steps, written to the store, and
    what this process remembers so that repeats, refusals and readers do not flood it (each app its own).

    Who read which endpoint's Protected Resource Metadata, lately: the authorization server's metadata
    and a dynamic registration name no endpoint, so each is shown on the endpoint its reader came from
    (this process only), when that address read one endpoint's only. A class behind one address reads
    many: a registration shown on the endpoint read last would show one learner's client (its name, its
    redirect URIs) to another. There, the authorization request shows the client instead."""

    def __init__(self, store: ProgressStore) -> None:
        self.store = store
        self._last_step: dict[str, tuple[str, float]] = {}  # endpoint id -> its last step here, and when
        self._last_refusal: dict[tuple[str, str], float] = {}  # (endpoint id, `once_a_while` step) -> when
        self._last_other: dict[str, float] = {}  # endpoint id -> when any other step was written
        self._readers: dict[str, dict[str, float]] = {}  # client address -> {endpoint id: when}

    async def record(self, endpoint_id: str, step: str, request: str, status: int | None,
                     *, once_a_while: bool = False, **detail: Any) -> None:  # fmt: skip
        """Add one step to the endpoint's flow (a failure to record is logged, never the request's). A
        step the same as the endpoint's last, within REPEAT_S, is not written again: a client without a
        token retrying in a loop (or a visitor hammering the URL) costs no write to the shared store. A
        step `once_a_while` is written once per REPEAT_S whatever its detail: a refusal anyone with the
        URL can cause, with a new junk token each time, would otherwise push the owner's real flow out."""
        detail = {key: _clipped(value) for key, value in detail.items()}
        data = json.dumps({"step": step, "request": request, "status": status, "detail": detail})
        now = time.monotonic()
        last = self._last_step.get(endpoint_id)
        if last is not None and last[0] == data and now - last[1] < REPEAT_S:
            return
        if once_a_while:  # again only past REPEAT_S, or once another kind of step has come between
            written = self._last_refusal.get((endpoint_id, step))
            if (
                written is not None
                and now - written < REPEAT_S
                and self._last_other.get(endpoint_id, 0.0) < written
            ):
                return
            _remember(self._last_refusal, (endpoint_id, step), now)
        else:
            _remember(self._last_other, endpoint_id, now)
        _remember(self._last_step, endpoint_id, (data, now))
        try:
            await anyio.to_thread.run_sync(self.store.add_oauth_event, endpoint_id, data)
        except Exception:
            log.exception("could not record an authorization step of endpoint %s", endpoint_id)

    def read_resource_metadata(self, address: str, endpoint_id: str) -> None:
        now = time.monotonic()
        reads = {endpoint: at for endpoint, at in self._readers.get(address, {}).items()
                 if now - at < READER_MEMORY_S}  # fmt: skip
        reads[endpoint_id] = now
        _remember(self._readers, address, dict(list(reads.items())[-2:]))  # two tell "more than one"

    def endpoint_read_by(self, address: str) -> str | None:
        """The endpoint whose metadata this address read within READER_MEMORY_S, if it read one only."""
        now = time.monotonic()
        read = [
            endpoint for endpoint, at in self._readers.get(address, {}).items() if now - at < READER_MEMORY_S
        ]
        return read[0] if len(read) == 1 else None


def _clipped(value: Any) -> Any:
    """A step's detail as kept: what a client names (its name, redirect URIs, an error's description)
    is at most REASON_CHARS characters, a list at most LISTED_KEPT items; 200 steps of 8 KiB each, on
    each of the endpoints one address may make in an hour, would be gigabytes."""
    if isinstance(value, str):
        return value if len(value) <= REASON_CHARS else value[:REASON_CHARS] + "…"
    if isinstance(value, list):
        return [_clipped(item) for item in value[:LISTED_KEPT]]
    return value


def _remember(table: dict[Any, Any], key: Any, value: Any) -> None:
    """Set `key`; a table of LAST_STEPS_KEPT keys is emptied first (this process's memory, at most)."""
    if len(table) >= LAST_STEPS_KEPT:
        table.clear()
    table[key] = value


def event_json(number: int, at: float, data: str) -> dict[str, Any]:
    event = json.loads(data)
    title, meaning, reference = STEPS.get(event["step"], (event["step"], "", ""))
    return {"seq": number, "at": at, **event, "title": title, "meaning": meaning, "reference": reference}


async def whole_body(receive: Receive) -> bytes:
    """A request's body, read whole (the guard has bounded it already)."""
    chunks: list[bytes] = []
    more = True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A receive that gives `body` once, then what `receive` gives (the disconnect)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class Answer:
    """What an app answers, kept back and passed on only at `release()`, with its status and body
    readable before: a step recorded in between is in the flow before the client, answered, can take
    its next one."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._chunks: list[bytes] = []
        self._held: list[Message] = []
        self.status = 0

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body":
            self._chunks.append(message.get("body", b""))
        self._held.append(message)

    async def release(self) -> None:
        held, self._held = self._held, []
        for message in held:
            await self._send(message)

    @property
    def body(self) -> bytes:
        return b"".join(self._chunks)

    def header(self, name: bytes) -> str | None:
        start = next((message for message in self._held if message["type"] == "http.response.start"), None)
        for key, value in start.get("headers", []) if start is not None else []:
            if key.lower() == name:
                return bytes(value).decode("latin-1")
        return None

    def replace(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        """Answer this instead."""
        self.status = status
        self._held = [{"type": "http.response.start", "status": status, "headers": headers},
                      {"type": "http.response.body", "body": body}]  # fmt: skip
        self._chunks = [body]

    def replace_body(self, body: bytes) -> None:
        """Answer `body` instead, with the same status and headers (its length corrected)."""
        start = next(message for message in self._held if message["type"] == "http.response.start")
        headers = [
            (key, value) for key, value in start.get("headers", []) if key.lower() != b"content-length"
        ]
        headers.append((b"content-length", str(len(body)).encode()))
        self._held = [{**start, "headers": headers}, {"type": "http.response.body", "body": body}]
        self._chunks = [body]


class AuthorizeWatch:
    """Around the SDK's `/authorize` route: a refused authorization request is recorded on the endpoint
    it names as its resource (an accepted one is recorded by the provider), and a client the provider
    could not use is answered with the reason, not the SDK's "not found".

    The SDK sends a refusal back to any redirect URI the client registered, and anyone may register a
    client: that made this site an open redirector (a link to it landing on a phishing page). A refusal
    is therefore redirected only to this site itself (the endpoint panel's flow by hand); to any other
    it is shown in the browser, with a link back that the person follows if they started that client
    (MCP 2025-11-25 authorization §Open Redirection; OAuth 2.1 §7.12.2)."""

    def __init__(self, app: ASGIApp, flows: FlowLog, endpoint_of: Callable[[str], Awaitable[Any]]) -> None:
        self.app = app
        self.flows = flows
        self.endpoint_of = endpoint_of  # a resource URL -> its live protected endpoint (with .id), or None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        body = await whole_body(receive) if scope["method"] == "POST" else b""
        reasons: list[str] = []
        token = _CLIENT_REFUSED.set(reasons)
        answer = Answer(send)
        try:
            await self.app(scope, replaying(body, receive), answer.send)
        finally:
            _CLIENT_REFUSED.reset(token)
        try:
            await self._refused(scope, body, reasons, answer)
        finally:
            await answer.release()

    async def _refused(self, scope: Scope, body: bytes, reasons: list[str], answer: Answer) -> None:
        if answer.status == 400:
            try:
                error = json.loads(answer.body)
            except ValueError:
                error = {}
            # Only the SDK's answer for a client the provider returned none for ("Client ID ... not
            # found"): another 400 (a request missing its PKCE challenge) says its own problem.
            description = error.get("error_description") if isinstance(error, dict) else None
            if reasons and isinstance(description, str) and description.endswith("not found"):
                error["error_description"] = reasons[-1]
                answer.replace_body(json.dumps(error).encode())
        elif answer.status == 302:
            location = answer.header(b"location") or ""
            error = _first(parse_qs(urlsplit(location).query))
            if "error" not in error:
                return  # on to the consent page
            _not_blindly(scope, answer, location, error)
        else:
            return
        query = scope.get("query_string", b"") + b"&" + body
        params = _first(parse_qs(query.decode("utf-8", errors="replace")))
        endpoint = await self.endpoint_of(params.get("resource", ""))
        if endpoint is None:
            return
        await self.flows.record(endpoint.id, "authorize_refused", f"{scope['method']} /authorize", answer.status,
                                client_id=params.get("client_id", "")[:REASON_CHARS] or None,
                                redirect_uri=params.get("redirect_uri", "")[:REASON_CHARS] or None,
                                error=error.get("error"), error_description=error.get("error_description"))  # fmt: skip


def _not_blindly(scope: Scope, answer: Answer, location: str, error: dict[str, str]) -> None:
    """A refusal on its way to the client's redirect URI: with `iss` added (RFC 9207 §2, which the
    metadata promises), redirected there if it is this site, else shown with a link back."""
    request = Request(scope)
    site = site_url(request)
    back = construct_redirect_uri(location, iss=site)
    if _origin(back) == _origin(site):
        answer.replace(302, [(b"location", back.encode("utf-8")), (b"content-length", b"0")], b"")
        return
    shown = page(request, "oauth_consent.html", status=400, title="Authorization request refused",
                 error=f"This authorization request was refused: {error['error']}"
                       + (f": {error['error_description']}" if error.get("error_description") else "."),
                 back=back, back_host=urlsplit(back).hostname or urlsplit(back).scheme + ":")  # fmt: skip
    answer.replace(400, shown.raw_headers, bytes(shown.body))


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    return parts.scheme.lower(), parts.hostname, port


async def _token_error(send: Send, error: str, description: str) -> None:
    """A token endpoint's error answer (RFC 6749 §5.2), as the SDK's own are."""
    body = json.dumps({"error": error, "error_description": description}).encode()
    await send({"type": "http.response.start", "status": 400, "headers": [
        (b"content-type", b"application/json"), (b"cache-control", b"no-store"), (b"pragma", b"no-cache")]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def _first(values: dict[str, list[str]]) -> dict[str, str]:
    return {key: found[0] for key, found in values.items() if found}


class TokenWatch:
    """Around the SDK's `/token` route: a request naming another `resource` than its code or refresh
    token was issued for is refused (RFC 8707 §2.2, invalid_target), which the SDK does not check; a
    refused token request is recorded on the endpoint whose code or refresh token it presented (a
    successful one is recorded by the provider as it issues)."""

    def __init__(self, app: ASGIApp, flows: FlowLog, secret_hash: Any) -> None:
        self.app = app
        self.flows = flows
        self.store = flows.store
        self.secret_hash = secret_hash

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await whole_body(receive)
        answer = Answer(send)  # the refusal is in the flow before its client reads it
        if await self._other_target(body):
            # Not which one: its URL is the endpoint's secret, and a code may be in the wrong hands.
            await _token_error(answer.send, "invalid_target", "This grant was issued for another resource "
                               "than the one the request names.")  # fmt: skip
        else:
            await self.app(scope, replaying(body, receive), answer.send)
        try:
            if answer.status >= 400:
                await self._refused(body, answer.status, answer.body)
        finally:
            await answer.release()

    async def _other_target(self, body: bytes) -> bool:
        """Whether the request names another resource than the presented grant was issued for."""
        form = _first(parse_qs(body.decode("utf-8", errors="replace")))
        secret, named = form.get("code") or form.get("refresh_token"), form.get("resource")
        if not secret or named is None:
            return False  # a request without `resource` asks for the grant's own
        grant = await anyio.to_thread.run_sync(self.store.any_oauth_grant, self.secret_hash(secret))
        if grant is None:
            return False  # the SDK refuses it in its own words
        try:
            issued_for = json.loads(grant.data).get("resource")
        except (ValueError, AttributeError):
            return False
        return isinstance(issued_for, str) and issued_for != named

    async def _refused(self, body: bytes, status: int, answer: bytes) -> None:
        form = _first(parse_qs(body.decode("utf-8", errors="replace")))
        secret = form.get("code") or form.get("refresh_token")
        if not secret:
            return
        grant = await anyio.to_thread.run_sync(self.store.any_oauth_grant, self.secret_hash(secret))
        if grant is None or grant.endpoint_id is None:
            return
        try:
            error = json.loads(answer)
        except ValueError:
            error = {}
        await self.flows.record(grant.endpoint_id, "token_refused", "POST /token", status,
                                grant_type=form.get("grant_type"), presented=masked(secret), error=error.get("error"),
                                error_description=error.get("error_description"))  # fmt: skip


class RegistrationWatch:
    """Around the SDK's `/register` route: dynamic registration names no endpoint, so a client that
    registers is shown on the endpoint whose metadata its address read just before."""

    def __init__(self, app: ASGIApp, flows: FlowLog) -> None:
        self.app = app
        self.flows = flows

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint_id = self.flows.endpoint_read_by(client_key(scope)) if scope["type"] == "http" else None
        if endpoint_id is None:
            await self.app(scope, receive, send)
            return
        answer = Answer(send)  # the registration is in the flow before its client reads it
        await self.app(scope, receive, answer.send)
        try:
            await self._record(endpoint_id, answer)
        finally:
            await answer.release()

    async def _record(self, endpoint_id: str, answer: Answer) -> None:
        try:
            body = json.loads(answer.body)
        except ValueError:
            body = {}
        detail = {
            "client_id": body.get("client_id"),
            "client_name": body.get("client_name"),
            "redirect_uris": body.get("redirect_uris"),
            "auth_method": body.get("token_endpoint_auth_method"),
        }
        if answer.status != 201:
            detail = {"error": body.get("error"), "error_description": body.get("error_description")}
        await self.flows.record(
            endpoint_id, "dynamic_registration", "POST /register", answer.status, **detail
        )
