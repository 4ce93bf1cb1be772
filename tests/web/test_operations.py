"""Operations: structured logs with the session id, and a graceful shutdown that ends every server."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from pathlib import Path

import pytest
import websockets

from app.logs import JsonFormatter, RedactSecrets, configure
from app.web.wsprotocol import QuietLog
from tests.support.appserver import AppProcess
from tests.support.inprocess import ServedApp
from tests.support.procs import processes_in_uid_range, wait_until
from tests.support.wsclient import McpClient


def test_json_log_lines_carry_the_session() -> None:
    record = logging.LogRecord("app.relay", logging.INFO, __file__, 1, "session %s started", ("abc",), None)
    record.session, record.server = "abc", "demo-orders"
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "session abc started"
    assert (line["session"], line["server"], line["level"]) == ("abc", "demo-orders", "info")


def test_a_websockets_chatter_line_is_never_made_and_every_other_line_is() -> None:
    logger = logging.getLogger("test.quiet")
    made: list[logging.LogRecord] = []

    class Count(logging.Filter):  # a filter sees every record the logger makes
        def filter(self, record: logging.LogRecord) -> bool:
            made.append(record)
            return False

    logger.addFilter(counter := Count())
    logger.setLevel(logging.INFO)
    try:
        quiet = QuietLog(logger)
        quiet.info("connection open")
        quiet.info('%s - "WebSocket %s" [accepted]', "127.0.0.1:1", "/ws/demo-orders")
        quiet.info("connection closed")
        assert made == []
        quiet.info('%s - "WebSocket %s" %d', "127.0.0.1:1", "/ws/nope", 404)
        quiet.info("connection rejected (%d %s)", 404, "Not Found")
        quiet.error("ASGI callable returned without completing handshake.")
        assert [r.getMessage() for r in made] == ['127.0.0.1:1 - "WebSocket /ws/nope" 404',
                                                  "connection rejected (404 Not Found)",
                                                  "ASGI callable returned without completing handshake."]  # fmt: skip
        assert [r.name for r in made] == ["test.quiet"] * 3
        assert quiet.level == logging.INFO
    finally:
        logger.removeFilter(counter)


def test_an_unknown_log_format_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match='"text" or "json"'):
        configure("xml")


def test_a_session_logs_its_start_and_end_once_and_a_refused_handshake_still_logs(tmp_path: Path) -> None:
    """The relay's two lines per session, not uvicorn's and websockets' three more per connection."""
    with ServedApp(tmp_path, warm_pool_size=1) as app:

        async def visit() -> None:
            client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
            await client.initialize()
            await client.close()
            with pytest.raises(websockets.InvalidStatus):
                await McpClient.connect(app.ws_base + "/ws/no-such-server")
            with pytest.raises(websockets.InvalidStatus):
                await McpClient.connect(app.ws_base + "/ws/demo-orders", origin="http://elsewhere.example")

        asyncio.run(visit())
        assert wait_until(lambda: " ended: " in app.log() and "connection rejected (403" in app.log(), 30)
        log = app.log()
        assert log.count(" started: demo-orders") == 1
        assert "connection open" not in log and "connection closed" not in log
        assert "[accepted]" not in log
        assert '"WebSocket /ws/no-such-server" 404' in log and "connection rejected (404" in log
        # A refusal is the visitor's mistake, not the server's: no error line (any visitor could
        # fill the error log with them).
        assert "without completing handshake" not in log
        assert not [line for line in log.splitlines() if " ERROR " in line]


def test_sigterm_ends_every_server_and_logs_sessions_as_json(tmp_path: Path) -> None:
    app = AppProcess(tmp_path, log_format="json", warm_pool_size=1)
    app.start()
    try:
        low, high = app.uid_base, app.uid_base + 1000

        async def hold() -> McpClient:
            client = await McpClient.connect(app.ws_base + "/ws/demo-orders")
            await client.initialize()
            return client

        loop = asyncio.new_event_loop()
        try:
            client = loop.run_until_complete(hold())
            assert loop.run_until_complete(client.call(2, "ping", {}))["result"] == {}  # its server is live
            # uvicorn shuts down gracefully, then re-raises the signal it caught.
            assert app.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
            assert "Application shutdown complete" in app.log()
            # Graceful: every server ended before the app exited, not after.
            assert not processes_in_uid_range(low, high)
            loop.run_until_complete(client.closed())
        finally:
            loop.close()
        lines = [json.loads(line) for line in app.log().splitlines() if line.startswith("{")]
        started = [
            line for line in lines if line["message"].startswith("session ") and "started" in line["message"]
        ]
        assert started and started[0]["server"] == "demo-orders" and started[0]["session"]
    finally:
        app.stop()


def test_a_long_query_or_path_is_cut_in_the_access_log_and_its_secrets_go_first() -> None:
    """From the side of a visitor sending an 8 KiB query, or a 60,000-character path, on every request at
    its pace: each access line held all of it (1.6 MB, or 12 MB, of log a second from one address, and
    no rotation in the app)."""
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("10.0.0.1:5", "GET", "/healthz?x=" + "a" * 8000, "1.1", 200), None)  # fmt: skip
    RedactSecrets().filter(record)
    assert len(record.getMessage()) < 600 and record.getMessage().endswith('a… HTTP/1.1" 200')
    long_secret = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, "%s", ("/x?a=1&code=" + "S" * 1000 + "&b=2",), None
    )
    RedactSecrets().filter(long_secret)
    assert long_secret.getMessage() == "/x?a=1&code=…&b=2"  # redacted whole, not cut in the middle
    long_path = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                                  ("10.0.0.1:5", "GET", "/static/" + "p" * 60_000 + "?q=1", "1.1", 404), None)  # fmt: skip
    RedactSecrets().filter(long_path)  # a 60,000-character path fits a request head
    assert len(long_path.getMessage()) < 600 and long_path.getMessage().endswith('p…?q=1 HTTP/1.1" 404')
