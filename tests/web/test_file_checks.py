"""The editor's syntax checks from the attacker's side (app/web/file_checks.py, app/workspace): a check
starts a process (Python's compiler, or Node), so an address saving text after text at once gets one
check at a time, and another address's save takes its turn beside the flood rather than after it; a
file checked once is not checked again when the editor opens; a file written to keep Python's
compiler busy keeps another process busy, never the web process."""

from __future__ import annotations

import asyncio
import resource
import threading
from pathlib import Path

import httpx
import pytest

from app import workspace
from app.web.learner import COOKIE
from app.workspace import typescript
from tests.support.inprocess import ServedApp

FLOOD = 12


# A server.py of thousands of nested f-string fields: Python's compiler is quadratic in them (3.11),
# and the largest file allowed takes it about 0.4 s of a core, holding the interpreter's lock.
BUSY_PYTHON = "x = f'{a:" + "{b}" * 21_000 + "}'\n"


class Counted:
    """workspace.diagnose, counting the checks that run at once, and in all."""

    def __init__(self) -> None:
        self.real = workspace.diagnose
        self.lock = threading.Lock()
        self.running = self.most = self.calls = 0

    def __call__(self, source: str, name: str) -> list[workspace.Diagnostic]:
        with self.lock:
            self.running += 1
            self.calls += 1
            self.most = max(self.most, self.running)
        try:
            if name == workspace.TS_FILE_NAME:  # no cache: every text runs Node, as a new text does
                return list(typescript.transpile.__wrapped__(source).diagnostics)
            return self.real(source, name)
        finally:
            with self.lock:
                self.running -= 1


@pytest.mark.parametrize("name", ["server.ts", "server.py"])
async def test_an_address_saving_many_files_at_once_gets_one_check_at_a_time(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "server.ts" and typescript.missing():
        pytest.skip("the TypeScript runtime is not installed")
    counted = Counted()
    monkeypatch.setattr(workspace, "diagnose", counted)
    texts = [f"n{n} = {n};\n" if name == "server.ts" else f"# {n}\n" + BUSY_PYTHON[:2000] + "}'\n"
             for n in range(FLOOD)]  # fmt: skip
    with ServedApp(tmp_path) as app:
        finished: list[str] = []
        flooder = httpx.AsyncClient(base_url=app.base, timeout=60, cookies={COOKIE: app.learner_cookie("flooder")},
                                    headers={"X-Forwarded-For": "203.0.113.1", "Origin": app.base})  # fmt: skip
        neighbour = httpx.AsyncClient(base_url=app.base, timeout=60, cookies={COOKIE: app.learner_cookie("next")},
                                      headers={"X-Forwarded-For": "203.0.113.2", "Origin": app.base})  # fmt: skip
        async with flooder, neighbour:

            async def save(who: str, client: httpx.AsyncClient, text: str) -> None:
                reply = await client.put(f"/api/workspace/{name}", content=text)
                assert reply.status_code == 200, reply.text
                finished.append(who)

            flood = [asyncio.create_task(save("flood", flooder, text)) for text in texts]
            await asyncio.sleep(0)
            await save("neighbour", neighbour, "mine = 1\n")
            await asyncio.gather(*flood)
            assert counted.most == 1  # one check at a time, whatever the flood
            assert finished.index("neighbour") < FLOOD  # its turn came before the flood's end
            # Opening the editor again checks nothing: the saved file's result is kept.
            calls = counted.calls
            state = await neighbour.get("/api/workspace", params={"file": name})
            assert state.status_code == 200 and state.json()["diagnostics"] == []
            assert counted.calls == calls


def test_a_file_that_keeps_pythons_compiler_busy_is_compiled_in_another_process() -> None:
    hostile = BUSY_PYTHON.encode()[: workspace.MAX_SOURCE_BYTES - 3].decode() + "}'\n"
    assert workspace.problem_with(hostile.encode()) == ""  # a file anyone may save
    ours, theirs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    found = workspace.diagnose(hostile)
    ours_after, theirs_after = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    spent = (ours_after.ru_utime - ours.ru_utime, theirs_after.ru_utime - theirs.ru_utime)
    assert len(found) == 1 and found[0].line == 2  # its one error, found
    assert spent[1] > 0.1 and spent[0] < spent[1] / 4, spent  # the compiler's work was the child's


def test_a_check_that_runs_out_of_time_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace, "PYTHON_CHECK_TIMEOUT_S", 0.001)
    assert [d.message for d in workspace.diagnose("x = 1\n")] == [
        "Python's compiler took too long on this file: it was not checked."
    ]
    monkeypatch.undo()
    assert (
        workspace.diagnose("x = 1\n") == [] and workspace.diagnose("def f(:\n")[0].message == "invalid syntax"
    )
