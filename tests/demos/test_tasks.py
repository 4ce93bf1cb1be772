"""demo-tasks: the tasks extension on 2026-07-28: create, poll, result, cancel, and the -32021 refusals."""

from __future__ import annotations

import time
from typing import Any

from tests.support.rawclient import RawClient, envelope

TASKS = envelope({"extensions": {"io.modelcontextprotocol/tasks": {}}})
REQUIRED = {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
POLL_DEADLINE_S = 20.0


def _render(client: RawClient, seconds: int) -> dict[str, Any]:
    params = {"_meta": TASKS, "name": "render_video", "arguments": {"title": "Intro", "seconds": seconds}}
    return client.call("tools/call", params)["result"]


def test_discover_advertises_the_extension() -> None:
    with RawClient("app.demos.tasks") as client:
        found = client.call("server/discover", {"_meta": envelope()})["result"]
        assert found["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}


def test_a_long_tool_without_the_extension_is_minus_32021_naming_it() -> None:
    with RawClient("app.demos.tasks") as client:
        params = {"_meta": envelope(), "name": "render_video", "arguments": {"title": "Intro"}}
        error = client.call("tools/call", params)["error"]
        assert error["code"] == -32021 and error["data"] == REQUIRED


def test_a_task_is_created_then_polled_to_its_result() -> None:
    with RawClient("app.demos.tasks") as client:
        created = _render(client, 1)
        assert created["resultType"] == "task" and created["status"] == "working"
        assert {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= set(created)
        task_id = created["taskId"]
        polled = client.call("tasks/get", {"_meta": TASKS, "taskId": task_id})["result"]
        assert polled["resultType"] == "complete" and polled["taskId"] == task_id  # at once: durable
        deadline = time.monotonic() + POLL_DEADLINE_S
        while polled["status"] == "working" and time.monotonic() < deadline:
            time.sleep(polled["pollIntervalMs"] / 1000)
            polled = client.call("tasks/get", {"_meta": TASKS, "taskId": task_id})["result"]
        assert polled["status"] == "completed"
        assert polled["result"] == {
            "content": [{"type": "text", "text": "Rendered 'Intro': 1 s at 24 fps (24 frames)."}],
            "isError": False,
        }


def test_cancel_is_acknowledged_and_the_task_ends_cancelled() -> None:
    with RawClient("app.demos.tasks") as client:
        task_id = _render(client, 30)["taskId"]
        ack = client.call("tasks/cancel", {"_meta": TASKS, "taskId": task_id})["result"]
        assert ack["resultType"] == "complete" and set(ack) == {"resultType", "_meta"}
        polled = client.call("tasks/get", {"_meta": TASKS, "taskId": task_id})["result"]
        assert polled["status"] == "cancelled" and "result" not in polled


def test_a_finished_task_stays_completed_after_a_cancel() -> None:
    with RawClient("app.demos.tasks") as client:
        task_id = _render(client, 1)["taskId"]
        time.sleep(1.2)
        client.call("tasks/cancel", {"_meta": TASKS, "taskId": task_id})
        assert (
            client.call("tasks/get", {"_meta": TASKS, "taskId": task_id})["result"]["status"] == "completed"
        )


def test_unknown_ids_and_undeclared_clients_are_refused() -> None:
    with RawClient("app.demos.tasks") as client:
        unknown = client.call("tasks/get", {"_meta": TASKS, "taskId": "no-such-task"})["error"]
        assert unknown == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
        task_id = _render(client, 5)["taskId"]
        undeclared = client.call("tasks/get", {"_meta": envelope(), "taskId": task_id})["error"]
        assert undeclared["code"] == -32021 and undeclared["data"] == REQUIRED
        assert client.call("tasks/cancel", {"_meta": TASKS, "taskId": "nope"})["error"]["code"] == -32602


def test_tasks_update_without_outstanding_input_is_acknowledged_and_ignored() -> None:
    with RawClient("app.demos.tasks") as client:
        task_id = _render(client, 5)["taskId"]
        params = {"_meta": TASKS, "taskId": task_id, "inputResponses": {"never-asked": {"action": "accept"}}}
        assert client.call("tasks/update", params)["result"]["resultType"] == "complete"
        assert client.call("tasks/get", {"_meta": TASKS, "taskId": task_id})["result"]["status"] == "working"


def test_the_quick_tool_answers_directly_even_when_tasks_are_possible() -> None:
    with RawClient("app.demos.tasks") as client:
        params = {"_meta": TASKS, "name": "render_thumbnail", "arguments": {"title": "Intro"}}
        result = client.call("tools/call", params)["result"]
        assert result["resultType"] == "complete"
        assert result["content"][0]["text"] == "Thumbnail for 'Intro': 320x180 px, ready."


def test_task_ids_are_not_guessable_from_one_another() -> None:
    with RawClient("app.demos.tasks") as client:
        ids = {_render(client, 5)["taskId"] for _ in range(3)}
        assert len(ids) == 3 and all(len(task_id) == 36 for task_id in ids)


def test_a_handshake_connection_gets_no_task() -> None:
    with RawClient("app.demos.tasks") as client:
        client.initialize()
        quick = client.call("tools/call", {"name": "render_thumbnail", "arguments": {"title": "A"}})
        assert quick["result"]["isError"] is False
        long = client.call("tools/call", {"name": "render_video", "arguments": {"title": "A"}})
        assert long["error"]["code"] == -32021
