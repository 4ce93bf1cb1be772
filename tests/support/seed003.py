"""Seed 003's raw-stdio session with demo-orders: the messages it sends and the lines it printed.

`SCRIPT` is the session; `render(replies)` gives the lines the seed's script printed, so one
comparison serves every transport (a subprocess, the sandbox, the relay).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

EXPECTED_LINES = [
    "server: demo-orders | protocol: 2025-06-18",
    # SDK 2.3 no longer lists `experimental` (the seed ran 2.2.0).
    "capabilities: ['prompts', 'resources', 'tools']",
    # Lesson 25 added `show_order` (an MCP App), which the SDK lists first; the seed printed the first
    # tool's schema.
    "tools: ['show_order', 'get_order_status']",
    'input schema: {"properties": {"order_id": {"title": "Order Id", "type": "string"}}, "required": '
    '["order_id"], "type": "object", "title": "show_orderArguments"}',
    'call ok     : {\n  "order_id": "481516",\n  "status": "shipped"\n} | isError: False',
    'call bad id : {\n  "error": "order_id must be exactly 6 digits"\n}',
    "missing arg : isError True | Error executing tool get_order_status: 1 validation error fo",
    "unknown     : -32601 Method not found",
    "resources: ['ui://orders/order-card.html', 'policy://refunds']",
    "read: Refunds above 5000 rupees need approval.",
    "prompt: Classify this ticket as billing, technical or other: I was charged twice",
]

Call = Callable[[int, str, dict[str, Any] | None], dict[str, Any]]
Send = Callable[[dict[str, Any]], None]

# The seed's session in order: ("call", id, method, params) waits for a reply; ("send", message) does not.
SCRIPT: list[tuple] = [
    ("call", 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "demo-client", "version": "0.1"}}),
    ("send", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ("call", 2, "tools/list", None),
    ("call", 3, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "481516"}}),
    ("call", 4, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "12"}}),
    ("call", 5, "tools/call", {"name": "get_order_status", "arguments": {}}),
    ("call", 6, "no/such/method", None),
    ("call", 7, "resources/list", None),
    ("call", 8, "resources/read", {"uri": "policy://refunds"}),
    ("call", 9, "prompts/get", {"name": "triage", "arguments": {"ticket": "I was charged twice"}}),
]  # fmt: skip


def render(replies: dict[int, dict[str, Any]]) -> list[str]:
    """The lines the seed's script printed, from the replies by id."""
    init = replies[1]["result"]
    tools = replies[2]["result"]["tools"]
    ok, bad, missing = replies[3]["result"], replies[4]["result"], replies[5]["result"]
    unknown = replies[6]["error"]
    return [
        f"server: {init['serverInfo']['name']} | protocol: {init['protocolVersion']}",
        f"capabilities: {sorted(init['capabilities'])}",
        f"tools: {[t['name'] for t in tools]}",
        f"input schema: {json.dumps(tools[0]['inputSchema'])}",
        f"call ok     : {ok['content'][0]['text']} | isError: {ok.get('isError')}",
        f"call bad id : {bad['content'][0]['text']}",
        f"missing arg : isError {missing.get('isError')} | {missing['content'][0]['text'][:60].replace(chr(10), ' ')}",
        f"unknown     : {unknown['code']} {unknown['message']}",
        f"resources: {[r['uri'] for r in replies[7]['result']['resources']]}",
        f"read: {replies[8]['result']['contents'][0]['text']}",
        f"prompt: {replies[9]['result']['messages'][0]['content']['text']}",
    ]


def drive(call: Call, send: Send) -> list[str]:
    """Replay the session over a synchronous transport and return the lines it prints."""
    replies = {}
    for step in SCRIPT:
        if step[0] == "send":
            send(step[1])
        else:
            replies[step[1]] = call(step[1], step[2], step[3])
    return render(replies)
