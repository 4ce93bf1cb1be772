"""The editor's syntax checks from the attacker's side (app/web/file_checks.py, app/workspace): a check
starts a process (Python's compiler, or Node), so an address saving text after text at once gets one
check at a time, and another address's save takes its turn beside the flood rather than after it; a
file checked once is not checked again when the editor opens; a file written to keep Python's
compiler busy keeps another process busy, never the web process."""

from __future__ import annotations

import asyncio
import resource
import threading
import time
from pathlib import Path

import httpx
import pytest

from app import workspace
from app.relay.sessions import Sessions
from app.web import file_checks
from app.web.learner import COOKIE
from app.workspace import typescript
from tests.support.inprocess import ServedApp

FLOOD = 12


# A server.py of thousands of nested f-string fields: Python's compiler is quadratic in them (3.11),
# and the largest file allowed takes it about 0.4 s of a core, holding the interpreter's lock.
BUSY_PYTHON = "x = f'{a:" + "{b}" * 21_000 + "}'\n"


class Counted:
    """The two checks (server.ts by esbuild, a Python file in an instance), counting the checks that
    run at once, and in all."""

    def __init__(self) -> None:
        self.real_python = file_checks.python_check
        self.lock = threading.Lock()
        self.running = self.most = self.calls = 0

    def enter(self) -> None:
        with self.lock:
            self.running += 1
            self.calls += 1
            self.most = max(self.most, self.running)

    def leave(self) -> None:
        with self.lock:
            self.running -= 1

    def typescript(self, source: str, name: str) -> list[workspace.Diagnostic]:
        self.enter()
        try:  # no cache: every text runs Node, as a new text does
            return list(typescript.run_esbuild(source).diagnostics)
        finally:
            self.leave()

    async def python(self, source: str, name: str, sessions: Sessions) -> list[workspace.Diagnostic]:
        self.enter()
        try:
            return await self.real_python(source, name, sessions)
        finally:
            self.leave()


@pytest.mark.parametrize("name", ["server.ts", "server.py"])
async def test_an_address_saving_many_files_at_once_gets_one_check_at_a_time_and_others_theirs(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "server.ts" and typescript.missing():
        pytest.skip("the TypeScript runtime is not installed")
    counted = Counted()
    monkeypatch.setattr(workspace, "diagnose", counted.typescript)
    monkeypatch.setattr(file_checks, "python_check", counted.python)
    texts = [f"n{n} = {n};\n" if name == "server.ts" else f"# {n}\n" + BUSY_PYTHON[:2000] + "}'\n"
             for n in range(FLOOD)]  # fmt: skip
    with ServedApp(tmp_path) as app:
        finished: list[str] = []
        flooder = httpx.AsyncClient(base_url=app.base, timeout=60, cookies={COOKIE: app.learner_cookie("flooder")},
                                    headers={"X-Forwarded-For": "203.0.113.1", "Origin": app.base})  # fmt: skip
        neighbour = httpx.AsyncClient(base_url=app.base, timeout=60, cookies={COOKIE: app.learner_cookie("next")},
                                      headers={"X-Forwarded-For": "203.0.113.2", "Origin": app.base})  # fmt: skip
        async with flooder, neighbour:

            async def save(who: str, client: httpx.AsyncClient, text: str) -> dict:
                reply = await client.put(f"/api/workspace/{name}", content=text)
                assert reply.status_code == 200, reply.text
                finished.append(who)
                return reply.json()

            flood = [asyncio.create_task(save("flood", flooder, text)) for text in texts]
            await asyncio.sleep(0)
            assert (await save("neighbour", neighbour, "mine = 1\n"))["diagnostics"] == []
            found = await asyncio.gather(*flood)
            assert (
                counted.most <= file_checks.CHECKS_AT_ONCE
            )  # the flood's one at a time, and the neighbour's
            assert finished.index("neighbour") < FLOOD  # its turn came before the flood's end
            errors = 1 if name == "server.py" else 0  # the Python flood's f-strings are cut short
            assert [len(saved["diagnostics"]) for saved in found] == [errors] * FLOOD
            # Opening the editor again checks nothing: the saved file's result is kept.
            calls = counted.calls
            state = await neighbour.get("/api/workspace", params={"file": name})
            assert state.status_code == 200 and state.json()["diagnostics"] == []
            assert counted.calls == calls


async def test_a_file_that_keeps_pythons_compiler_busy_is_compiled_in_another_process(tmp_path: Path) -> None:
    hostile = BUSY_PYTHON.encode()[: workspace.MAX_SOURCE_BYTES - 3].decode() + "}'\n"
    assert workspace.problem_with(hostile.encode()) == ""  # a file anyone may save
    began = time.thread_time()
    expected = workspace.diagnose(hostile)  # here, to see what the compile costs
    compile_s = time.thread_time() - began
    with ServedApp(tmp_path) as app:
        async with httpx.AsyncClient(base_url=app.base, timeout=60, headers={"Origin": app.base},
                                     cookies={COOKIE: app.learner_cookie("busy")}) as page:  # fmt: skip
            before = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process, the app's too
            saved = await page.put("/api/workspace/server.py", content=hostile)
            after = resource.getrusage(resource.RUSAGE_SELF)
        assert app.source.sources[-1] == workspace.syntax_checker().text  # checked by a program of its own
    assert saved.status_code == 200, saved.text
    assert saved.json()["diagnostics"] == [d.to_json() for d in expected]  # its error, found
    spent_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert compile_s > 0.1 and spent_s < compile_s / 2, (compile_s, spent_s)  # the compile was another's


async def test_a_check_that_runs_out_of_time_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ServedApp(tmp_path) as app:
        async with httpx.AsyncClient(base_url=app.base, timeout=60, headers={"Origin": app.base},
                                     cookies={COOKIE: app.learner_cookie("slow")}) as page:  # fmt: skip
            monkeypatch.setattr(file_checks, "PYTHON_CHECK_LIMIT_S", 0.000_001)
            slow = await page.put("/api/workspace/server.py", content="x = 1\n")
            assert [d["message"] for d in slow.json()["diagnostics"]] == [file_checks.TOO_LONG]
            monkeypatch.undo()
            broken = await page.put("/api/workspace/server.py", content="def f(:\n")
            assert [d["message"] for d in broken.json()["diagnostics"]] == ["invalid syntax"]
        assert len(app.source.acquired) == len(app.source.released) == 2  # each check's instance let go


async def test_a_class_member_holding_a_check_does_not_hold_a_classmates_behind_one_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the side of a class member whose every save holds a check for seconds (a server.ts written
    to hold esbuild), in a class behind one NAT address: each classmate's save waited for it."""
    held, release = threading.Event(), threading.Event()

    def diagnose(source: str, name: str) -> list[workspace.Diagnostic]:
        if source.startswith("// hold"):
            held.set()
            release.wait(30)
        return []

    monkeypatch.setattr(workspace, "diagnose", diagnose)
    token = "checks-instructor-token-0123456789"
    with ServedApp(tmp_path, instructor_token=token) as app:
        with httpx.Client(base_url=app.base, headers={"Authorization": f"Bearer {token}"}) as teacher:
            made = teacher.post("/instructor/classes", data={"name": "NAT", "expected_size": "10"})
            page = teacher.get(made.headers["location"]).text
        code = page.split("data-join-code>")[1].split("<")[0]
        members = []
        for name in ("holder", "classmate"):
            client = httpx.AsyncClient(base_url=app.base, timeout=60, headers={"Origin": app.base},
                                       cookies={COOKIE: app.learner_cookie(name)})  # fmt: skip
            joined = await client.post("/join", data={"code": code, "display_name": name})
            assert joined.status_code == 303, joined.text
            members.append(client)
        holder, classmate = members
        try:
            holding = asyncio.create_task(holder.put("/api/workspace/server.ts", content="// hold\n"))
            assert await asyncio.to_thread(held.wait, 30)
            mine = await asyncio.wait_for(
                classmate.put("/api/workspace/server.ts", content="const x = 1;\n"), 30
            )
            assert mine.status_code == 200 and not holding.done()
        finally:
            release.set()
            assert (await holding).status_code == 200
            for client in members:
                await client.aclose()
