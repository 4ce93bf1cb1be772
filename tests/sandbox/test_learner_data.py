"""No learner's file reaches another learner: tried from the attacker's side through the real app.

Learner A's server.py holds a random marker and runs; then learner B's server.py scans its whole
readable address space for A's marker, at once and again after other sessions have opened and
closed. Whatever the process that forks instances ever held is inherited by every instance forked
after it, so the fork server must never read a learner's file: each instance reads its own, after
the fork. (When it did, what a scan found depended on how the heap's free blocks were reused: one
right after A's run found A's file in about half the rounds, so a test runs several.)
"""

from __future__ import annotations

import json
import os
import secrets
import textwrap

import pytest

from app.demos import MY_SERVER
from app.sandbox.own_server import BAD_FILE_EXIT
from tests.support.appserver import AppProcess
from tests.support.forkserver import RawClient, pipes, running_forkserver
from tests.support.procs import wait_until
from tests.support.wsclient import McpClient

# Less than any Python instance maps readable (the interpreter, its heap, the SDK's modules): a scan
# that saw less than this missed most of the process.
SCANNED_FLOOR = 32 * 1024 * 1024
SESSIONS_BETWEEN = 5
ROUNDS = 5  # of A's run then B's scan
# Learner A's file: a server of this many tools, the marker in each one's description.
HOLDER_TOOLS = 60
UID_BASE = 3_500_000
RANGE = range(UID_BASE, UID_BASE + 8)  # the probe's uid, then the instances'


ECHO_TOOL = """

@mcp.tool()
def echo_{index}(text: str) -> str:
    \"\"\"Echo {index}: the text, reversed (key {marker}).\"\"\"
    return text[::-1]
"""


def holder(marker: str, tools: int) -> str:
    """Learner A's file: an ordinary server of `tools` tools whose text holds `marker` near its end,
    as a key in a file would."""
    head = 'from mcp.server.mcpserver import MCPServer\n\nmcp = MCPServer("learner-a")\n'
    tail = textwrap.dedent(f"""

        API_KEY = "{marker}"


        @mcp.tool()
        def key_length() -> int:
            return len(API_KEY)


        if __name__ == "__main__":
            mcp.run()
    """)
    return head + "".join(ECHO_TOOL.format(index=index, marker=marker) for index in range(tools)) + tail


# Learner B's file: at its very start (before its own allocations reuse what it inherited), finds
# every readable page without /proc (the sandbox shows none) and without touching an unmapped one,
# then looks for the markers in place with memmem, copying nothing:
# - any mapping in a range: mmap(MAP_FIXED_NOREPLACE) answers EEXIST (checked before any limit);
# - a range wholly mapped: msync(MS_ASYNC) answers 0;
# - a mapped page readable: write(2) of its first byte to a pipe answers 1, not EFAULT.
# The markers come as hex; each needle is built byte by byte in a buffer of its own, whose address is
# left out of the hits, so the only copy of another learner's marker the scan can find is one the
# process was given. A tool reports what the scan found.
SCANNER = textwrap.dedent('''
    import ctypes
    import errno
    import json
    import os

    OWN = "{own}"
    WANTED = {wanted!r}
    PAGE = os.sysconf("SC_PAGE_SIZE")
    LOWEST = 1 << 16  # below the kernel's mmap_min_addr nothing is mapped
    HIGHEST = (1 << 47) - PAGE  # the top of user space with 4-level page tables (x86_64, aarch64)
    MAP_FAILED = (1 << 64) - 1
    PROT_NONE, PROT_READ, PROT_WRITE = 0, 1, 2
    MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE, MAP_FIXED_NOREPLACE = 0x02, 0x20, 0x4000, 0x100000
    MS_ASYNC = 1

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype, libc.mmap.argtypes = ctypes.c_size_t, (
        ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
    libc.munmap.argtypes = (ctypes.c_size_t, ctypes.c_size_t)
    libc.msync.argtypes = (ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int)
    libc.write.restype, libc.write.argtypes = ctypes.c_ssize_t, (ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t)
    libc.read.restype, libc.read.argtypes = ctypes.c_ssize_t, (ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t)
    libc.memmem.restype = ctypes.c_size_t
    libc.memmem.argtypes = (ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)


    def anything_mapped(low, high):
        """Whether any mapping meets [low, high): True, False, or None where the kernel will not say."""
        got = libc.mmap(low, high - low, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE
                        | MAP_FIXED_NOREPLACE, -1, 0)
        if got == MAP_FAILED:
            err = ctypes.get_errno()
            return True if err == errno.EEXIST else None if err == errno.EPERM else False
        libc.munmap(got, high - low)
        if got != low:
            raise OSError("this kernel has no MAP_FIXED_NOREPLACE")
        return False


    def mapped_ranges():
        found, todo = [], [(LOWEST, HIGHEST)]
        while todo:
            low, high = todo.pop()
            answer = anything_mapped(low, high)
            if answer is False or (answer is None and high - low == PAGE):
                continue
            if answer and libc.msync(low, high - low, MS_ASYNC) == 0:
                found.append((low, high))
                continue
            if high - low == PAGE:
                continue
            middle = low + (high - low) // PAGE // 2 * PAGE
            todo += [(middle, high), (low, middle)]
        return sorted(found)


    def readable_runs(ranges):
        read_end, write_end = os.pipe()
        # Drained into a mapping of its own: a buffer from the heap would overwrite what is there.
        sink = libc.mmap(0, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        runs, written = [], 0
        for low, high in ranges:
            for page in range(low, high, PAGE):
                if libc.write(write_end, page, 1) == 1:
                    written += 1
                    if runs and runs[-1][1] == page:
                        runs[-1][1] = page + PAGE
                    else:
                        runs.append([page, page + PAGE])
                if written >= 1 << 15:  # drain the pipe into one buffer, never a new object
                    libc.read(read_end, sink, 1 << 16)
                    written = 0
        os.close(read_end)
        os.close(write_end)
        libc.munmap(sink, 1 << 16)
        return runs


    def needle(hex_text):
        buffer = ctypes.create_string_buffer(len(hex_text) // 2)
        for index in range(len(hex_text) // 2):
            buffer[index] = int(hex_text[2 * index : 2 * index + 2], 16)
        return buffer


    def scan():
        needles = [needle(text) for text in WANTED]
        hits = [0 for _ in needles]
        runs = readable_runs(mapped_ranges())
        own = [(ctypes.addressof(b), ctypes.addressof(b) + len(b)) for b in needles]
        for low, high in runs:
            for index, buffer in enumerate(needles):
                start, size = ctypes.addressof(buffer), len(buffer)
                at = low
                while at <= high - size:
                    hit = libc.memmem(at, high - at, start, size)
                    if not hit:
                        break
                    hits[index] += not any(first <= hit < last for first, last in own)
                    at = hit + 1
        return {{"hits": hits, "scanned": sum(high - low for low, high in runs), "own": len(OWN)}}


    FOUND = json.dumps(scan())

    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("learner-b")


    @mcp.tool()
    def found() -> str:
        return FOUND


    if __name__ == "__main__":
        mcp.run()
''')


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with AppProcess(tmp_path_factory.mktemp("learner-data"), warm_pool_size=1) as app:
        yield app


async def own_server(app: AppProcess, learner: str) -> McpClient:
    client = await McpClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                     additional_headers=app.learner_headers(learner))  # fmt: skip
    assert "result" in await client.initialize()
    return client


async def scanned(app: AppProcess, learner: str) -> dict:
    """What a fresh instance of the learner's scanner found."""
    client = await own_server(app, learner)
    try:
        return json.loads(await client.tool(2, "found"))
    finally:
        await client.close()


async def test_a_learners_file_is_nowhere_in_another_learners_server(app: AppProcess) -> None:
    theirs = f"learner-a-secret-{secrets.token_hex(16)}"
    mine = f"learner-b-own-{secrets.token_hex(16)}"
    app.save_server("learner-a", holder(theirs, HOLDER_TOOLS))
    app.save_server(
        "learner-b", SCANNER.format(own=mine, wanted=[theirs.encode().hex(), mine.encode().hex()])
    )
    scans = []
    for _ in range(ROUNDS):  # A's server runs, then B's scans a fresh instance of its own at once
        client = await own_server(app, "learner-a")
        try:
            assert json.loads(await client.tool(2, "key_length")) == len(theirs)
        finally:
            await client.close()
        scans.append(await scanned(app, "learner-b"))
    for index in range(SESSIONS_BETWEEN):  # then after other people's sessions have come and gone
        between = await McpClient.connect(app.ws_base + "/ws/demo-orders", origin=app.base,
                                          additional_headers=app.learner_headers(f"bystander-{index}"))  # fmt: skip
        try:
            assert "result" in await between.initialize()
        finally:
            await between.close()
    scans.append(await scanned(app, "learner-b"))
    for found in scans:
        assert found["own"] == len(mine)
        theirs_hits, own_hits = found["hits"]
        # The same scan finds B's own marker (its file, read into its own process), over enough memory.
        assert own_hits >= 1 and found["scanned"] > SCANNED_FLOOR, found
        assert theirs_hits == 0, [scan["hits"] for scan in scans]


# --- the process that forks, seen from outside --------------------------------------------------


@pytest.fixture
def forkserver():
    with running_forkserver(RANGE) as client:
        yield client


def copies_in(pid: int, text: str) -> int:
    """How many times `text` is in the readable memory of process `pid` (read through the host's /proc)."""
    needle, found = text.encode(), 0
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        for line in maps:
            bounds, permissions = line.split()[:2]
            if not permissions.startswith("r"):
                continue
            low, high = (int(bound, 16) for bound in bounds.split("-"))
            try:
                memory.seek(low)
                found += memory.read(high - low).count(needle)
            except OSError:  # [vvar] and the like cannot be read this way
                continue
    return found


def spawn_own(forkserver: RawClient, data: bytes, id_: int = 1) -> tuple[dict, list[int]]:
    """Spawn my-server with a file holding `data`, as the app sends it; (the reply, our pipe ends)."""
    fds, ours = pipes()
    memfd = os.memfd_create("server.py")
    os.write(memfd, data)
    request = {"op": "spawn", "id": id_, "server": MY_SERVER, "uid": RANGE.start + id_, "runtime": "python"}
    forkserver.send(json.dumps(request).encode(), [*fds, memfd])
    for fd in (*fds, memfd):
        os.close(fd)
    return forkserver.recv_op("spawned", "failed"), ours


def test_the_fork_server_holds_no_copy_of_a_file_it_passed_on(forkserver: RawClient) -> None:
    marker = f"learner-a-secret-{secrets.token_hex(16)}"
    reply, ours = spawn_own(forkserver, f"import sys\nKEY = {marker!r}\nsys.stdin.read()\n".encode())
    try:
        assert reply["op"] == "spawned", reply
        # The same probe finds the file in the instance, which has read it.
        assert wait_until(lambda: copies_in(reply["pid"], marker) > 0, 30)
        assert copies_in(forkserver.ready["pid"], marker) == 0
    finally:
        for fd in ours:
            os.close(fd)


def test_a_file_that_cannot_run_is_explained_by_the_instance_itself(forkserver: RawClient) -> None:
    """The fork server passes the file on unread; the instance finds it is not UTF-8 text, says so on
    its stderr and exits with its own status (the web process refuses such a file at save time)."""
    reply, (stdin, stdout, stderr) = spawn_own(forkserver, "print('caf\u00e9')\n".encode("latin-1"))
    try:
        assert reply["op"] == "spawned", reply
        exited = forkserver.recv_op("exited")
        assert exited["pid"] == reply["pid"] and exited["code"] == BAD_FILE_EXIT, exited
        said = os.read(stderr, 65536).decode()
        assert (
            said == "server.py cannot be run: the file is not UTF-8 text (byte 10 cannot be read as UTF-8).\n"
        )
    finally:
        for fd in (stdin, stdout, stderr):
            os.close(fd)
