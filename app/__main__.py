"""`python -m app [--host H] [--port P]` serves the playground; `python -m app check-lessons` checks lessons."""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from typing import TYPE_CHECKING

import uvicorn

from app import logs
from app.config import Settings, token_problem, unknown_settings

if TYPE_CHECKING:
    from fastapi import FastAPI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app", description="MCP Playground")
    parser.add_argument("command", nargs="?", default="serve", choices=["serve", "check-lessons"])
    parser.add_argument("--host", help="address to bind (default 127.0.0.1; anything else is hosting mode)")
    parser.add_argument("--port", type=int, help="port (default 8000)")
    args = parser.parse_args(argv)
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = Settings(**overrides)
    logs.configure(settings.log_format)
    for name in unknown_settings(os.environ):
        print(
            f"Warning: {name} is not a setting, and is ignored (docs/settings.md lists them).",
            file=sys.stderr,
        )
    if args.command == "check-lessons":
        from app.check_lessons import check_lessons

        return check_lessons(settings)
    if (problem := token_problem(settings)) is not None:  # said plainly, before anything starts
        print(f"Refusing to start: {problem}", file=sys.stderr, flush=True)
        return 2
    from app.main import create_app

    app = create_app(settings)
    # Once the fork server is up, the web process stops being root (app/privileges.py).
    app.state.playground.drop_privileges = True
    app.state.playground.tend_heap = True
    print(f"MCP Playground on http://{settings.host}:{settings.port}", file=sys.stderr, flush=True)
    config = server_config(app, settings)
    server = uvicorn.Server(config)
    # Bound now, while still root (uvicorn would bind only after the lifespan, which drops root):
    # a port below 1024 works, and the drop never depends on the port.
    sock = config.bind_socket()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0 if server.started else 1


def server_config(app: FastAPI, settings: Settings) -> uvicorn.Config:
    """uvicorn's settings for the app, as `python -m app` serves it (tests serve it so too)."""
    from app.web.wsprotocol import HttpProtocol, WebSocketProtocol

    return uvicorn.Config(
        app, host=settings.host, port=settings.port, ws_max_size=settings.max_frame_bytes,
        # uvicorn's httptools protocol, leaving no cycle behind an upgrade, and each connection held
        # to its caps and time-outs (app/web/connections.py), as a WebSocket too once upgraded
        # (websockets' sans-I/O protocol: measured a little quicker per message here)
        # uvicorn only calls what it is given, so a partial stands in for the class it is typed as
        http=partial(HttpProtocol, connections=app.state.playground.connections),  # type: ignore[arg-type]
        ws=partial(WebSocketProtocol, connections=app.state.playground.connections),  # type: ignore[arg-type]
        ws_per_message_deflate=False,  # small JSON messages; a zlib context per connection costs memory
        ws_ping_interval=20, ws_ping_timeout=20, log_level="info", timeout_graceful_shutdown=5,
        log_config=None,  # our handler (app/logs.py) formats uvicorn's lines too
        proxy_headers=False,  # the client address is decided in one place: app/web/learner.py
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
