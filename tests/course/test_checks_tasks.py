"""Lesson 20, the tasks extension: the -32021 refusal, a task handle, polling to the result, cancelling."""

from __future__ import annotations

from app.protocol import messages
from tests.course.checkhelp import fails, passes, req, res, text_result, transcript

EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TASKS = messages.envelope(EXT)
PLAIN = messages.envelope()
RENDER = req(2, "tools/call", {"_meta": TASKS, "name": "render_video", "arguments": {"title": "Intro"}})
TASK = {"resultType": "task", "taskId": "t-1", "status": "working", "pollIntervalMs": 1000}
CREATED = (("<", res(2, TASK)),)


def _get(id_: int, task_id: str = "t-1") -> dict:
    return req(id_, "tasks/get", {"_meta": TASKS, "taskId": task_id})


def test_task_extension_required() -> None:
    bare = req(2, "tools/call", {"_meta": PLAIN, "name": "render_video", "arguments": {"title": "Intro"}})
    refusal = {"code": -32021, "message": "Missing", "data": {"requiredCapabilities": EXT}}
    fails("task-extension-required", transcript(), "clientCapabilities are `{}`")
    fails("task-extension-required", transcript((">", bare)), "Waiting for the reply")
    fails("task-extension-required", transcript((">", RENDER), *CREATED), "leave `extensions` out")
    passes(
        "task-extension-required",
        transcript((">", bare), ("<", {"jsonrpc": "2.0", "id": 2, "error": refusal})),
        "-32021",
    )


def test_task_created() -> None:
    fails("task-created", transcript(), "declaring the tasks extension")
    refusal = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32021, "message": "Missing"}}
    fails("task-created", transcript((">", RENDER), ("<", refusal)), 'declare `"extensions"')
    fails("task-created", transcript((">", RENDER), ("<", res(2, text_result("x")))), "A plain result")
    passes("task-created", transcript((">", RENDER), *CREATED), "Task t-1 is working; poll it every 1000 ms")


def test_task_completed() -> None:
    fails("task-completed", transcript(), "Create a task first")
    fails("task-completed", transcript((">", RENDER), *CREATED), "Now poll")
    fails(
        "task-completed",
        transcript((">", RENDER), *CREATED, (">", _get(3, "other"))),
        "named no task of yours",
    )
    working = res(3, {"resultType": "complete", "taskId": "t-1", "status": "working", "pollIntervalMs": 1000,
                      "statusMessage": "2 of 5 s done."})  # fmt: skip
    fails("task-completed", transcript((">", RENDER), *CREATED, (">", _get(3))), "Waiting for the reply")
    fails(
        "task-completed",
        transcript((">", RENDER), *CREATED, (">", _get(3)), ("<", working)),
        "Poll again after 1000 ms",
    )
    done = res(
        4,
        {
            "resultType": "complete",
            "taskId": "t-1",
            "status": "completed",
            "result": text_result("Rendered."),
        },
    )
    passes(
        "task-completed",
        transcript((">", RENDER), *CREATED, (">", _get(4)), ("<", done)),
        "Completed (message #4): Rendered.",
    )


def test_task_cancelled() -> None:
    cancel = req(3, "tasks/cancel", {"_meta": TASKS, "taskId": "t-1"})
    acked = (">", cancel), ("<", res(3, {"resultType": "complete"}))
    fails("task-cancelled", transcript(), "Create a long task first")
    fails("task-cancelled", transcript((">", RENDER), *CREATED), "Send `tasks/cancel`")
    fails("task-cancelled", transcript((">", RENDER), *CREATED, (">", cancel)), "Waiting for the reply")
    fails("task-cancelled", transcript((">", RENDER), *CREATED, *acked), "Now poll `tasks/get`")
    stopped = res(4, {"resultType": "complete", "taskId": "t-1", "status": "cancelled"})
    passes(
        "task-cancelled",
        transcript((">", RENDER), *CREATED, *acked, (">", _get(4)), ("<", stopped)),
        "shows it cancelled",
    )
    finished = res(4, {"resultType": "complete", "taskId": "t-1", "status": "completed", "result": {}})
    fails(
        "task-cancelled",
        transcript((">", RENDER), *CREATED, *acked, (">", _get(4)), ("<", finished)),
        "cooperative",
    )
