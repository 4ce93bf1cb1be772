"""Runnable blocks (app/web/runs.py) in the real sandbox: a block's code runs as the learner's own
server does, its output streamed; from the attacker's side, every escape of the attack table is
denied, a block that loops forever or floods its output is stopped by its limit, a second run at once
is refused, a reader who leaves mid-run leaves no instance behind, and bad input gets a clear error."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import workspace
from app.config import PROJECT_ROOT
from app.web.learner import COOKIE
from app.web.runs import RUN_OUTPUT_BYTES
from bench.stats import cpu_seconds
from tests.course.test_lesson_code import step_code
from tests.sandbox.attacks import ATTACKS, is_denied
from tests.support.appserver import AppProcess
from tests.support.procs import wait_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# A run's time limit: pytest's start and a search of every folder a run may read can take more than
# 3 s on a slow CPU; a run that never ends still meets this limit within a test.
LIMIT_S = 10.0

# The playground's demo server as a Python object, through the SDK's client in memory: what lesson 14's
# runnable block does.
IN_MEMORY_CLIENT = """
import asyncio
import sys

from mcp import Client

from app.demos.orders import server


async def main():
    async with Client(server) as client:
        tools = await client.list_tools()
        print("tools:", [tool.name for tool in tools.tools])
        result = await client.call_tool("get_order_status", {"order_id": "481516"})
        print("status:", result.structured_content or result.content[0].text)
    print("done", file=sys.stderr)


asyncio.run(main())
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppProcess]:
    with AppProcess(tmp_path_factory.mktemp("runs"), warm_pool_size=1, run_time_limit_s=LIMIT_S) as app:
        yield app


def run(app: AppProcess, code: str, learner: str = "runner") -> tuple[int, list[dict]]:
    with app.client(cookies={COOKIE: app.learner_cookie(learner)}) as page:
        with page.stream("POST", "/api/run", json={"code": code}, timeout=60) as reply:
            if reply.status_code != 200:
                reply.read()
                return reply.status_code, [reply.json()]
            return 200, [json.loads(line) for line in reply.iter_lines() if line]


def admitted_again(app: AppProcess, learner: str) -> bool:
    """Whether a new run of `learner` is admitted: one run at a time each, so only once the last one's
    place (and instance) was given back."""
    status, events = run(app, "print('again')", learner)
    return status == 200 and events[0] == {"stdout": "again"}


def test_a_block_runs_in_the_sandbox_and_its_output_streams_back(app: AppProcess) -> None:
    status, events = run(app, IN_MEMORY_CLIENT)
    assert status == 200, events
    assert events[0] == {"stdout": "tools: ['show_order', 'get_order_status']"}, (
        events
    )  # each line as printed
    assert any("shipped" in event.get("stdout", "") for event in events)
    assert events[-2] == {"stderr": "done"}
    end = events[-1]
    assert end["exit"] == 0 and "stopped" not in end, end
    assert end["limit_s"] == LIMIT_S and 0 < end["seconds"] < LIMIT_S


def test_an_error_in_the_block_is_its_traceback_and_its_exit_status(app: AppProcess) -> None:
    status, events = run(app, "print('before')\nraise ValueError('nope')\n")
    assert status == 200
    assert events[0] == {"stdout": "before"}
    assert any("ValueError: nope" in event.get("stderr", "") for event in events)
    assert events[-1]["exit"] == 1


def test_every_escape_is_denied_from_a_block(app: AppProcess) -> None:
    kit = (FIXTURES / "attack_kit.py").read_text().replace("from __future__ import annotations\n", "")
    codes = {attack.name: attack.code for attack in ATTACKS}
    code = kit + f"\nimport json\nprint(json.dumps({{n: run_in_child(c) for n, c in {codes!r}.items()}}))\n"
    status, events = run(app, code, learner="attacker")
    assert status == 200, events
    outcomes = json.loads(next(event["stdout"] for event in events if "stdout" in event))
    allowed = [attack.name for attack in ATTACKS if not is_denied(attack, outcomes[attack.name])]
    assert allowed == []


def test_a_block_that_never_ends_is_stopped_at_its_time_limit_and_frees_its_instance(app: AppProcess) -> None:
    status, events = run(app, "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.1)\n")
    assert status == 200
    assert events[0] == {"stdout": "started"}
    assert events[-1]["stopped"] == "time" and events[-1]["seconds"] >= LIMIT_S
    assert admitted_again(app, "runner")


def test_a_flood_of_output_is_stopped_at_its_limit(app: AppProcess) -> None:
    status, events = run(app, "while True:\n    print('x' * 1000)\n")
    assert status == 200
    printed = sum(len(event.get("stdout", "")) + 1 for event in events)
    assert printed <= RUN_OUTPUT_BYTES and events[-1]["stopped"] == "output"


def test_a_second_run_while_one_runs_is_refused_and_a_reader_who_leaves_frees_the_instance(
    app: AppProcess,
) -> None:
    with app.client(cookies={COOKIE: app.learner_cookie("twice")}) as page:
        with page.stream("POST", "/api/run", json={"code": "import time\nprint('up', flush=True)\ntime.sleep(60)\n"},
                         timeout=60) as first:  # fmt: skip
            lines = first.iter_lines()
            assert json.loads(next(lines)) == {"stdout": "up"}  # it runs
            status, events = run(app, "print('again')", learner="twice")
            assert status == 200 and "still going" in events[0]["error"], events
        # The reader left mid-run: the run is stopped and its place and instance given back.
    assert wait_until(lambda: admitted_again(app, "twice"), 30)


def test_bad_input_gets_a_clear_error_and_runs_nothing(app: AppProcess) -> None:
    with app.client(cookies={COOKIE: app.learner_cookie("runner")}) as page:
        over = page.post("/api/run", json={"code": "x=1\n" * 17_500})  # 70,000 characters
        assert over.status_code == 422 and "65536" in over.text
        huge = page.post("/api/run", json={"code": "x=1\n" * 50_000})  # past the site's body limit
        assert huge.status_code == 413
        nul = page.post("/api/run", json={"code": "print(1)\x00"})
        assert nul.status_code == 400 and "NUL" in nul.json()["error"]["message"]
        not_json = page.post("/api/run", content=b"print(1)", headers={"Content-Type": "application/json"})
        assert not_json.status_code == 422
    with app.client() as visitor:  # no identity yet: a run is an action, which makes one (app/web/learner.py)
        first = visitor.post("/api/run", json={"code": "print(1)"})
        assert first.status_code == 200 and COOKIE in first.cookies


def test_lesson_23s_token_verifier_block_runs_in_the_sandbox_with_no_network(app: AppProcess) -> None:
    status, events = run(app, step_code("sdk-token-verifier"), learner="verifier")
    assert status == 200, events
    printed = [event["stdout"].split(" ", 2)[:2] for event in events if "stdout" in event]
    assert printed == [["None", "401"], ["good", "200"], ["elsewhere", "401"], ["expired", "401"]], events
    assert events[-1]["exit"] == 0
    # Logging starts as in a new interpreter: the level the block's server asks for, not the demos'.
    assert not any("INFO" in event.get("stderr", "") for event in events), events


def runnable_blocks() -> list[tuple[str, str]]:
    """Every ```python run``` block of the course: (file:line, code)."""
    found = []
    for path in sorted((PROJECT_ROOT / "lessons").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python run\n(.*?)^```", text, re.S | re.M):
            found.append((f"{path.name}:{text[: match.start()].count(chr(10)) + 1}", match.group(1)))
    return found


@pytest.mark.parametrize(("where", "code"), runnable_blocks(), ids=[where for where, _ in runnable_blocks()])
def test_every_runnable_block_of_the_course_runs_as_shown(app: AppProcess, where: str, code: str) -> None:
    status, events = run(app, code, learner="course")
    assert status == 200, events
    assert events[-1].get("exit") == 0 and "stopped" not in events[-1], (where, events)
    assert any("stdout" in event for event in events), (where, events)  # it shows the learner something


def test_run(app: AppProcess, learner: str, tests: str, server: str | None = None) -> list[dict]:
    """Save the learner's test_server.py (and server.py), then run the tests: the run's events."""
    with app.client(cookies={COOKIE: app.learner_cookie(learner)}) as page:
        for name, text in (("test_server.py", tests), ("server.py", server)):
            if text is not None:
                assert page.put(f"/api/workspace/{name}", content=text).status_code == 200
        with page.stream("POST", "/api/workspace/test-run", timeout=60) as reply:
            assert reply.status_code == 200
            return [json.loads(line) for line in reply.iter_lines() if line]


test_run.__test__ = False  # type: ignore[attr-defined] - a helper, for all its name

CALC = FIXTURES / "build_lessons" / "solutions"


def test_the_learners_tests_run_with_pytest_in_the_sandbox(app: AppProcess) -> None:
    events = test_run(app, "tester", (CALC / "calc_tests.py").read_text(), (CALC / "calc.py").read_text())
    text = "\n".join(event.get("stdout", "") for event in events)
    assert "test_server.py::test_add_adds[asyncio] PASSED" in text, events
    assert "2 passed" in text
    assert events[-1]["exit"] == 0, events[-1]


def test_tests_that_never_end_are_stopped_at_the_time_limit(app: AppProcess) -> None:
    forever = "def test_forever():\n    while True:\n        pass\n"
    events = test_run(app, "tester-forever", forever)
    assert events[-1]["stopped"] == "time" and events[-1]["seconds"] < LIMIT_S + 2, events[-1]
    assert wait_until(lambda: admitted_again(app, "tester-forever"), timeout=30)


def test_tests_cannot_reach_another_learners_files(app: AppProcess) -> None:
    test_run(app, "owner-of-secret", "def test_it():\n    pass\n", server="SECRET = 'owner-of-secret-42'\n")
    places = ["/tmp", "/var", "/home", "/root", "/run", "/srv", "/proc/self/cwd", str(app.data_dir)]
    prying = (
        "import glob, os\n"
        "def test_pry():\n"
        f"    places = {places!r}\n"
        "    paths = [p for place in places for p in glob.glob(place + '/**', recursive=True)]\n"
        "    found = [p for p in paths if os.path.isfile(p) and os.path.getsize(p) < (8 << 20) and open(p, errors='ignore').read().count('owner-of-' + 'secret')]\n"
        "    print('FOUND', found)\n"
        f"    print('DATA', os.path.exists({str(app.data_dir)!r}))\n"
    )
    events = test_run(app, "pryer", prying + "    assert False, 'show the output'\n")
    text = "\n".join(event.get("stdout", "") for event in events)
    assert "FOUND []" in text and "DATA False" in text, text  # it looked everywhere, and found nothing


def test_a_saved_server_py_is_checked_in_the_sandbox_and_never_holds_the_web_process(app: AppProcess) -> None:
    """The editor's syntax check of a save, in the real sandbox, with the web process's privileges
    dropped: an error is found where it is; a file of thousands of nested f-string fields (about 0.4 s
    of Python's compiler) costs the web process next to nothing, since its compiler runs elsewhere."""
    busy = "x = f'{a:" + "{b}" * 21_000 + "}'\n"
    busy = busy.encode()[: workspace.MAX_SOURCE_BYTES - 3].decode() + "}'\n"
    with app.client(cookies={COOKIE: app.learner_cookie("checked")}) as page:
        broken = page.put("/api/workspace/server.py", content="def f(:\n    pass\n")
        assert broken.status_code == 200, broken.text
        assert broken.json()["diagnostics"] == [{"line": 1, "col": 7, "message": "invalid syntax"}]
        fine = page.put("/api/workspace/server.py", content="x = 1\n")
        assert fine.json()["diagnostics"] == []
        before = cpu_seconds(app.proc.pid)
        hostile = page.put("/api/workspace/server.py", content=busy)
        spent_s = cpu_seconds(app.proc.pid) - before
    assert hostile.status_code == 200 and hostile.json()["diagnostics"] == [
        d.to_json() for d in workspace.diagnose(busy)
    ]
    assert spent_s < 0.15, spent_s  # the compile alone takes 0.3-1 s
