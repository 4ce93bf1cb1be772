"""Kill the app with SIGKILL mid-session, start it again: no orphan servers, progress intact."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

from app.web.learner import COOKIE
from tests.support.appserver import AppProcess
from tests.support.procs import processes_in_uid_range, wait_until
from tests.support.wsclient import EnvelopeClient, init_request

STEP = "initialize-handshake/versions"


def test_sigkill_and_restart_keeps_progress_and_leaves_no_orphans(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = AppProcess(data, warm_pool_size=1)
    first.start()
    try:
        with first.client() as client:
            client.post("/api/identity").raise_for_status()  # as a console page asks
            client.get(f"/course/{STEP}").raise_for_status()
            learner = client.cookies[COOKIE]
            client.post(
                f"/api/course/{STEP}/quiz/unknown-revision", json={"choices": ["a"]}
            ).raise_for_status()

        async def pass_a_check_then_die() -> None:
            console = await EnvelopeClient.connect(
                f"{first.ws_base}/ws/demo-orders?step={STEP}",
                additional_headers={"Cookie": f"{COOKIE}={learner}"},
            )
            await console.recv_type("state")
            await console.send_text(json.dumps(init_request(version="1999-01-01")))
            while not (frame := await console.recv_type("check"))["passed"]:
                pass
            assert frame["check"] == "version-counter-offer"
            first.stop(signal.SIGKILL)  # mid-session, with its servers running
            await console.ws.wait_closed()

        asyncio.run(pass_a_check_then_die())
        low, high = first.uid_base, first.uid_base + 1000
        assert wait_until(lambda: not processes_in_uid_range(low, high), 30), processes_in_uid_range(
            low, high
        )
    finally:
        first.stop()

    with (
        AppProcess(data, warm_pool_size=1) as second,
        second.client(cookies={COOKIE: learner}) as client,
    ):
        progress = client.get("/api/progress").json()
        step = progress["steps"][STEP]
        assert step["seen"] is True
        assert step["quizzes"]["unknown-revision"]["correct"] is True
        assert step["checks"]["version-counter-offer"] is True
