"""What the attack tests of a learner's own file share: a console on it, read until its server exits,
and how quickly another visitor's demo console still answers meanwhile."""

from __future__ import annotations

import time

from tests.support.appserver import AppProcess
from tests.support.wsclient import EnvelopeClient, McpClient, init_request


async def console_until_exit(app: AppProcess, learner: str, send_first: bool = False) -> tuple[dict, str]:
    """Open a console on the learner's file; return its exited state frame and all its stderr."""
    client = await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                          additional_headers=app.learner_headers(learner))  # fmt: skip
    stderr: list[str] = []
    try:
        if send_first:
            await client.send(init_request(version="2025-11-25"))
        while True:
            frame = await client.recv_type("stderr", "state", "relay_error", timeout=60)
            if frame["type"] == "stderr":
                stderr.append(frame["text"])
            elif frame["type"] == "state" and frame["status"] == "exited":
                return frame, "".join(stderr)
    finally:
        await client.close()


async def orders_answers_quickly(app: AppProcess) -> float:
    """Seconds for another visitor's demo-orders console to open and answer initialize."""
    began = time.monotonic()
    client = await McpClient.connect(app.ws_base + "/ws/demo-orders", origin=app.base,
                                     additional_headers=app.learner_headers("bystander"))  # fmt: skip
    try:
        assert "result" in await client.initialize()
    finally:
        await client.close()
    return time.monotonic() - began
