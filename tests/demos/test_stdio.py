"""app.demos.stdio: the demos' thread-free stdio, as a client and a careless handler meet it."""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import os
import subprocess
import sys

from mcp.server import Server, runner
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.mcpserver import MCPServer

from app.demos import stdio
from app.protocol import messages
from app.protocol.lineclient import LineClient, StreamClosed
from tests.support.pins import pinned
from tests.support.stdio import ROOT, StdioServer

HANDSHAKE = messages.handshake(1, client_info={"name": "t", "version": "1"})


def shake(server: LineClient) -> None:
    for message in HANDSHAKE:
        server.send(message)
    assert server.read()["id"] == 1


def test_a_handlers_print_goes_to_stderr_and_its_stdin_read_finds_nothing() -> None:
    with LineClient("tests.fixtures.noisy_server", ROOT) as server:
        shake(server)
        server.request("tools/call", {"name": "shout", "arguments": {"word": "hello"}}, 2)
        reply = server.read()  # the very next stdout line is the reply: the print did not land there
        assert reply["id"] == 2
        assert reply["result"]["content"][0]["text"] == "HELLO, stdin gave ''"
        assert "stray output: hello" in server.stderr_line()
        server.request("ping", None, 3)  # the wire still works after the handler touched fd 0 and 1
        assert server.read() == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_a_line_longer_than_asyncios_default_limit_is_answered() -> None:
    with StdioServer() as server:
        shake(server)
        long_id = "7" * (2 * 1024 * 1024)  # asyncio's readline stops at 64 KiB unless told otherwise
        reply = server.call(2, "tools/call", {"name": "get_order_status", "arguments": {"order_id": long_id}})
        assert "order_id must be exactly 6 digits" in reply["result"]["content"][0]["text"]


def test_a_line_over_the_cap_is_dropped_said_on_stderr_and_the_next_is_answered() -> None:
    """From another writer than the relay (which forwards nothing over its own limit): the line is
    thrown away, to its newline, and the server goes on."""
    with StdioServer() as server:
        shake(server)
        server.send_line('{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "'
                         + "x" * stdio.MAX_LINE_BYTES + '"}}')  # fmt: skip
        assert "dropped a line over" in server.stderr_line()
        assert server.call(3, "ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_stdin_that_is_a_file_is_served_by_the_sdks_own_threads(tmp_path) -> None:
    requests = tmp_path / "requests.jsonl"
    lines = [
        *HANDSHAKE,
        messages.request(2, "tools/call", {"name": "get_order_status", "arguments": {"order_id": "123456"}}),
    ]
    requests.write_text("".join(json.dumps(m) + "\n" for m in lines))
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "app.demos.orders"], cwd=ROOT, stdin=stdin, capture_output=True, timeout=60,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert replies[0]["result"]["serverInfo"]["name"] == "demo-orders"


def test_end_of_stdin_ends_the_server() -> None:
    server = StdioServer()
    shake(server)
    assert server.close() == 0


def test_only_pipes_sockets_and_terminals_are_served_on_the_loop(tmp_path) -> None:
    with (tmp_path / "f").open("w") as regular:
        assert not stdio._pipe_like(regular.fileno())
    assert not stdio._pipe_like(10_000)  # not open at all
    read, write = os.pipe()
    try:
        assert stdio._pipe_like(read) and stdio._pipe_like(write)
    finally:
        os.close(read)
        os.close(write)


def test_the_demos_serve_without_the_sdks_tracing_middleware() -> None:
    # Under the SDK's default every message opens a span (a tenth of a call's CPU, for spans a
    # sandboxed demo can never export); the demos opt out, and the fork server warms the same path.
    with LineClient("tests.fixtures.traced_orders", ROOT) as server:
        shake(server)
        server.request("tools/call", {"name": "get_order_status", "arguments": {"order_id": "481516"}}, 2)
        assert server.read()["id"] == 2
        assert server.close() == 0
        stderr = []
        while True:
            try:
                stderr.append(server.stderr_line())
            except StreamClosed:
                break
    # The probe shows that the tracer reports what the SDK opens; serving opened nothing after it.
    assert [line for line in stderr if line.startswith("span:")] == ["span: probe"]


def test_untraced_drops_only_the_tracing_middleware() -> None:
    server = MCPServer("t")
    middleware = server.middleware

    async def ours(ctx, call_next):  # noqa: ANN001, ANN202
        return await call_next(ctx)

    middleware.append(ours)
    assert any(isinstance(m, OpenTelemetryMiddleware) for m in middleware)  # the SDK's default
    kept = [m for m in middleware if not isinstance(m, OpenTelemetryMiddleware)]
    assert stdio.untraced(stdio.untraced(server)).middleware == kept
    assert stdio.lowlevel(server).middleware == kept  # the list the low-level server runs
    assert ours in kept and len(kept) >= 2  # the SDK's other middleware stays too


def test_the_sdk_reached_into_is_the_one_pinned_and_has_what_is_used() -> None:
    # An upgrade must come here first: app/demos/stdio.py reaches these by name.
    version = importlib.metadata.version("mcp")
    assert version == pinned("mcp"), (
        f"mcp {version} is installed, {pinned('mcp')} pinned: re-check app/demos/stdio.py"
    )
    server = MCPServer("t")
    inner = stdio.lowlevel(server)
    assert isinstance(inner, Server) and inner.name == "t"
    assert inner.middleware is server.middleware
    assert isinstance(server.middleware[0], OpenTelemetryMiddleware)
    for method in ("add_request_handler", "create_initialization_options", "run", "lifespan"):
        assert callable(getattr(inner, method, None)), f"the SDK's low-level Server has no {method}"
    parameters = inspect.signature(runner._serve_modern_stream).parameters
    assert list(parameters)[:3] == ["server", "read_stream", "write_stream"], list(parameters)
    assert {"lifespan_state", "raise_exceptions"} <= set(parameters), list(parameters)
