"""demo-tasks: the tasks extension (`io.modelcontextprotocol/tasks`) on a 2026-07-28 server.

`render_video` is long: for a client that declared the extension in its request's capabilities it
returns a task handle (`resultType: "task"`) at once, and the client polls `tasks/get` until the task
is `completed` and carries the tool's result; `tasks/cancel` asks it to stop. A client that did not
declare the extension gets -32021 naming it, since this tool cannot be served without a task.
`render_thumbnail` is quick: it answers with a plain result even when tasks are possible, because
the server alone decides, per request, whether to make a task.

The extension's methods ride the SDK's Extension API (MethodBinding, intercept_tool_call); the SDK
ships no tasks extension for 2026-07-28, so the wire behaviour follows the extension's text
(modelcontextprotocol/ext-tasks, specification/draft/tasks.md). A task's state is computed from
the clock: a render of N seconds started at t is `working` until t + N, then `completed`.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, CallToolRequestParams, RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from app.demos.stdio import serving
from app.protocol import messages

INFO = {
    "name": "demo-tasks",
    "title": "Render farm (tasks extension)",
    "description": (
        "A render farm whose long renders become tasks (the io.modelcontextprotocol/tasks extension): "
        "create one with tools/call, poll it with tasks/get, cancel it with tasks/cancel."
    ),
    # What the console's templates offer for this server (the quick tool: a result in any era).
    "samples": [
        {"method": "tools/call", "params": {"name": "render_thumbnail", "arguments": {"title": "Intro"}}}
    ],
}

EXTENSION_ID = "io.modelcontextprotocol/tasks"
TASK_TTL_MS = 600_000  # a task is kept ten minutes after it was created, then forgotten
POLL_INTERVAL_MS = 1_000
MAX_SECONDS = 60
FPS = 24


@dataclass
class Task:
    """One render's durable state: what a `tasks/get` reports is computed from it and the clock."""

    task_id: str
    seconds: int
    title: str
    started: float  # time.monotonic() at creation
    created_at: str  # ISO 8601, as the Task shape asks
    cancelled_at: float | None = None
    updated_at: str = field(default="")

    def status(self, now: float) -> str:
        if self.cancelled_at is not None and self.cancelled_at < self.started + self.seconds:
            return "cancelled"
        return "completed" if now >= self.started + self.seconds else "working"

    def expired(self, now: float) -> bool:
        return now > self.started + TASK_TTL_MS / 1000

    def wire(self, now: float) -> dict[str, Any]:
        """The task as `tasks/get` returns it (a DetailedTask: status-specific fields inlined)."""
        status = self.status(now)
        done = min(int(now - self.started), self.seconds)
        body: dict[str, Any] = {
            "taskId": self.task_id,
            "status": status,
            "createdAt": self.created_at,
            "lastUpdatedAt": _iso_at(self.started + (self.seconds if status == "completed" else done))
            if status != "cancelled"
            else self.updated_at,
            "ttlMs": TASK_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if status == "working":
            body["statusMessage"] = f"Rendering {self.title!r}: {done} of {self.seconds} s done."
        elif status == "completed":
            body["statusMessage"] = "The render is done."
            body["result"] = {
                "content": [{"type": "text", "text": _rendered(self.title, self.seconds)}],
                "isError": False,
            }
        else:
            body["statusMessage"] = "Cancelled at the client's request."
        return body


TASKS: dict[str, Task] = {}  # this instance's tasks (each learner's server is its own process)
_EPOCH = (time.time(), time.monotonic())  # to turn monotonic instants into wall-clock timestamps


def _iso_at(monotonic: float) -> str:
    wall = _EPOCH[0] + (monotonic - _EPOCH[1])
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _rendered(title: str, seconds: int) -> str:
    return f"Rendered {title!r}: {seconds} s at {FPS} fps ({seconds * FPS} frames)."


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client capabilities name the extension (never assumed from earlier ones)."""
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and EXTENSION_ID in capabilities.extensions)


def _missing_extension() -> MCPError:
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
    )


class TaskParams(RequestParams):
    """`tasks/get` and `tasks/cancel`: which task."""

    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    """`tasks/update`: answers to a task's outstanding input requests."""

    input_responses: dict[str, Any] = Field(alias="inputResponses")


def _known(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Task:
    if not _declared(ctx):
        raise _missing_extension()
    task = TASKS.get(params.task_id)
    now = time.monotonic()
    if task is None:
        raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
    if task.expired(now):
        del TASKS[params.task_id]
        raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task has expired")
    return task


async def get_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
    return {"resultType": "complete", **_known(ctx, params).wire(time.monotonic())}


async def update_task(ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> dict[str, Any]:
    # A render never asks for input, so no key is ever outstanding: responses are ignored, as the
    # extension asks for keys that are not currently outstanding.
    _known(ctx, params)
    return {"resultType": "complete"}


async def cancel_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
    task = _known(ctx, params)
    now = time.monotonic()
    if task.cancelled_at is None and task.status(now) == "working":
        task.cancelled_at, task.updated_at = now, _iso_at(now)
    return {"resultType": "complete"}  # an acknowledgement; a finished render stays completed


MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)


class Tasks(Extension):
    """The tasks extension: three methods, and `render_video` turned into a task."""

    identifier = EXTENSION_ID

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, get_task, protocol_versions=MODERN),
            MethodBinding("tasks/update", UpdateParams, update_task, protocol_versions=MODERN),
            MethodBinding("tasks/cancel", TaskParams, cancel_task, protocol_versions=MODERN),
        ]

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if params.name != "render_video":
            return await call_next(ctx)
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS or not _declared(ctx):
            raise _missing_extension()  # this render is too long to answer in one response
        arguments = params.arguments or {}
        seconds, title = arguments.get("seconds", 8), arguments.get("title", "untitled")
        if not (isinstance(seconds, int) and not isinstance(seconds, bool) and 1 <= seconds <= MAX_SECONDS):
            return {
                "content": [
                    {"type": "text", "text": f"seconds must be a whole number from 1 to {MAX_SECONDS}."}
                ],
                "isError": True,
            }
        now = time.monotonic()
        # uuid4: 122 random bits, so nobody can guess another caller's task id.
        task = Task(str(uuid.uuid4()), seconds, str(title), now, _iso_at(now))
        TASKS[task.task_id] = task  # stored before the reply: a tasks/get for it resolves at once
        return {"resultType": "task", **task.wire(now)}


server = MCPServer(
    "demo-tasks",
    version="1.0.0",
    instructions="Declare the io.modelcontextprotocol/tasks extension, call render_video, then poll tasks/get.",
    extensions=[Tasks()],
    subscriptions=False,  # no subscriptions/listen here, so no notifications/tasks either: clients poll
)


@server.tool(structured_output=False)
def render_video(title: str, seconds: int = 8) -> str:
    """Render a video clip (1 to 60 seconds of footage). Slow: it runs as a task, so declare the tasks extension."""
    # Reached only if the extension's interceptor let the call through, which it never does.
    raise ToolError("render_video runs only as a task.")


@server.tool(structured_output=False)
def render_thumbnail(title: str) -> str:
    """Render a still thumbnail for a video title. Quick: always a plain result."""
    return f"Thumbnail for {title!r}: 320x180 px, ready."


# Requests the fork server sends once before forking (no task is created: the parent keeps none).
WARM_UP = [
    messages.discover(1),
    messages.request(2, "tools/list", {"_meta": messages.envelope()}),
    messages.request(
        3,
        "tools/call",
        {"_meta": messages.envelope(), "name": "render_thumbnail", "arguments": {"title": "warm"}},
    ),
    messages.request(
        4,
        "tasks/get",
        {"_meta": messages.envelope({"extensions": {EXTENSION_ID: {}}}), "taskId": "no-such-task"},
    ),
]


serve = serving(server, quiet=(MCPDeprecationWarning,))  # what the sandbox calls

if __name__ == "__main__":
    serve()
