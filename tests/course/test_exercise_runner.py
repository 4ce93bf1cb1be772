"""The exercise runner against real SDK servers (plain subprocesses here: the runner is what is
tested; the sandboxed path is in tests/web/test_exercises.py): every kind of test, passing and
failing, with the reasons a learner reads."""

from __future__ import annotations

import json
import textwrap

import pytest

from app.course import conversation, exercises
from app.course.catalog import Catalog
from app.sandbox.errors import SandboxError
from app.workspace import Program
from tests.course.exercisehelp import exercise, run
from tests.support.appserver import ROOT
from tests.support.plainproc import PlainSource

SERVER = textwrap.dedent('''
    import asyncio

    from mcp.server.mcpserver import Context, MCPServer

    mcp = MCPServer("runner-test")


    @mcp.tool()
    async def slow(steps: int, ctx: Context) -> str:
        """Count, reporting progress."""
        for n in range(steps):
            await ctx.report_progress(n + 1, steps)
            await ctx.info(f"step {n + 1}")
        return "counted"


    @mcp.resource("note://today")
    def today() -> str:
        """Today's note."""
        return "Buy milk"


    @mcp.resource("note://{day}")
    def note(day: str) -> str:
        """A day's note."""
        return f"Nothing on {day}"


    @mcp.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Say hello to {name}"


    if __name__ == "__main__":
        mcp.run()
''')


async def test_every_kind_passes_on_a_server_that_has_it() -> None:
    report = await run(SERVER, exercise(
        ("progress", {"call": "slow", "arguments": {"steps": 2}, "text": "counted", "progress": True,
                      "notifies": ["notifications/message"]}),
        ("resource", {"resource": "note://today", "name": "today"}),
        ("read", {"read": "note://today", "text": "Buy milk", "mime_type": "text/plain"}),
        ("template", {"template": "note://{day}"}),
        ("read a template", {"read": "note://monday", "text_contains": "monday"}),
        ("prompt", {"prompt": "greet", "arguments": ["name"]}),
        ("get prompt", {"get_prompt": "greet", "arguments": {"name": "Ada"}, "text_contains": "Ada"}),
        ("capability", {"capability": "tools"}),
        ("quiet", {"call": "slow", "arguments": {"steps": 1}, "never_notifies": ["notifications/tools/list_changed"]}),
        ("missing argument", {"get_prompt": "greet", "arguments": {}, "error_code": 0}),
    ))  # fmt: skip
    assert report.problem is None
    assert [(o.title, o.passed) for o in report.outcomes if not o.passed] == []


async def test_each_failure_says_what_came_back() -> None:
    report = await run(SERVER, exercise(
        ("wrong text", {"call": "slow", "arguments": {"steps": 1}, "text": "done"}),
        ("no such resource", {"resource": "note://tomorrow"}),
        ("expected an error", {"read": "note://today", "error_code": -32602}),
        ("no such prompt", {"prompt": "farewell"}),
        ("capability value", {"capability": "tools.listChanged", "value": True}),
        ("unwanted notification", {"call": "slow", "arguments": {"steps": 1},
                                   "never_notifies": ["notifications/message"]}),
    ))  # fmt: skip
    reasons = {o.title: o.reason for o in report.outcomes}
    assert all(not o.passed for o in report.outcomes)
    assert reasons["wrong text"] == "expected the text 'done'; got 'counted'"
    assert reasons["no such resource"] == "resources/list has no `note://tomorrow` (it has: `note://today`)"
    assert (
        reasons["expected an error"]
        == "expected the protocol error code -32602, but the read returned contents"
    )
    assert reasons["no such prompt"] == "prompts/list has no prompt named `farewell` (it has: `greet`)"
    assert (
        reasons["capability value"] == "expected the capability `tools.listChanged` to be true; it is false"
    )
    assert (
        reasons["unwanted notification"]
        == "expected no `notifications/message` during the call, but it was sent"
    )


async def test_a_line_that_is_not_json_on_stdout_stops_the_run_and_says_why() -> None:
    source = SERVER.replace(
        'if __name__ == "__main__":', 'print("hello", flush=True)\nif __name__ == "__main__":'
    )
    report = await run(source, exercise(("lists", {"capability": "tools"})))
    assert report.problem == ("the server wrote a line that is not JSON on stdout: 'hello' "
                              "(print to stderr, never stdout)")  # fmt: skip
    assert report.outcomes[0].reason.startswith("not run: ")


async def test_a_stateless_exercise_speaks_2026_07_28() -> None:
    report = await run(SERVER, exercise(("lists", {"resource": "note://today"}), revision="2026-07-28"))
    assert report.passed, report.to_json()


@pytest.mark.parametrize("kind", sorted(exercises.KINDS))
def test_every_kind_has_a_runner(kind: str) -> None:
    assert kind in exercises.RUNNERS


async def test_a_server_gone_before_the_first_message_is_reported_not_raised() -> None:
    plain = PlainSource()
    process = await plain.acquire(
        "my-server", Program.python("def broken(:\n")
    )  # a syntax error: it exits at once
    try:
        await process.exited.wait()
        report = await exercises.run(exercise(("lists", {"capability": "tools"})), process, gone=SandboxError)
    finally:
        await plain.release(process)
        plain.remove_files()
    assert report.problem == "the server exited before `initialize` could be sent to it"
    assert [o.reason for o in report.outcomes] == ["not run: " + report.problem]


async def test_lesson_14_fails_a_server_that_announces_a_list_change_it_never_declared() -> None:
    """2025-11-25 basic/lifecycle, Operation: only negotiated capabilities; `mcp.run()` declares
    `listChanged: false`, so `open_kitchen` must not send `notifications/tools/list_changed`."""
    lessons = ROOT / "lessons"
    step = Catalog.load(lessons).step("notifications-stateless-and-clients/list-changed")
    assert step is not None and step.exercise is not None
    solution = (lessons / "solutions" / "14-list-changed.py").read_text()
    assert (await run(solution, step.exercise)).passed
    announcing = solution.replace(
        "    mcp.add_tool(order_food)",
        "    mcp.add_tool(order_food)\n    await ctx.session.send_tool_list_changed()",
    ).replace("def open_kitchen() -> str:", "async def open_kitchen(ctx: Context) -> str:")
    report = await run(announcing, step.exercise)
    failed = [o.reason for o in report.outcomes if not o.passed]
    assert failed == ["expected no `notifications/tools/list_changed` during the call, but it was sent"]


# A server that answers as no MCP server does, the way `MODE` says: what a hostile (or very broken)
# learner's server.py may send the runner.
HOSTILE = textwrap.dedent("""
    import json, sys

    MODE = {mode!r}
    GOOD = {{"initialize": {{"protocolVersion": "2025-11-25", "capabilities": {{"tools": {{}}}},
                            "serverInfo": {{"name": "hostile", "version": "1"}}}},
            "tools/list": {{"tools": [{{"name": "add", "inputSchema": {{"type": "object"}}}}]}},
            "tools/call": {{"content": [{{"type": "text", "text": "5"}}]}}}}
    ANSWERS = {{
        "error-not-object": ("initialize", {{"error": "nope"}}),
        "result-list": ("initialize", {{"result": [1]}}),
        "tools-number": ("tools/list", {{"result": {{"tools": 5}}}}),
        "many-long-names": ("tools/list", {{"result": {{"nextCursor": "more", "tools": [
            {{"name": f"tool-{{n}}-" + "x" * 900}} for n in range(1100)]}}}}),
        "content-number": ("tools/call", {{"result": {{"content": 7}}}}),
        "text-number": ("tools/call", {{"result": {{"content": [{{"type": "text", "text": 5}}]}}}}),
        "error-list": ("tools/call", {{"error": [1, 2]}}),
    }}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message["method"]
        if MODE == "deep" and method == "tools/list":
            print("[" * 100_000, flush=True)
            continue
        if MODE.startswith("flood-") and method == "tools/list":  # writes on, never answering
            note = {{"flood-values": {{"a": [{{}}] * 200_000}}, "flood-bytes": {{"a": "b" * 1_000_000}},
                     "flood-small": {{"a": 1}}}}[MODE]
            while True:
                print(json.dumps({{"jsonrpc": "2.0", "method": "n", "params": note}}), flush=True)
        if MODE == "long-line" and method == "tools/list":
            print(json.dumps({{"jsonrpc": "2.0", "id": message["id"], "result": {{"x": "y" * 2_000_000}}}}), flush=True)
            continue
        when, answer = ANSWERS.get(MODE, ("", {{}}))
        reply = answer if method == when else {{"result": GOOD[method]}}
        print(json.dumps({{"jsonrpc": "2.0", "id": message["id"], **reply}}), flush=True)
""")


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("error-not-object", 'the server refused `initialize`: an error that is not an object: "nope"'),
        ("result-list", "expected the text '6'; got '5'"),  # no capabilities read from it; the tests go on
        ("tools-number", "tools/list has no tool named `add` to call (it has: none)"),
        ("many-long-names", "and 21990 more"),
        ("content-number", "got no text content"),
        ("text-number", "got no text content"),
        ("error-list", "a protocol error: an error that is not an object: [1, 2]"),
        ("deep", "the server wrote a message of more than 10,000 values while answering `tools/list`"),
        ("long-line", "the server was stopped while answering `tools/list`"),
    ],
)
async def test_a_server_answering_as_no_mcp_server_does_gets_a_short_report_not_a_crash(
    mode: str, says: str
) -> None:
    """From the hostile learner's side: whatever their server.py sends, the run reports (never raises:
    the web layer would answer 500 and record nothing), and every reason stays short, since the report
    is answered, kept in the database and shown to the instructor."""
    report = await run(HOSTILE.format(mode=mode), exercise(
        ("adds", {"call": "add", "arguments": {"a": 2, "b": 3}, "text": "6"}),
        ("lists", {"tool": "subtract"}),
    ))  # fmt: skip
    assert not report.passed
    said = " | ".join([report.problem or "", *(o.reason for o in report.outcomes)])
    assert says in said, said
    assert all(len(o.reason) <= exercises.REASON_CHARS for o in report.outcomes)
    assert len(json.dumps(report.to_json())) < 10_000


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        (
            "flood-values",
            "the server wrote a message of more than 10,000 values while answering `tools/list`",
        ),
        ("flood-bytes", "the server wrote more than 4 MiB while answering `tools/list`"),
        ("flood-small", "the server did not answer `tools/list` within 0.5 s"),
    ],
)
async def test_a_server_writing_without_end_is_stopped_at_a_bound(
    mode: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the side of a server.py that, asked for its tools, writes notifications without end: each
    line was parsed and kept, and a run ended only at the output cap (256 MiB): 6 GiB of the web
    process's memory and 11 s of its core for one run. It stops at the first bound it passes."""
    monkeypatch.setattr(conversation, "REPLY_LIMIT_S", 0.5)
    report = await run(HOSTILE.format(mode=mode), exercise(("lists", {"tool": "subtract"})))
    said = " | ".join([report.problem or "", *(o.reason for o in report.outcomes)])
    assert not report.passed and says in said, said


async def test_a_check_that_trips_on_an_answers_shape_fails_its_test_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last guard behind every kind's own reading: an answer shaped so that reading it raises is
    that test's failure, said in words, and the next test still runs."""

    async def trips(talk: object, spec: object) -> tuple[bool, str]:
        return {}["missing"]  # as a check reading a field the answer lacks would

    monkeypatch.setitem(exercises.RUNNERS, "template", trips)
    report = await run(
        SERVER, exercise(("trips", {"template": "note://{day}"}), ("lists", {"capability": "tools"}))
    )
    assert report.problem is None
    assert [(o.passed, o.reason) for o in report.outcomes] == [
        (False, "the server's answer could not be read as MCP shapes it (KeyError)"),
        (True, "the server declares `tools`"),
    ]
