"""A raw stdio MCP client for tests: the app's line client with a test's own helpers.

Nothing assumes the next line answers the last request: server-initiated requests
(`sampling/createMessage`, `roots/list`, ...) and notifications arrive in between, and some demo
servers write lines that are not JSON at all. Every read has a deadline, so no test sleeps.
"""

from __future__ import annotations

from typing import Any

from app.protocol import messages
from app.protocol.lineclient import LineClient
from tests.support import preloaded
from tests.support.appserver import ROOT

# A cold start imports the SDK (about 0.4 s here); a busy machine can take many times that.
READ_TIMEOUT_S = 60.0

Message = dict[str, Any]

HANDSHAKE_CLIENT_INFO = {"name": "playground-tests", "version": "1"}


def envelope(capabilities: dict[str, Any] | None = None, version: str = "2026-07-28") -> dict[str, Any]:
    """The `_meta` every 2026-07-28 request carries."""
    return messages.envelope(capabilities, version)


class RawClient(LineClient):
    """One demo server as a subprocess, read line by line in arrival order."""

    def __init__(self, module: str) -> None:
        super().__init__(module, ROOT, read_timeout_s=READ_TIMEOUT_S, python=preloaded.interpreter())

    def call(self, method: str, params: dict[str, Any] | None = None) -> Message:
        """Request and response, failing if anything else arrives in between."""
        response, before = self.until_response(self.request(method, params))
        assert before == [], f"unexpected messages before the response: {before}"
        return response

    def initialize(self, capabilities: dict[str, Any] | None = None, version: str = "2025-11-25") -> Message:
        """The handshake: initialize, then notifications/initialized; returns the initialize result."""
        opening, done = messages.handshake(
            capabilities=capabilities, revision=version, client_info=HANDSHAKE_CLIENT_INFO
        )
        reply = self.call("initialize", opening["params"])
        self.send(done)
        return reply["result"]
