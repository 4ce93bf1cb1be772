"""The fork server's warm-up: one real session against each SDK server, leaving no thread behind."""

from __future__ import annotations

import json
import threading

from app.demos import orders
from app.sandbox.warmup import warm_up


def test_warm_up_runs_a_real_session_and_leaves_one_thread() -> None:
    replies = [json.loads(line) for line in warm_up(orders.server, orders.WARM_UP)]
    requests = [m for m in orders.WARM_UP if "id" in m]
    assert [r["id"] for r in replies] == [m["id"] for m in requests]
    assert replies[0]["result"]["serverInfo"]["name"] == "demo-orders"
    assert json.loads(replies[2]["result"]["content"][0]["text"]) == {
        "order_id": "123456",
        "status": "shipped",
    }
    assert threading.active_count() == 1  # the sync tool ran in a worker thread, which has ended
