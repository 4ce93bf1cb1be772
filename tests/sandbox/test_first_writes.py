"""Copying ahead the pages a demo's first message writes (app/sandbox/first_writes.py): what a probe
teaches, what it leaves out, how it fails, and an instance of the real pool answering with them copied."""

from __future__ import annotations

import asyncio
import ctypes
import json
import mmap
import os
import time

import pytest

from app.protocol import messages
from app.sandbox import first_writes
from app.sandbox.first_writes import PAGE, PRESENT, Unlearnable
from app.sandbox.limits import Limits
from app.sandbox.pool import InstancePool

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="frame numbers and the sandbox need root")

EXCLUSIVE = 1 << 56  # pagemap: the page is mapped by this process only


def address_of(area: mmap.mmap) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(area))


def touched_area(pages: int) -> tuple[mmap.mmap, int]:
    """An anonymous private mapping whose pages are present (written once), and its address."""
    area = mmap.mmap(-1, pages * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for page in range(pages):
        area[page * PAGE] = 1
    return area, address_of(area)


def children() -> set[str]:
    """This process's children now (other tests may have left some of their own running)."""
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as handle:
        return set(handle.read().split())


def proc() -> int:
    return os.open("/proc", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def pages_of(learnt: first_writes.Runs) -> set[int]:
    return {address + offset for address, length in learnt for offset in range(0, length, PAGE)}


# --- the parts, without a process --------------------------------------------------------------


def test_only_private_writable_mappings_are_searched() -> None:
    maps = "\n".join(
        [
            "55d0a000-55d0c000 rw-p 00000000 00:00 0                          [heap]",
            "7f0000000000-7f0000002000 r--p 00000000 08:01 1234               /usr/lib/libc.so.6",
            "7f0000002000-7f0000003000 rw-p 00002000 08:01 1234               /usr/lib/libc.so.6",
            "7f0000003000-7f0000005000 rw-p 00000000 00:00 0 ",
            "7f0000005000-7f0000006000 rw-s 00000000 00:01 99                 /dev/zero (deleted)",
            "7f0000006000-7f0000007000 ---p 00000000 00:00 0 ",
            "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                  [stack]",
            "7ffc00100000-7ffc00102000 r--p 00000000 00:00 0                  [vvar]",
            "7ffc00102000-7ffc00104000 rw-p 00000000 00:00 0                  [uprobes]",
        ]
    )
    assert first_writes.writable_ranges(maps) == [
        (0x55D0A000, 0x55D0C000),
        (0x7F0000002000, 0x7F0000003000),
        (0x7F0000003000, 0x7F0000005000),
        (0x7FFC00000000, 0x7FFC00021000),
    ]


def test_neighbouring_pages_make_one_run() -> None:
    base = 0x7F0000000000
    pages = [base + 3 * PAGE, base, base + PAGE, base + 7 * PAGE, base + 2 * PAGE]
    assert first_writes.runs(pages) == [(base, 4 * PAGE), (base + 7 * PAGE, PAGE)]
    assert first_writes.runs([]) == []


def test_a_page_counts_as_written_when_it_moved_frames_or_newly_came() -> None:
    ranges = [(0x1000 * PAGE, 0x1000 * PAGE + 6 * PAGE)]
    before = mmap.mmap(-1, 6 * 8)
    after = mmap.mmap(-1, 6 * 8)
    shared, moved, flags_only, came, went, absent = range(6)
    entries_before = {
        shared: PRESENT | 100,
        moved: PRESENT | 101,
        flags_only: PRESENT | 102,
        went: PRESENT | 104,
    }
    entries_after = {shared: PRESENT | 100, moved: PRESENT | 201, flags_only: PRESENT | EXCLUSIVE | 102,
                     came: PRESENT | 203}  # fmt: skip
    for table, entries in ((before, entries_before), (after, entries_after)):
        for index, entry in entries.items():
            table[index * 8 : index * 8 + 8] = entry.to_bytes(8, "little")
    low = ranges[0][0]
    assert first_writes.written(ranges, before, after) == [low + moved * PAGE, low + came * PAGE]
    assert first_writes.frames_visible(after)
    assert not first_writes.frames_visible(mmap.mmap(-1, 8 * 8))


# --- a probe, a real child ----------------------------------------------------------------------


def answer_then_idle(set_up: tuple[int, list[int]], answer: tuple[int, list[int]], reply: bool = True):  # noqa: ANN201
    """A child's `serve`: write the `set_up` pages, wait in an event loop for a line, write the
    `answer` pages, reply (or not), and wait on."""

    def write(area: tuple[int, list[int]]) -> None:
        address, pages = area
        for page in pages:
            ctypes.memset(address + page * PAGE, 7, 1)

    def serve() -> None:
        write(set_up)

        async def main() -> None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader()
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", 0))
            await reader.readline()
            write(answer)
            if reply:
                os.write(1, b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n')
            await asyncio.Event().wait()

        asyncio.run(main())

    return serve


@as_root
def test_a_probe_teaches_the_pages_its_answer_wrote_and_not_those_of_its_setting_up() -> None:
    setup_area, setup_at = touched_area(4)
    answer_area, answer_at = touched_area(4)
    untouched_area, untouched_at = touched_area(4)
    proc_fd = proc()
    try:
        learnt = pages_of(first_writes.learn(answer_then_idle((setup_at, [0, 1, 2, 3]), (answer_at, [0, 2])),
                                             b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n', proc_fd))  # fmt: skip
    finally:
        os.close(proc_fd)
    assert {answer_at, answer_at + 2 * PAGE} <= learnt
    assert not learnt & {answer_at + PAGE, answer_at + 3 * PAGE}, "pages the answer did not write"
    assert not learnt & {setup_at + page * PAGE for page in range(4)}, "pages written setting up"
    assert not learnt & {untouched_at + page * PAGE for page in range(4)}
    for area in (setup_area, answer_area, untouched_area):
        assert area[0] == 1  # the parent's own pages are untouched: the child wrote its copies


@as_root
def test_a_probe_that_dies_setting_up_teaches_nothing() -> None:
    proc_fd = proc()
    began = time.monotonic()
    try:
        assert first_writes.learn(lambda: os._exit(3), b"{}\n", proc_fd) == []
    finally:
        os.close(proc_fd)
    assert time.monotonic() - began < first_writes.SET_UP_TIMEOUT_S


@as_root
def test_a_probe_that_does_not_answer_is_given_up_and_ended() -> None:
    area, at = touched_area(1)
    proc_fd = proc()
    before = children()
    try:
        learnt = first_writes.learn(answer_then_idle((at, []), (at, [0]), reply=False), b"{}\n", proc_fd, 0.5)
    finally:
        os.close(proc_fd)
    assert learnt == []
    assert children() <= before, "the probe was left running"
    del area


@as_root
def test_an_unprivileged_process_learns_nothing_and_says_why() -> None:
    """Without CAP_SYS_ADMIN the page map hides frame numbers (and here wchan, where a probe waits,
    reads 0 as well): the host is unlearnable, said once, not a probe's failure to retry per server."""
    proc_fd = proc()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        outcome = b"?"
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            area, at = touched_area(1)
            first_writes.learn(answer_then_idle((at, []), (at, [0])), b"{}\n", proc_fd)
            outcome = b"learnt"
        except Unlearnable as exc:
            outcome = b"unlearnable: " + str(exc).encode()
        except BaseException as exc:
            outcome = repr(exc).encode()
        finally:
            os.write(write, outcome)
            os._exit(0)
    os.close(write)
    try:
        outcome = os.read(read, 4096).decode()
        os.waitpid(pid, 0)
    finally:
        os.close(read)
        os.close(proc_fd)
    assert outcome.startswith("unlearnable: "), outcome


# --- copying ahead ------------------------------------------------------------------------------


def process_madvise_takes_populate() -> bool:
    """Whether this kernel copies a page of this process through process_madvise (Linux 6.13 on)."""
    area, at = touched_area(1)
    pidfd = os.pidfd_open(os.getpid())
    try:
        learnt = first_writes.prepare([(at, PAGE)])
        return first_writes._libc.syscall(first_writes.PROCESS_MADVISE, pidfd, learnt, 1,
                                          first_writes.MADV_POPULATE_WRITE, 0) == PAGE  # fmt: skip
    finally:
        os.close(pidfd)
        area.close()


@as_root
@pytest.mark.parametrize("calls", ["one call", "run by run"])
def test_copying_ahead_makes_the_pages_ones_own_and_skips_what_is_gone(
    calls: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process_madvise for every run where the kernel takes it (6.13 on); a kernel that refuses
    it (here: a system call number no kernel has) gets the same, one madvise per run."""
    if calls == "one call":
        if not process_madvise_takes_populate():
            pytest.skip("this kernel takes no MADV_POPULATE_WRITE through process_madvise (6.13 does)")

        def one_run_at_a_time(*_args: object) -> int:
            raise AssertionError("a run was copied on its own")

        monkeypatch.setattr(first_writes, "_madvise", one_run_at_a_time)
    else:
        monkeypatch.setattr(first_writes, "PROCESS_MADVISE", ctypes.c_long(-1))
    area, at = touched_area(4)
    gone_at = []
    for _ in range(2):
        gone = mmap.mmap(-1, PAGE)
        gone_at.append(address_of(gone))
        gone.close()  # unmapped now: a run the fork server's heap no longer has
    # A gone run first (the call fails at once) and in the middle (the call stops part way).
    learnt = first_writes.prepare([(gone_at[0], PAGE), (at, PAGE), (gone_at[1], PAGE), (at + 2 * PAGE, PAGE)])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            with open("/proc/self/pagemap", "rb") as pagemap:
                pagemap.seek(at // PAGE * 8)
                shared = int.from_bytes(pagemap.read(8), "little") & EXCLUSIVE
            copied = first_writes.copy_ahead(learnt)
            with open("/proc/self/pagemap", "rb") as pagemap:
                pagemap.seek(at // PAGE * 8)
                own = [bool(int.from_bytes(pagemap.read(8), "little") & EXCLUSIVE) for _ in range(4)]
            os.write(write, json.dumps([shared, copied, own, [area[n * PAGE] for n in range(4)]]).encode())
        except BaseException as exc:
            os.write(write, json.dumps(repr(exc)).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        outcome = json.loads(os.read(read, 4096))
        os.waitpid(pid, 0)
    finally:
        os.close(read)
    assert isinstance(outcome, list), outcome
    shared, copied, own, data = outcome
    assert shared == 0, "after fork the page is the parent's too"
    assert copied == 2 * PAGE, "the gone runs are skipped, the mapped ones copied"
    assert own == [True, False, True, False], "only the pages asked for became the child's own"
    assert data == [1, 1, 1, 1], "copying changes no byte"


# --- the real pool --------------------------------------------------------------------------------


def minor_faults(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rpartition(") ")[2].split()[7])


def waiting(pid: int) -> bool:
    with open(f"/proc/{pid}/wchan") as handle:
        return handle.read() == "do_epoll_wait"


async def first_reply_faults(pool: InstancePool, server: str, opening: dict) -> tuple[dict, int]:
    """An instance of `server` (a warm one where its pool has any), set up and idle, sent `opening`:
    its reply, and the page faults it took to answer."""
    deadline = time.monotonic() + 30
    while pool.pool_size(server) < pool.pool_sizes.get(server, 0):  # not one started for us instead
        assert time.monotonic() < deadline, "the warm pool never filled"
        await asyncio.sleep(0.01)
    instance = await pool.acquire(server)
    try:
        assert instance.pid is not None
        while not waiting(instance.pid):  # set up and idle, as a learner finds it
            assert time.monotonic() < deadline, "the instance never came to wait for a message"
            await asyncio.sleep(0.01)
        before = minor_faults(instance.pid)
        await instance.write_line(json.dumps(opening))
        reply = json.loads(await asyncio.wait_for(instance.read_line(), 30) or "null")
        return reply, minor_faults(instance.pid) - before
    finally:
        await pool.release(instance)


@as_root
@pytest.mark.parametrize(("server", "opening"), [("demo-orders", messages.initialize(1)),
                                                 ("demo-stateless", messages.discover(1))])  # fmt: skip
async def test_an_instance_answers_its_opening_with_its_pages_already_copied(
    server: str, opening: dict
) -> None:
    """Without copying ahead, the first initialize took some 260 page faults (copies of the fork
    server's pages) of its own; a later message some 70."""
    pool = InstancePool(servers=[server], limits=Limits(), sandbox=True, extra_modules=[], capacity=4,
                        pool_sizes={server: 1}, uid_base=320_000, max_line_bytes=1 << 20,
                        max_output_bytes=1 << 20)  # fmt: skip
    await pool.start()
    try:
        reply, faults = await first_reply_faults(pool, server, opening)
    finally:
        await pool.stop()
    assert reply["id"] == 1 and "result" in reply, reply
    assert faults < 100, f"{faults} page faults to answer the opening"


@as_root
async def test_a_demo_that_cannot_be_probed_still_serves_and_the_others_are_learnt(
    capfd: pytest.CaptureFixture[str],
) -> None:
    servers = ["test-unprobed", "demo-orders"]
    pool = InstancePool(servers=servers, limits=Limits(), sandbox=True, extra_modules=["tests.fixtures.unprobed_server"],
                        capacity=4, pool_sizes=dict.fromkeys(servers, 1), uid_base=330_000, max_line_bytes=1 << 20,
                        max_output_bytes=1 << 20)  # fmt: skip
    await pool.start()
    try:
        reply, unprobed_faults = await first_reply_faults(pool, "test-unprobed", messages.initialize(1))
        orders_reply, orders_faults = await first_reply_faults(pool, "demo-orders", messages.initialize(1))
    finally:
        await pool.stop()
    assert "learning test-unprobed's first writes failed: TypeError" in capfd.readouterr().err
    assert reply["result"]["serverInfo"]["name"] == "test-unprobed"
    assert unprobed_faults > 150, "nothing was copied ahead for it, so its first answer copies as it goes"
    assert "result" in orders_reply and orders_faults < 100


@as_root
async def test_an_instance_started_for_someone_waiting_copies_nothing_ahead() -> None:
    """Its first message comes at once: copying ahead first would cost more than the copies it
    saves (first_writes), so it copies as it writes, as before."""
    pool = InstancePool(servers=["demo-orders"], limits=Limits(), sandbox=True, extra_modules=[], capacity=4,
                        pool_sizes={"demo-orders": 0}, uid_base=340_000, max_line_bytes=1 << 20,
                        max_output_bytes=1 << 20)  # fmt: skip
    await pool.start()
    try:
        reply, faults = await first_reply_faults(pool, "demo-orders", messages.initialize(1))
    finally:
        await pool.stop()
    assert reply["id"] == 1 and "result" in reply, reply
    assert faults > 150, f"only {faults} page faults: its pages were copied ahead"
