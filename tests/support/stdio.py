"""A demo server as a plain subprocess speaking stdio, the way seed 003 drives it: each request's
reply is the next line."""

from __future__ import annotations

from typing import Any

from app.protocol.lineclient import LineClient
from tests.support.appserver import ROOT

# A cold start imports the SDK (about 0.4 s here); a busy machine can take many times that.
READ_TIMEOUT_S = 60.0


class StdioServer(LineClient):
    def __init__(self, module: str = "app.demos.orders") -> None:
        super().__init__(module, ROOT, read_timeout_s=READ_TIMEOUT_S)

    def call(self, id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; the next line is taken as its reply."""
        self.request(method, params, id_)
        return self.read()
