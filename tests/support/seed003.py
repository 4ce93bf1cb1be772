"""Seed 003's raw-stdio session with demo-orders: the messages it sends and the lines it printed.

`drive(call, send)` replays the session against any transport (a subprocess, the sandbox, the relay)
and returns the lines the seed's script printed, so one comparison serves every test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

EXPECTED_LINES = [
    "server: demo-orders | protocol: 2025-06-18",
    # SDK 2.3 no longer lists `experimental` (the seed ran 2.2.0).
    "capabilities: ['prompts', 'resources', 'tools']",
    "tools: ['get_order_status']",
    'input schema: {"properties": {"order_id": {"title": "Order Id", "type": "string"}}, "required": '
    '["order_id"], "type": "object", "title": "get_order_statusArguments"}',
    'call ok     : {\n  "order_id": "481516",\n  "status": "shipped"\n} | isError: False',
    'call bad id : {\n  "error": "order_id must be exactly 6 digits"\n}',
    "missing arg : isError True | Error executing tool get_order_status: 1 validation error fo",
    "unknown     : -32601 Method not found",
    "resources: ['policy://refunds']",
    "read: Refunds above 5000 rupees need approval.",
    "prompt: Classify this ticket as billing, technical or other: I was charged twice",
]

Call = Callable[[int, str, dict[str, Any] | None], dict[str, Any]]
Send = Callable[[dict[str, Any]], None]


def request(id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": method,
        **({"params": params} if params is not None else {}),
    }


def drive(call: Call, send: Send) -> list[str]:
    out = []
    init = call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "demo-client", "version": "0.1"}})  # fmt: skip
    out.append(
        f"server: {init['result']['serverInfo']['name']} | protocol: {init['result']['protocolVersion']}"
    )
    out.append(f"capabilities: {sorted(init['result']['capabilities'])}")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = call(2, "tools/list", None)["result"]["tools"]
    out.append(f"tools: {[t['name'] for t in tools]}")
    out.append(f"input schema: {json.dumps(tools[0]['inputSchema'])}")
    ok = call(3, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "481516"}})
    out.append(f"call ok     : {ok['result']['content'][0]['text']} | isError: {ok['result'].get('isError')}")
    bad = call(4, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "12"}})
    out.append(f"call bad id : {bad['result']['content'][0]['text']}")
    missing = call(5, "tools/call", {"name": "get_order_status", "arguments": {}})
    text = missing["result"]["content"][0]["text"][:60].replace(chr(10), " ")
    out.append(f"missing arg : isError {missing['result'].get('isError')} | {text}")
    unknown = call(6, "no/such/method", None)
    out.append(f"unknown     : {unknown['error']['code']} {unknown['error']['message']}")
    resources = call(7, "resources/list", None)["result"]["resources"]
    out.append(f"resources: {[r['uri'] for r in resources]}")
    read = call(8, "resources/read", {"uri": "policy://refunds"})
    out.append(f"read: {read['result']['contents'][0]['text']}")
    prompt = call(9, "prompts/get", {"name": "triage", "arguments": {"ticket": "I was charged twice"}})
    out.append(f"prompt: {prompt['result']['messages'][0]['content']['text']}")
    return out
