"""The learner's workspace (DESIGN.md, "The learner's own server" and "the workspace's files"), over HTTP.

`PUT /api/workspace/<name>` saves `server.py`, `server.ts` or `test_server.py` (the learner cookie;
same site, as the guard enforces for every PUT) and answers the syntax errors found without running
the file; `GET` returns the saved file, or its starter. The last few versions of each file are kept
and can be read or restored (`?file=<name>`, server.py by default). `GET/PUT /api/workspace/settings`
holds the language the learner writes their server in: my-server runs server.py or server.ts by it.
Either file runs only as `my-server`, and test_server.py only in a test run (app/web/runs.py), in the
learner's own sandboxed instance.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from app import workspace
from app.course import exercises, test_exercise
from app.course.exercises import Exercise, Report
from app.course.test_exercise import TestExercise
from app.progress.errors import SavedSince
from app.progress.store import ServerFile
from app.relay.admission import Owner
from app.relay.sessions import Sessions
from app.sandbox.errors import CapacityError, SandboxError
from app.sandbox.process import ServerProcess
from app.web.client import client_key
from app.web.errors import error_body
from app.web.learner import learner_id
from app.web.state import AppState, get_state

router = APIRouter()

PYTHON_TEXT = "text/x-python; charset=utf-8"
TYPESCRIPT_TEXT = "text/x-typescript; charset=utf-8"
# The most a settings body may hold: {"language": "typescript"} and room to spare.
MAX_SETTINGS_BYTES = 1024
# The largest integer the progress stores hold (SQLite's INTEGER, PostgreSQL's bigint): a number past
# it in a request is refused (422) before it reaches a query, which could not even bind it.
STORED_INT_MAX = 2**63 - 1
# A saved version's number in a path.
Version = Annotated[int, Path(ge=0, le=STORED_INT_MAX)]
# Which file of the workspace a request is about (`?file=`): server.py unless it says.
FileName = Annotated[str, Query(alias="file", pattern=r"^(server\.py|test_server\.py|server\.ts)$")]


def _media_type(name: str) -> str:
    return TYPESCRIPT_TEXT if name == workspace.TS_FILE_NAME else PYTHON_TEXT


def _no_such_file(name: str) -> JSONResponse:
    names = " and ".join(workspace.FILES)
    return JSONResponse(
        error_body(404, f"The workspace has no file {name!r}: it holds {names}."), status_code=404
    )


def _refuse(status: int, message: str) -> JSONResponse:
    return JSONResponse(error_body(status, f"{message}. Nothing was saved."), status_code=status)


async def _body_within_limit(request: Request, limit: int = workspace.MAX_SOURCE_BYTES) -> bytes | None:
    """The request body, or None as soon as it passes `limit` (a huge body is never held whole)."""
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


def _version_json(saved: ServerFile) -> dict[str, Any]:
    return {"version": saved.version, "saved_at": saved.saved_at, "size": saved.size}


def _base_version(request: Request) -> int | None | JSONResponse:
    """The version an editor's text was based on, from `If-Match` ("3", or 3; 0: the starter); None
    when not given (a script's save replaces whatever is newest, as before)."""
    given = request.headers.get("if-match")
    if given is None:
        return None
    text = given.strip().removeprefix("W/").strip('"')
    if not text.isdigit() or len(text) > 9:
        return _refuse(400, 'If-Match names the version the text was based on, such as "3" (0: the starter)')
    return int(text)


def _saved_since(error: SavedSince) -> JSONResponse:
    message = (f"Version {error.version} was saved from another tab or device since this text was loaded, "
               "and saving would replace it. Nothing was saved.")  # fmt: skip
    body = error_body(409, message, version=error.version, saved_at=error.saved_at)
    return JSONResponse(body, status_code=409)


async def _save(request: Request, learner: str, source: str, name: str) -> JSONResponse:
    state = get_state(request)
    after = _base_version(request)
    if isinstance(after, JSONResponse):
        return after
    latest = await _saved(state, learner, name)
    # The same text again (a second Ctrl+S, a save to restart) is the newest version already: a new
    # one would only push a real one out of the few that are kept.
    if latest is not None and latest.source == source:
        saved, unchanged = latest, True
    else:
        address, size = client_key(request.scope), len(source.encode())
        if (wait := state.saves.spend(address, size)) is not None:
            state.metrics.writes_capped.labels("saves").inc()
            return _saved_too_much(state.settings.saved_kib_per_hour_per_address, wait)
        try:
            saved = await anyio.to_thread.run_sync(
                lambda: state.progress.save_server_file(learner, source, name=name, after=after)
            )
        except BaseException as exc:
            state.saves.refund(address, size)  # nothing was saved: nothing is counted
            if isinstance(exc, SavedSince):
                return _saved_since(exc)
            raise
        unchanged = False
    diagnostics = await _diagnose(state, source, name, request)
    return JSONResponse({"saved": True, **_version_json(saved), "unchanged": unchanged,
                         "diagnostics": [d.to_json() for d in diagnostics]})  # fmt: skip


def _saved_too_much(limit_kib: int, wait: float) -> JSONResponse:
    limit = f"{limit_kib // 1024} MiB" if limit_kib % 1024 == 0 else f"{limit_kib} KiB"
    refused = _refuse(429, f"The learners at this address have saved {limit} of files in the last hour, the "
                           f"most this playground keeps. Try again in {max(1, round(wait / 60))} min")  # fmt: skip
    refused.headers["Retry-After"] = str(int(wait) + 1)
    return refused


async def _saved(state: AppState, learner: str, name: str, version: int | None = None) -> ServerFile | None:
    return await anyio.to_thread.run_sync(lambda: state.progress.server_file(learner, version, name=name))


def _settings_json(language: str) -> dict[str, Any]:
    from app.workspace import typescript

    missing = typescript.missing()
    return {
        "language": language,
        "languages": list(workspace.LANGUAGES),
        "files": workspace.LANGUAGES,
        "typescript": {"available": not missing, "why_not": missing or None, "sdk": typescript.SDK_VERSION,
                       "newest_revision": typescript.SDK_NEWEST_REVISION},
    }  # fmt: skip


# Before the routes of a file by name, which "settings" would otherwise match.
@router.get("/api/workspace/settings")
async def read_settings(request: Request) -> JSONResponse:
    """The language the learner writes their own server in, and what each one needs."""
    state = get_state(request)
    language = await state.own_language(await state.owner_of(request.scope))
    return JSONResponse(_settings_json(language), headers={"Cache-Control": "no-store"})


@router.put("/api/workspace/settings")
async def save_settings(request: Request) -> JSONResponse:
    """Choose the language of the learner's own server: {"language": "python" | "typescript"}."""
    from app.workspace import typescript

    data = await _body_within_limit(request, MAX_SETTINGS_BYTES)
    if data is None:
        return _refuse(413, f"The settings are over the limit of {MAX_SETTINGS_BYTES} bytes")
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return _refuse(400, 'The settings must be JSON, such as {"language": "typescript"}')
    if not isinstance(body, dict) or set(body) != {"language"}:
        return _refuse(400, 'The settings hold exactly one key, "language"')
    language = body["language"]
    if not isinstance(language, str) or language not in workspace.LANGUAGES:
        names = " or ".join(f'"{name}"' for name in workspace.LANGUAGES)
        return _refuse(400, f"The language must be {names}")
    if language == "typescript" and (why_not := typescript.missing()):
        return _refuse(409, f"TypeScript cannot run here: {why_not}")
    learner = learner_id(request)
    state = get_state(request)
    await anyio.to_thread.run_sync(state.progress.set_server_language, learner, language)
    return JSONResponse({"saved": True, **_settings_json(language)})


@router.get("/api/workspace/{name}")
async def read_file(request: Request, name: str) -> Response:
    if name not in workspace.FILES:
        return _no_such_file(name)
    saved = await _saved(get_state(request), learner_id(request), name)
    source = saved.source if saved else workspace.starter(name)
    headers = {"X-Version": str(saved.version if saved else 0), "Cache-Control": "no-store"}
    return PlainTextResponse(source, media_type=_media_type(name), headers=headers)


@router.put("/api/workspace/{name}")
async def save_file(request: Request, name: str) -> JSONResponse:
    if name not in workspace.FILES:
        return _no_such_file(name)
    data = await _body_within_limit(request)
    if data is None:
        return _refuse(413, f"The file is over the limit of {workspace.MAX_SOURCE_BYTES // 1024} KiB")
    problem = workspace.problem_with(data)
    if problem:
        return _refuse(400, problem[0].upper() + problem[1:])
    return await _save(request, learner_id(request), data.decode("utf-8"), name)


async def _diagnose(state: AppState, source: str, name: str, request: Request) -> list[workspace.Diagnostic]:
    assert state.sessions is not None  # set in the lifespan, before any request
    # Whose turn: a class member's own (a class behind one address waited for one member's files),
    # outside classes the address's, whatever its identities.
    turn = (await state.owner_of(request.scope)).client_key
    return await state.file_checks.diagnose(source, name, turn, state.sessions)


@router.get("/api/workspace")
async def workspace_state(request: Request, name: FileName = workspace.FILE_NAME) -> JSONResponse:
    """What the editor opens with: the file (saved, or the starter), its diagnostics and its history."""
    state = get_state(request)
    learner = learner_id(request)
    saved = await _saved(state, learner, name)
    history = await anyio.to_thread.run_sync(lambda: state.progress.server_file_history(learner, name=name))
    source = saved.source if saved else workspace.starter(name)
    diagnostics = await _diagnose(state, source, name, request)
    return JSONResponse({
        "file": name,
        "source": source,
        "version": saved.version if saved else 0,
        "starter": saved is None,
        "diagnostics": [d.to_json() for d in diagnostics],
        "history": [_version_json(v) for v in history],
        "max_bytes": workspace.MAX_SOURCE_BYTES,
    }, headers={"Cache-Control": "no-store"})  # fmt: skip


@router.get("/api/workspace/history/{version}")
async def read_version(request: Request, version: Version, name: FileName = workspace.FILE_NAME) -> Response:
    saved = await _saved(get_state(request), learner_id(request), name, version)
    if saved is None:
        return JSONResponse(error_body(404, f"No saved version {version} (only the last few are kept)."),
                            status_code=404)  # fmt: skip
    return PlainTextResponse(
        saved.source, media_type=_media_type(name), headers={"Cache-Control": "no-store"}
    )


@router.post("/api/workspace/history/{version}/restore")
async def restore_version(
    request: Request, version: Version, name: FileName = workspace.FILE_NAME
) -> JSONResponse:
    """Save an old version again as the newest (the versions after it stay in the history)."""
    state = get_state(request)
    learner = learner_id(request)
    saved = await _saved(state, learner, name, version)
    if saved is None:
        return JSONResponse(error_body(404, f"No saved version {version} (only the last few are kept)."),
                            status_code=404)  # fmt: skip
    return await _save(request, learner, saved.source, name)


# --- the type check of server.ts -------------------------------------------------------------------

# The compiler reads the SDK's and Node's types first: a few seconds (jitless, as every Node instance
# runs); past this the check is stopped.
TYPE_CHECK_LIMIT_S = 60.0


@router.post("/api/workspace/typecheck")
async def type_check(request: Request) -> JSONResponse:
    """The TypeScript compiler's errors in the learner's saved server.ts, found in their own sandbox (a
    fresh instance on the exercise budget, with its time and memory limits): on demand, as it takes
    seconds where a save takes milliseconds."""
    from app.workspace import typescript

    state = get_state(request)
    owner = await state.owner_of(request.scope)
    if owner.learner is None or state.sessions is None:
        return JSONResponse(error_body(403, "Open a lesson page first: a type check needs your learner identity."),
                            status_code=403)  # fmt: skip
    if typescript.missing():
        return JSONResponse(
            error_body(409, f"TypeScript cannot run here: {typescript.missing()}"), status_code=409
        )
    source = await state.own_source(owner, workspace.TS_FILE_NAME)
    began = asyncio.get_running_loop().time()
    try:
        async with state.sessions.exercise_instance(owner, source=workspace.type_checker()) as process:
            await process.write_line(workspace.type_check_input(source))
            try:
                line = await asyncio.wait_for(process.read_line(), TYPE_CHECK_LIMIT_S)
            except TimeoutError:
                return JSONResponse(error_body(504, f"The type check took longer than {TYPE_CHECK_LIMIT_S:g} s and "
                                               "was stopped."), status_code=504)  # fmt: skip
            ended = None if line is not None else await process.stop()
    except CapacityError as exc:
        return JSONResponse(error_body(429, exc.message, retry_after_s=exc.retry_after_s), status_code=429,
                            headers={"Retry-After": str(exc.retry_after_s)})  # fmt: skip
    except SandboxError as exc:
        return JSONResponse(error_body(exc.status_code, exc.message), status_code=exc.status_code)
    try:
        answer = json.loads(line) if line is not None else {}
        found = [
            workspace.Diagnostic(int(d["line"]), int(d["col"]), str(d["message"]))
            for d in answer["diagnostics"]
        ]
    except (TypeError, KeyError, ValueError):
        how = f" ({ended})" if ended is not None else ""
        return JSONResponse(
            error_body(500, f"The type check stopped before it answered{how}."), status_code=500
        )
    seconds = round(asyncio.get_running_loop().time() - began, 2)
    return JSONResponse({"diagnostics": [d.to_json() for d in found], "seconds": seconds})


# --- exercises ------------------------------------------------------------------------------------


@router.post("/api/exercises/{lesson_slug}/{step_slug}")
async def run_exercise(request: Request, lesson_slug: str, step_slug: str) -> JSONResponse:
    """Run a step's exercise against a fresh instance of the learner's saved server; record a pass."""
    state = get_state(request)
    step = state.catalog.step(f"{lesson_slug}/{step_slug}")
    if step is None or step.exercise is None:
        return JSONResponse(error_body(404, "This step has no exercise."), status_code=404)
    owner = await state.owner_of(request.scope)
    assert state.sessions is not None
    if owner.learner is None:
        return JSONResponse(error_body(403, "Open a lesson page first: exercises need your learner identity."),
                            status_code=403)  # fmt: skip
    try:
        if isinstance(step.exercise, TestExercise):
            report = await _run_test_exercise(state, owner, step.exercise)
        elif (why := exercises.not_for_typescript(step.exercise)) and await state.own_language(
            owner
        ) == "typescript":
            report = Report(problem=why)
        else:
            report = await _run_exercise(state, owner, step.exercise)
    except CapacityError as exc:
        return JSONResponse(error_body(429, exc.message, retry_after_s=exc.retry_after_s), status_code=429,
                            headers={"Retry-After": str(exc.retry_after_s)})  # fmt: skip
    except SandboxError as exc:
        return JSONResponse(error_body(exc.status_code, exc.message), status_code=exc.status_code)
    body = report.to_json()
    learner = owner.learner
    # The latest run of the step, for the instructor's view of the learner (and who is stuck).
    await anyio.to_thread.run_sync(
        lambda: state.progress.record_exercise_run(learner, step.slug, report.passed, json.dumps(body))
    )
    if report.passed:
        await anyio.to_thread.run_sync(state.progress.record_check, learner, step.slug, "exercise")
    return JSONResponse(body)


async def _run_exercise(state: AppState, owner: Owner, exercise: Exercise) -> Report:
    assert state.sessions is not None
    async with state.sessions.exercise_instance(owner) as process:
        stderr: list[str] = []
        # Read stderr all along: a server that logs much would otherwise fill the pipe and stall.
        reading = asyncio.create_task(_read_stderr(process, stderr))
        try:
            report = await exercises.run(exercise, process, gone=SandboxError)
            await asyncio.wait([reading], timeout=STDERR_READ_S)  # its last lines (a traceback, often)
        finally:
            reading.cancel()
        report.stderr = "\n".join(stderr)[-STDERR_KEPT:]  # each line came without its newline
    return report


class _TestRuns:
    """Runs of the learner's tests, each a fresh instance admitted as an exercise run is."""

    gone: type[Exception] = SandboxError

    def __init__(self, sessions: Sessions, owner: Owner) -> None:
        self.sessions, self.owner = sessions, owner

    def running(self, program: workspace.Program) -> AbstractAsyncContextManager[ServerProcess]:
        return self.sessions.exercise_instance(self.owner, source=program)


async def _run_test_exercise(state: AppState, owner: Owner, exercise: TestExercise) -> Report:
    assert state.sessions is not None
    server = await state.own_source(owner, workspace.FILE_NAME)
    tests = await state.own_source(owner, workspace.TEST_FILE_NAME)
    return await test_exercise.run(exercise, _TestRuns(state.sessions, owner), server=server, tests=tests)


# What of the server's stderr an exercise report keeps (its end: a traceback, often), and how long
# after the run its last lines may take to arrive.
STDERR_KEPT = 16_000
STDERR_READ_S = 0.2


async def _read_stderr(process: ServerProcess, into: list[str]) -> None:
    while (text := await process.read_stderr()) is not None:
        into.append(text)
        if len(into) > 64:  # keep the end, in bounded memory
            del into[: len(into) - 64]
