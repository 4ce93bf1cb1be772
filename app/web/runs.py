"""Runnable code in lessons (docs/authoring.md, "Runnable blocks"): `POST /api/run` runs a block's
Python, as the learner edited it, in a fresh sandboxed instance of their own (the sandbox of their
server.py, with its limits: no exec, no network, its memory and its time), and streams what it writes.

The answer is NDJSON, one event a line, as the code writes: `{"stdout": "..."}` and `{"stderr": "..."}`
(a line each), then one `{"exit": ...}` with how it ended and in how long. A run that cannot start
(the learner's exercise budget or the playground is full) streams one `{"error": ...}` instead. A run
ends at its time limit (PLAYGROUND_RUN_TIME_LIMIT_S) or past RUN_OUTPUT_BYTES of output; it is admitted as an exercise run is (one at
a time per learner, counted in the global cap and the pace of new instances).

The instance is started and released by a task of its own, never by the response's stream, so a
reader who leaves mid-run (the response then stops) cannot leave an instance behind: the stream only
tells the task to stop.

`POST /api/workspace/test-run` is a run too: of app/workspace/run_tests.py, which runs pytest on the
learner's saved test_server.py beside their saved server.py (each file the starter while not saved),
the two files handed to it on its stdin.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from app import workspace
from app.relay.admission import Owner
from app.relay.sessions import Sessions
from app.sandbox.errors import CapacityError, OutputLimitError, SandboxError
from app.sandbox.process import ServerProcess
from app.web.errors import error_body
from app.web.state import get_state

log = logging.getLogger(__name__)
router = APIRouter()

RUN_OUTPUT_BYTES = 64 * 1024
# Lines a run's stream may hold unread before the run waits for its reader.
QUEUED_LINES = 256
# How long the end of a run waits for room in a reader's full queue.
FINAL_WAIT_S = 30.0
_running: set[asyncio.Task] = set()  # kept referenced until they end


class RunRequest(BaseModel):
    code: str = Field(max_length=workspace.MAX_SOURCE_BYTES, description="The block's Python, as edited.")


def _event(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")


@router.post("/api/run")
async def run_code(request: Request, body: RunRequest) -> Any:
    state = get_state(request)
    problem = workspace.problem_with(body.code.encode("utf-8", errors="surrogatepass"))
    if problem:
        return JSONResponse(error_body(400, problem[0].upper() + problem[1:] + "."), status_code=400)
    owner = await state.owner_of(request.scope)
    if owner.learner is None or state.sessions is None:
        return JSONResponse(error_body(403, "Open a lesson page first: running code needs your learner identity."),
                            status_code=403)  # fmt: skip
    return _streaming(_stream(state.sessions, owner, body.code, state.settings.run_time_limit_s))


@router.post("/api/workspace/test-run")
async def run_tests(request: Request) -> Any:
    """pytest on the learner's saved test_server.py and server.py, streamed as a block's run is."""
    state = get_state(request)
    owner = await state.owner_of(request.scope)
    if owner.learner is None or state.sessions is None:
        return JSONResponse(error_body(403, "Open a lesson page first: running tests needs your learner identity."),
                            status_code=403)  # fmt: skip
    server = await state.own_source(owner, workspace.FILE_NAME)
    stdin = workspace.test_run_input(server, await state.own_source(owner, workspace.TEST_FILE_NAME))
    program = workspace.test_runner()
    return _streaming(_stream(state.sessions, owner, program, state.settings.run_time_limit_s, stdin))


def _streaming(events: AsyncIterator[bytes]) -> StreamingResponse:
    return StreamingResponse(events, media_type="application/x-ndjson",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})  # fmt: skip


async def _stream(
    sessions: Sessions, owner: Owner, code: str, limit_s: float, stdin: str | None = None
) -> AsyncIterator[bytes]:
    """The run's events as they come. Started only when the response starts streaming: a request
    whose reader has already gone starts nothing."""
    events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(QUEUED_LINES)
    stop = asyncio.Event()
    running = _run(sessions, owner, code, limit_s, events, stop, stdin)
    task = asyncio.create_task(running, name=f"run-{owner.key}")
    _running.add(task)
    task.add_done_callback(_running.discard)
    try:
        while (event := await events.get()) is not None:
            yield _event(event)
    finally:
        stop.set()  # the reader left, or the run ended: either way the task ends the instance


async def _run(
    sessions: Sessions,
    owner: Owner,
    code: str,
    limit_s: float,
    events: asyncio.Queue,
    stop: asyncio.Event,
    stdin: str | None = None,
) -> None:
    began = time.monotonic()
    ending: dict[str, Any] = {}
    try:
        async with sessions.exercise_instance(owner, source=workspace.Program.python(code)) as process:
            if stdin is not None:
                await process.write_line(stdin)
            ending = await _watch(process, events, stop, began + limit_s)
            # A run that closed its output is ending: let it exit (and say how). One stopped by a limit, or
            # whose reader left, is ended at once.
            await process.stop(now="stopped" in ending)
            status = process.poll()
            ending |= {"exit": None if status is None else status.code,
                       "signal": None if status is None else status.signal,
                       "status": str(status) if status is not None else "stopped"}  # fmt: skip
    except CapacityError as exc:
        ending = {"error": exc.message, "retry_after_s": exc.retry_after_s}
    except SandboxError as exc:
        ending = {"error": exc.message}
    except Exception:
        log.exception("a run of %s failed", owner.key)
        ending = {"error": "The run could not be completed: the playground's log says why."}
    finally:
        ending |= {"seconds": round(time.monotonic() - began, 3), "limit_s": limit_s}
        try:
            async with asyncio.timeout(FINAL_WAIT_S):  # the instance is given back already
                for event in (ending, None):
                    await events.put(event)
        except TimeoutError:
            pass  # its reader has gone, or stopped reading


async def _watch(process: ServerProcess, events: asyncio.Queue, stop: asyncio.Event, deadline: float) -> dict:
    """Pass the process's lines on until it ends, the reader goes, or a limit is reached."""
    sent = 0
    stopped: str | None = None

    async def pump(read: Any, stream: str) -> None:
        nonlocal sent, stopped
        while (line := await read()) is not None:
            sent += len(line) + 1
            if sent > RUN_OUTPUT_BYTES:
                stopped = "output"
                stop.set()
                return
            await events.put({stream: line})

    async def read_stdout() -> None:
        nonlocal stopped
        try:
            await pump(process.read_line, "stdout")
        except OutputLimitError:
            stopped = "output"
            stop.set()

    pumps = [asyncio.create_task(read_stdout()), asyncio.create_task(pump(process.read_stderr, "stderr"))]
    waiting: asyncio.Future[Any] = asyncio.create_task(stop.wait())
    ended: asyncio.Future[Any] = asyncio.gather(*pumps)
    try:
        left = max(deadline - time.monotonic(), 0)
        done, _ = await asyncio.wait([ended, waiting], timeout=left, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            stopped = "time"
        elif waiting in done and stopped is None:
            stopped = "reader"
    finally:
        for future in (*pumps, waiting, ended):
            future.cancel()
    return {"stopped": stopped} if stopped else {}
