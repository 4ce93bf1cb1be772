"""The fork server's warm-up: one real session against each SDK server, leaving no thread behind."""

from __future__ import annotations

import json
import threading

from app.demos import orders
from app.sandbox.warmup import warm_up


def test_warm_up_runs_a_real_session_and_leaves_no_thread() -> None:
    # Threads of this test process's own (an in-process app's, from another test) may run meanwhile.
    before = set(threading.enumerate())
    replies = [json.loads(line) for line in warm_up(orders.server, orders.WARM_UP)]
    requests = [m for m in orders.WARM_UP if "id" in m]
    assert [r["id"] for r in replies] == [m["id"] for m in requests]
    assert replies[0]["result"]["serverInfo"]["name"] == "demo-orders"
    assert json.loads(replies[2]["result"]["content"][0]["text"]) == {
        "order_id": "123456",
        "status": "shipped",
    }
    # The sync tool ran in a worker thread, which has ended (as the fork server, with one thread, needs).
    assert not set(threading.enumerate()) - before
