"""A learner's own server.py is arbitrary code: tried here from the attacker's side, saved through the
workspace API and run as my-server exactly as a learner's file runs.

Every escape of the attack table is denied; ordinary learner code works; and a file that forks until
refused, allocates until refused, spins the CPU, floods stdout or never serves is stopped by its limit
and reported, while the playground keeps answering everyone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import textwrap
import time
from pathlib import Path

import httpx
import pytest
import websockets

from app.protocol.jsonrpc import json_items
from app.relay.session import DEFAULT_LIMITS, LINE_BYTES, READ_BYTES_PER_S, UNHEARD_BYTES, line_cost
from tests.sandbox.attacks import ATTACKS, is_denied
from tests.sandbox.consoles import console_until_exit, orders_answers_quickly
from tests.support.appserver import AppProcess
from tests.support.procs import wait_until_async
from tests.support.wsclient import EnvelopeClient, McpClient, init_request

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MAX_PROCESSES = 16
MEMORY_MB = 256


def _without_future_import(path: Path) -> str:
    return path.read_text().replace("from __future__ import annotations\n", "")


# The attack kit and the ordinary-code report, pasted into one file as a learner would write it: the
# sandbox shows an instance nothing of tests/, so nothing may be imported from there.
ATTACKER = (
    "from __future__ import annotations\n"
    + _without_future_import(FIXTURES / "attack_kit.py")
    + _without_future_import(FIXTURES / "learner_code.py")
    + textwrap.dedent("""
        from mcp.server.mcpserver import MCPServer

        mcp = MCPServer("learner-attacker")


        @mcp.tool()
        def attempts(codes: dict[str, str]) -> str:
            return json.dumps({name: run_in_child(code) for name, code in codes.items()})


        @mcp.tool()
        def learner_code() -> str:
            return json.dumps(exercise())


        if __name__ == "__main__":
            mcp.run()
    """)
)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with AppProcess(tmp_path_factory.mktemp("own-attacks"), warm_pool_size=1, max_processes=MAX_PROCESSES,
                    memory_limit_mb=MEMORY_MB, cpu_limit_s=2, max_sessions_per_learner=4) as app:  # fmt: skip
        yield app


async def test_every_escape_is_denied_from_a_learners_file(app: AppProcess) -> None:
    app.save_server("attacker", ATTACKER)
    client = await McpClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                     additional_headers=app.learner_headers("attacker"))  # fmt: skip
    try:
        assert (await client.initialize())["result"]["serverInfo"]["name"] == "learner-attacker"
        reply = await client.call(2, "tools/call", {"name": "attempts",
                                                    "arguments": {"codes": {a.name: a.code for a in ATTACKS}}})  # fmt: skip
        outcomes = json.loads(reply["result"]["content"][0]["text"])
        report = json.loads(await client.tool(3, "learner_code"))
    finally:
        await client.close()
    assert {a.name: outcomes[a.name] for a in ATTACKS if not is_denied(a, outcomes[a.name])} == {}
    assert "error" not in report, report


FORKER = """
import os, sys, time
forked = 0
while True:
    try:
        pid = os.fork()
    except OSError as exc:
        print(f"refused after {forked} forks: {exc}", file=sys.stderr, flush=True)
        sys.exit(7)
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    forked += 1
"""
ALLOCATOR = """
chunks = []
while True:
    chunks.append(bytearray(16 * 1024 * 1024))
"""
SPINNER = """
while True:
    pass
"""
FLOODER = """
import sys
while True:
    sys.stdout.write("x" * 65536)
"""


async def test_a_file_that_forks_until_refused_is_stopped_by_the_process_limit(app: AppProcess) -> None:
    app.save_server("forker", FORKER)
    state, stderr = await console_until_exit(app, "forker")
    assert "refused after" in stderr, stderr
    forked = int(stderr.split("refused after ")[1].split()[0])
    assert forked < MAX_PROCESSES and state["exit_status"]["code"] == 7
    assert await orders_answers_quickly(app) < 10


async def test_a_file_that_allocates_until_refused_is_stopped_by_the_memory_limit(app: AppProcess) -> None:
    app.save_server("allocator", ALLOCATOR)
    state, stderr = await console_until_exit(app, "allocator")
    # Refused by RLIMIT_AS (a MemoryError, exit 1) or killed by the cgroup's OOM killer (SIGKILL).
    assert ("MemoryError" in stderr and state["exit_status"]["code"] == 1) or state["exit_status"]["signal"] == 9, (
        state, stderr)  # fmt: skip
    assert await orders_answers_quickly(app) < 10


async def test_a_file_that_spins_is_stopped_by_the_cpu_limit(app: AppProcess) -> None:
    app.save_server("spinner", SPINNER)
    state, _ = await console_until_exit(app, "spinner")
    assert state["exit_status"]["signal"] in (9, 24), state  # SIGXCPU at the soft limit, SIGKILL at the hard
    assert await orders_answers_quickly(app) < 10


async def test_a_file_that_floods_stdout_is_stopped_by_the_output_limit(app: AppProcess) -> None:
    app.save_server("flooder", FLOODER)
    client = await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                          additional_headers=app.learner_headers("flooder"))  # fmt: skip
    try:
        while True:
            frame = await client.recv_type("state", timeout=60)
            if frame["status"] == "exited":
                break
    finally:
        await client.close()
    assert "line" in frame["reason"] or "output" in frame["reason"], frame
    assert await orders_answers_quickly(app) < 10


@pytest.mark.slow  # the not-serving timer, on the real clock
async def test_a_file_that_never_serves_is_reported_after_a_short_time(app: AppProcess) -> None:
    app.save_server("sleeper", "import time\ntime.sleep(10 ** 6)\n")
    client = await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                          additional_headers=app.learner_headers("sleeper"))  # fmt: skip
    try:
        assert (await client.recv_type("state"))["status"] == "ready"
        await client.send(init_request(version="2025-11-25"))
        while True:
            frame = await client.recv_type("state", timeout=60)
            if frame.get("reason"):
                break
    finally:
        await client.close()
    assert frame["status"] == "ready" and "has not started serving" in frame["reason"]
    assert "mcp.run()" in frame["reason"]


async def test_many_hostile_files_at_once_leave_the_playground_responsive(app: AppProcess) -> None:
    for name, source in (("hog-1", SPINNER), ("hog-2", FORKER), ("hog-3", ALLOCATOR)):
        app.save_server(name, source)
    hogs = [asyncio.create_task(console_until_exit(app, name)) for name in ("hog-1", "hog-2", "hog-3")]
    try:
        assert await orders_answers_quickly(app) < 10
    finally:
        await asyncio.gather(*hogs, return_exceptions=True)


# Answers every request, but first writes a "request" whose method is a list: no name to look up.
ODD_METHOD = textwrap.dedent("""
    import json, sys

    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message:
            odd = {"jsonrpc": "2.0", "id": "odd-" + str(message["id"]), "method": ["not", "a", "string"]}
            sys.stdout.write(json.dumps(odd) + "\\n")
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}) + "\\n")
            sys.stdout.flush()
""")


async def test_a_message_whose_method_is_not_a_string_is_explained_and_the_session_goes_on(
    app: AppProcess,
) -> None:
    app.save_server("odd-method", ODD_METHOD)
    client = await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                          additional_headers=app.learner_headers("odd-method"))  # fmt: skip
    try:
        assert (await client.recv_type("state"))["status"] == "ready"
        for request_id in (1, 2):  # the second shows the session still reads its server
            await client.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
            odd = await client.recv_type("received", timeout=60)
            assert odd["message"]["method"] == ["not", "a", "string"]
            assert [f["level"] for f in odd["findings"]] == ["error"] and "not a string" in odd["findings"][
                0
            ]["text"]
            answer = await client.recv_type("received", timeout=60)
            assert answer["message"] == {"jsonrpc": "2.0", "id": request_id, "result": {}}
    finally:
        await client.close()


# Lines that cost the relay more to read than their bytes say: 3000 empty arrays each, as fast as the
# file can write them, once it has been sent a message. Unpaced, one such file took 29% of the web
# process's core and stalled everyone else for 167 ms at a time.
COSTLY_LINE = (
    '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":['
    + ",".join(["[]"] * 3000)
    + "]}}"
)
COSTLY_FLOODER = f"""
import sys
sys.stdin.readline()
while True:
    sys.stdout.write({COSTLY_LINE!r} + "\\n")
    sys.stdout.flush()
"""
TOO_MANY_VALUES = """
import sys
sys.stdin.readline()
print('{"jsonrpc":"2.0","method":"notifications/message","params":{"data":[' + ",".join(["[]"] * 20000) + ']}}', flush=True)
sys.stdin.readline()
"""


@pytest.mark.slow  # the output pace, on the real clock
async def test_a_file_writing_costly_lines_as_fast_as_it_can_is_read_at_the_pace(app: AppProcess) -> None:
    app.save_server("costly", COSTLY_FLOODER)
    began = time.monotonic()
    client = await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                          additional_headers=app.learner_headers("costly"))  # fmt: skip
    lines = 20
    try:
        assert (await client.recv_type("state"))["status"] == "ready"
        await client.send(init_request(version="2025-11-25"))
        received = 0
        while received < lines:
            frame = await client.recv_type("received", timeout=60)
            assert frame["raw"] == COSTLY_LINE
            received += 1
        elapsed = time.monotonic() - began
        # A second's worth at once, then the rate: no sooner than this can the 20th line be read.
        cost = line_cost(COSTLY_LINE, json_items(COSTLY_LINE, 10_000))
        assert elapsed >= ((lines - 1) * cost - READ_BYTES_PER_S) / READ_BYTES_PER_S, elapsed
        assert await orders_answers_quickly(app) < 10  # meanwhile, the file goes on writing
    finally:
        await client.close()


async def test_a_file_writing_a_line_of_too_many_values_is_stopped_and_told_why(app: AppProcess) -> None:
    app.save_server("many-values", TOO_MANY_VALUES)
    state, _ = await console_until_exit(app, "many-values", send_first=True)
    assert state["reason"] == "The server wrote a line of more than 10000 JSON values; the session was ended."
    assert await orders_answers_quickly(app) < 10


STDERR_FLOODER = """
import sys
sys.stdin.readline()
while True:
    sys.stderr.write("e" * 65535 + "\\n")
    sys.stderr.flush()
"""


async def test_a_file_writing_stderr_as_fast_as_it_can_is_read_at_the_same_pace(app: AppProcess) -> None:
    # Unpaced, the web process relayed 300 MiB a second of it to the console, for most of its core.
    app.save_server("stderr-flood", STDERR_FLOODER)
    began = time.monotonic()
    client = await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                          additional_headers=app.learner_headers("stderr-flood"))  # fmt: skip
    try:
        assert (await client.recv_type("state"))["status"] == "ready"
        await client.send(init_request(version="2025-11-25"))
        total = last = 0
        while total < 3 * READ_BYTES_PER_S:
            last = len((await client.recv_type("stderr", timeout=60))["text"])
            total += last
        elapsed = time.monotonic() - began
        assert elapsed >= (total - last - READ_BYTES_PER_S) / READ_BYTES_PER_S, (elapsed, total)
        assert await orders_answers_quickly(app) < 10
    finally:
        await client.close()


# --- floods of short lines: each line costs the relay far more than its bytes ----------------------

# `x` lines as fast as the file can write them: a line is read, classified, recorded and framed, which
# unpaced took the web process most of a core and other learners' pings to seconds.
LINE_FLOODER = """
import sys
while True:
    sys.stdout.write("x\\n")
"""
# The same in bursts of a pipe's worth, with a pause between for the relay to catch up: each burst
# then comes while nothing is left unread.
BURST_FLOODER = """
import sys, time
while True:
    sys.stdout.write("x\\n" * 30000)
    sys.stdout.flush()
    time.sleep(0.2)
"""
STDERR_LINE_FLOODER = """
import sys
while True:
    sys.stderr.write("e\\n")
    sys.stderr.flush()
"""
# A victim's pings: nine in ten are answered within VICTIM_TYPICAL_S, every one within
# VICTIM_DEADLINE_S. A quiet machine answers in milliseconds, and a flood that held the web process
# took them all to seconds; the suite's other workers on a 2-core machine can hold one ping for a
# second, which says nothing of the flood.
VICTIM_TYPICAL_S = 0.5
VICTIM_DEADLINE_S = 3.0
COUNTED_S = 4.0


def _lines_within(seconds: float) -> float:
    """Most lines one budget lets through in `seconds`: its first second's worth, then its rate."""
    return READ_BYTES_PER_S * (1 + seconds) / LINE_BYTES


class Victim:
    """Another learner's console on demo-orders, pinging all along: the slowest answer it had."""

    def __init__(self, app: AppProcess) -> None:
        self.app = app
        self.times: list[float] = []
        self.stop = asyncio.Event()
        self.task: asyncio.Task | None = None

    async def __aenter__(self) -> Victim:
        client = await McpClient.connect(self.app.ws_base + "/ws/demo-orders", origin=self.app.base,
                                         additional_headers=self.app.learner_headers("victim"))  # fmt: skip
        assert "result" in await client.initialize()
        self.task = asyncio.create_task(self._ping(client))
        return self

    async def _ping(self, client: McpClient) -> None:
        try:
            n = 100
            while not self.stop.is_set():
                began = time.monotonic()
                assert (await client.call(n, "ping"))["id"] == n
                self.times.append(time.monotonic() - began)
                n += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), 0.05)
        finally:
            await client.close()

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        assert self.task is not None
        await self.task

    @property
    def slowest(self) -> float:
        assert self.times, "the victim got no answer at all"
        return max(self.times)

    def answered_promptly(self) -> bool:
        """Nine pings in ten within VICTIM_TYPICAL_S, and every one within VICTIM_DEADLINE_S."""
        ninth = sorted(self.times)[int(len(self.times) * 0.9) - 1] if len(self.times) >= 10 else self.slowest
        return ninth < VICTIM_TYPICAL_S and self.slowest < VICTIM_DEADLINE_S


class Console:
    """A flooding learner's console that reads everything it is sent: frames by type (a pure MCP
    channel's: "line"), and the end (its exited state, or on the `mcp` wire the close's reason)."""

    def __init__(self, client: EnvelopeClient | McpClient) -> None:
        self.client = client
        self.counts: dict[str, int] = {}
        self.exited: dict | None = None
        self.session: str | None = None
        self.task = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, app: AppProcess, learner: str, query: str = "", mcp: bool = False) -> Console:
        kind = McpClient if mcp else EnvelopeClient
        return cls(await kind.connect(app.ws_base + "/ws/my-server" + query, origin=app.base,
                                      additional_headers=app.learner_headers(learner)))  # fmt: skip

    async def _read(self) -> None:
        try:
            async for text in self.client.ws:
                if isinstance(self.client, McpClient):
                    self.counts["line"] = self.counts.get("line", 0) + 1
                    continue
                frame = json.loads(text)
                self.counts[frame["type"]] = self.counts.get(frame["type"], 0) + 1
                if frame["type"] == "state":
                    self.session = frame["session"]
                if frame["type"] == "state" and frame["status"] == "exited":
                    self.exited = frame
        except websockets.ConnectionClosed as exc:
            if isinstance(self.client, McpClient) and exc.rcvd is not None and exc.rcvd.code == 1011:
                self.exited = {"reason": exc.rcvd.reason}

    async def close(self) -> None:
        await self.client.close()
        await self.task


async def _flood(app: AppProcess, learner: str, source: str, kind: str,
                 mcp: bool = False) -> tuple[dict, Victim]:  # fmt: skip
    """One console on `source`, paused (in its first COUNTED_S it gets no more `kind` frames than one
    budget lets through since its session began); its end, and the victim's pings meanwhile."""
    app.save_server(learner, source)
    async with Victim(app) as victim:
        began = time.monotonic()
        console = await Console.open(app, learner, mcp=mcp)
        try:
            await asyncio.sleep(COUNTED_S)  # counting what arrives in a fixed time
            counted = console.counts.get(kind, 0)
            over = counted - _lines_within(time.monotonic() - began)
            assert await wait_until_async(lambda: console.exited is not None, timeout=60), console.counts
        finally:
            await console.close()
    assert console.exited is not None
    assert counted > 0 and over <= 0, (counted, over)  # paused: its pipe full, the file blocked
    return console.exited, victim


@pytest.mark.slow  # the flood stop, on the real clock
async def test_a_file_flooding_stdout_with_short_lines_is_paused_then_ended_and_others_go_on(
    app: AppProcess,
) -> None:
    exited, victim = await _flood(app, "line-flooder", LINE_FLOODER, "received")
    assert exited["reason"] == DEFAULT_LIMITS.flooded(), exited
    assert victim.answered_promptly(), victim.times


async def test_a_file_flooding_the_mcp_wire_with_short_lines_is_paused_then_ended_too(
    app: AppProcess,
) -> None:
    # On the `mcp` wire a line is forwarded before it is recorded: charged all the same.
    exited, victim = await _flood(app, "mcp-line-flooder", BURST_FLOODER, "line", mcp=True)
    assert DEFAULT_LIMITS.flooded().startswith(exited["reason"]), exited  # a close's reason is cut short
    assert victim.answered_promptly(), victim.times


async def test_a_file_flooding_stderr_with_short_lines_is_paused_then_ended_and_others_go_on(
    app: AppProcess,
) -> None:
    exited, victim = await _flood(app, "stderr-line-flooder", STDERR_LINE_FLOODER, "stderr")
    assert exited["reason"] == DEFAULT_LIMITS.flooded(), exited
    assert victim.answered_promptly(), victim.times


async def test_one_learners_four_flooding_consoles_share_one_budget(app: AppProcess) -> None:
    app.save_server("four-floods", LINE_FLOODER)
    async with Victim(app) as victim:
        began = time.monotonic()
        consoles = [await Console.open(app, "four-floods") for _ in range(4)]
        try:
            await asyncio.sleep(COUNTED_S)
            counted = sum(console.counts.get("received", 0) for console in consoles)
            elapsed = time.monotonic() - began
            assert await wait_until_async(lambda: all(c.exited for c in consoles), timeout=60)
        finally:
            for console in consoles:
                await console.close()
    # One budget: four would let four times as many through.
    assert 0 < counted <= _lines_within(elapsed), counted
    assert all(console.exited["reason"] == DEFAULT_LIMITS.flooded() for console in consoles)  # type: ignore[index]
    assert victim.answered_promptly(), victim.times


def _server_lines_read(app: AppProcess) -> float:
    """Every server line the relay has read, as its metrics say."""
    text = httpx.get(app.base + "/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith('playground_relay_messages_total{direction="server"}'):
            return float(line.split()[-1])
    return 0.0


async def test_a_flood_nobody_listens_to_is_read_no_further_than_a_small_buffer(app: AppProcess) -> None:
    app.save_server("unheard-flooder", LINE_FLOODER)
    before = _server_lines_read(app)
    console = await Console.open(app, "unheard-flooder")
    # Read while listened to: the probe below sees the lines the relay reads.
    assert await wait_until_async(lambda: _server_lines_read(app) > before + 100, timeout=60)
    console.client.ws.transport.abort()  # dropped without a goodbye: the session waits for a reconnect
    await console.task
    dropped = _server_lines_read(app)
    readings = [dropped]

    def settled() -> bool:
        readings.append(_server_lines_read(app))
        return len(readings) > 5 and readings[-1] == readings[-6]

    try:
        # Within the reconnect grace (30 s), which used to be read to the end.
        assert await wait_until_async(settled, timeout=20, interval=0.2), readings[-6:]
        # The small buffer, and what was read while the relay had not yet seen the connection go.
        assert readings[-1] - dropped <= (UNHEARD_BYTES + READ_BYTES_PER_S) / LINE_BYTES, (
            readings[-1] - dropped
        )
    finally:
        # The next test starts clean: the session taken back and closed with a goodbye, which ends it.
        again = await Console.open(app, "unheard-flooder", f"?session={console.session}")
        await again.close()
