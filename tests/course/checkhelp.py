"""Building transcripts by hand for the hands-on check tests."""

from __future__ import annotations

import json
from typing import Any

from app.course import checks
from app.protocol import messages
from app.protocol.transcript import Transcript

CLIENT_INFO = {"name": "t", "version": "1"}


def init(id_: Any = 1, version: str = "2025-06-18", caps: dict | None = None, **params: Any) -> dict:
    """An initialize request; a param given as None is left out."""
    message = messages.initialize(id_, version, capabilities=caps, client_info=CLIENT_INFO)
    body = {**message["params"], **params}
    message["params"] = {k: v for k, v in body.items() if v is not None}
    return message


def init_result(id_: Any = 1, version: str = "2025-06-18") -> dict:
    caps = {
        "prompts": {"listChanged": False},
        "resources": {"listChanged": False},
        "tools": {"listChanged": False},
    }
    return {"jsonrpc": "2.0", "id": id_, "result": {
        "protocolVersion": version, "capabilities": caps, "serverInfo": {"name": "demo-orders", "version": ""}}}  # fmt: skip


INITIALIZED = messages.initialized()


def error(id_: Any, code: int = -32602) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": "Invalid request parameters"}}


def transcript(*messages: tuple[str, dict]) -> Transcript:
    t = Transcript(server="demo-orders")
    for who, message in messages:
        line = json.dumps(message)
        (t.add_client if who == ">" else t.add_server)(line, message)
    return t


def run(name: str, t: Transcript) -> checks.CheckResult:
    return checks.REGISTRY[name].run(t)


def passes(name: str, t: Transcript, reason: str) -> None:
    result = run(name, t)
    assert result.passed, result.reason
    assert reason in result.reason


def fails(name: str, t: Transcript, reason: str) -> None:
    result = run(name, t)
    assert not result.passed
    assert reason in result.reason, result.reason


def req(id_: Any, method: str, params: dict | None = None) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": method,
        **({"params": params} if params is not None else {}),
    }


def note(method: str, params: dict | None = None) -> dict:
    return {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}


def res(id_: Any, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def text_result(text: str, is_error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


HANDSHAKE = ((">", init()), ("<", init_result()), (">", INITIALIZED))
