"""Copy, as an instance starts, the pages its first message would otherwise copy on the learner's clock.

An instance shares the fork server's memory until it writes to it; the first write to each page
copies it (a fault and 4 KiB). A demo's first `initialize` wrote some 260 pages it shared, about
half of its time to answer (bench/README.md, round 21). Which pages those are is learnt once per
demo in the fork server, from a probe: a child forked and confined as an instance is, left to set
up until it waits in its event loop, then sent the demo's opening. The pages whose physical frame
moved between those two moments are the ones its answer wrote. Every later instance of that demo
that will wait in the warm pool copies those pages as it starts (MADV_POPULATE_WRITE, all of them
in one process_madvise call where the kernel allows it), before a learner waits on it. One started
for a learner already waiting does not: its first message follows at once, and copying ahead cost
more than the copies it saves (3 us a page, against 2.6 us a page as the instance writes it).

It costs no memory a session would not hold: a live session has written those pages (2-4 of some
250 learnt pages are not). The pages of setting up are left out on purpose: an instance writes them
before anyone reaches it, and its allocator's state there differs from the probe's (round 3 learnt
them too, and a session held 0.7 MiB more). An idle warm instance holds the pages sooner. Reading
frame numbers needs CAP_SYS_ADMIN: without it (rootless mode) nothing is learnt and instances copy
as they go, as before.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import select
import signal
import time
from collections.abc import Callable, Iterable

PAGE = os.sysconf("SC_PAGE_SIZE")
MADV_POPULATE_WRITE = 23  # Linux 5.14: fault the range in writable, copying what is shared
# process_madvise(2): many ranges in one call; any advice for the calling process since Linux 6.13.
PROCESS_MADVISE = ctypes.c_long(440)  # the same number on x86_64 and aarch64
UIO_MAXIOV = 1024  # ranges in one call, at most
PRESENT = 1 << 63
FRAME_MASK = (1 << 55) - 1
# A probe that has not answered by then is given up: its server's instances start as they did.
PROBE_TIMEOUT_S = 10.0
# A probe sets up in some 10 ms; one not waiting for its message by then never will.
SET_UP_TIMEOUT_S = 2.0
# Where the kernel does not name where a process sleeps, /proc/PID/wchan reads "0": this long asleep
# with no name, and nothing can be learnt here.
NAMELESS_SLEEP_S = 0.2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_libc.syscall.restype = ctypes.c_long
_madvise = _libc.madvise  # one run at a time: where process_madvise is refused

Runs = list[tuple[int, int]]  # (first page's address, length in bytes), in address order


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Unlearnable(Exception):
    """This host cannot show which pages a probe writes: no server's can be learnt here."""


def writable_ranges(maps: str) -> list[tuple[int, int]]:
    """The private writable mappings of a /proc/PID/maps text: where a write copies a shared page."""
    ranges = []
    for line in maps.splitlines():
        fields = line.split()
        low, high = (int(end, 16) for end in fields[0].split("-"))
        perms, name = fields[1], (fields[5] if len(fields) > 5 else "")
        if (
            perms[1] == "w"
            and perms[3] == "p"
            and (not name.startswith("[") or name in ("[heap]", "[stack]"))
        ):
            ranges.append((low, high))
    return ranges


def frames(pagemap: int, ranges: list[tuple[int, int]]) -> mmap.mmap:
    """The pagemap entries of `ranges`, one after another, 8 bytes a page (pagemap: an open descriptor
    of /proc/PID/pagemap). They are held in an anonymous mapping of their own, not in the heap: the
    fork server's heap must look the same at an instance's fork as at the probe's, or the first
    message would write other pages than those learnt (and a large malloc freed would move glibc's
    threshold between the heap and mmap)."""
    table = mmap.mmap(-1, max(sum(high - low for low, high in ranges) // PAGE * 8, 8))
    with memoryview(table) as view:
        at = 0
        for low, high in ranges:
            size = (high - low) // PAGE * 8
            if os.preadv(pagemap, [view[at : at + size]], low // PAGE * 8) != size:
                raise OSError(f"a short read of the page map at {low:#x}")
            at += size
    return table


def frames_visible(table: mmap.mmap) -> bool:
    """Whether these entries show frame numbers (they read as 0 without CAP_SYS_ADMIN)."""
    with memoryview(table) as raw, raw.cast("Q") as entries:
        return any(entry & PRESENT and entry & FRAME_MASK for entry in entries)


def written(ranges: list[tuple[int, int]], before: mmap.mmap, after: mmap.mmap) -> list[int]:
    """The pages present `after` in another frame than `before` (or not present before): written."""
    pages = []
    with (
        memoryview(before) as old_raw,
        old_raw.cast("Q") as old,
        memoryview(after) as new_raw,
        new_raw.cast("Q") as new,
    ):
        index = 0
        for low, high in ranges:
            for page in range(low, high, PAGE):
                entry = new[index]
                if entry & PRESENT and (entry ^ old[index]) & (PRESENT | FRAME_MASK):
                    pages.append(page)
                index += 1
    return pages


def runs(pages: Iterable[int]) -> Runs:
    """Page addresses, as runs of neighbouring pages: one system call each."""
    merged: Runs = []
    for page in sorted(pages):
        if merged and merged[-1][0] + merged[-1][1] == page:
            merged[-1] = (merged[-1][0], merged[-1][1] + PAGE)
        else:
            merged.append((page, PAGE))
    return merged


def learn(serve: Callable[[], None], message: bytes, proc: int, timeout_s: float = PROBE_TIMEOUT_S, *,
          fork: Callable[[], int] = os.fork) -> Runs:  # fmt: skip
    """The pages a child forked now writes to answer `message` (one line), once it has set up.

    `serve` runs in the child (made by `fork`) with fd 0 to read and fd 1 to answer on; it must
    confine itself as an instance would. The pages its setting up writes are left out (see above).
    `proc` is a descriptor of the host's /proc. Returns no runs when the child dies, or does not wait
    in an event loop or answer in time; raises Unlearnable when this host hides what is needed (frame
    numbers need CAP_SYS_ADMIN; where the child waits, the kernel's wchan).
    """
    ranges = writable_ranges(_read(os.open("self/maps", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc)))
    to_child, to_us = os.pipe(), os.pipe()
    pid = fork()
    if pid == 0:
        try:
            os.dup2(to_child[0], 0)
            os.dup2(to_us[1], 1)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # a probe's complaints are nobody's business
            serve()
        finally:
            os._exit(0)
    os.close(to_child[0])
    os.close(to_us[1])
    try:
        if not _waiting(pid, proc, time.monotonic() + min(SET_UP_TIMEOUT_S, timeout_s)):
            return []
        set_up = _frames_of(pid, proc, ranges)
        try:
            if not frames_visible(set_up):
                raise Unlearnable("frame numbers are hidden from this process (they need CAP_SYS_ADMIN)")
            deadline = time.monotonic() + timeout_s
            os.write(to_child[1], message)
            if not _answered(to_us[0], deadline):
                return []
            answered = _frames_of(pid, proc, ranges)
            try:
                return runs(written(ranges, set_up, answered))
            finally:
                answered.close()
        finally:
            set_up.close()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(to_child[1])
        os.close(to_us[0])


def prepare(learnt: Runs) -> ctypes.Array:
    """`learnt` as the array of ranges process_madvise takes: built once, in the fork server, so that
    an instance makes its call with no work of its own (and no page of its own written) first."""
    return (Iovec * len(learnt))(*(Iovec(address, length) for address, length in learnt))


def copy_ahead(learnt: ctypes.Array) -> int:
    """In a new instance: copy the pages of `learnt` (from prepare) now. A run no longer mapped as it
    was (the fork server's heap moves a little over time) is skipped: the instance copies what it
    writes of it later, as it would have. Returns how many bytes were asked for and copied."""
    done, start = 0, 0
    try:
        pidfd = os.pidfd_open(os.getpid())
    except OSError:
        pidfd = -1
    try:
        while pidfd >= 0 and start < len(learnt):
            end = min(len(learnt), start + UIO_MAXIOV)
            got = _libc.syscall(PROCESS_MADVISE, pidfd, ctypes.byref(learnt, start * ctypes.sizeof(Iovec)),
                                end - start, MADV_POPULATE_WRITE, 0)  # fmt: skip
            if got < 0 and ctypes.get_errno() != errno.ENOMEM:
                break  # not this advice, or no process_madvise: run by run, below
            done += max(got, 0)
            while got > 0:  # the call copies whole runs, in order, and stops at one no longer mapped
                got -= learnt[start].len
                start += 1
            if start < end:
                start += 1  # the one it stopped at
    finally:
        if pidfd >= 0:
            os.close(pidfd)
    for run in learnt[start:]:
        if _madvise(run.base, run.len, MADV_POPULATE_WRITE) == 0:
            done += run.len
    return done


def _frames_of(pid: int, proc: int, ranges: list[tuple[int, int]]) -> mmap.mmap:
    pagemap = os.open(f"{pid}/pagemap", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc)
    try:
        return frames(pagemap, ranges)
    finally:
        os.close(pagemap)


def _waiting(pid: int, proc: int, deadline: float) -> bool:
    """Whether the child comes to wait in its event loop (set up, and idle) before `deadline`."""
    nameless_since = None
    while time.monotonic() < deadline:
        stat = _read(os.open(f"{pid}/stat", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc))
        state = stat.rpartition(") ")[2][:1]
        if state in ("Z", "X", ""):  # it died setting up
            return False
        where = _read(os.open(f"{pid}/wchan", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc))
        if where == "do_epoll_wait":
            return True
        if state == "S" and where == "0":  # asleep, but where is not said (or it has just woken)
            nameless_since = nameless_since or time.monotonic()
            if time.monotonic() - nameless_since > NAMELESS_SLEEP_S:
                raise Unlearnable("this kernel does not say where a process waits (/proc/PID/wchan)")
        else:
            nameless_since = None
        time.sleep(0.002)  # a poll with a deadline: the child sets up in some 10 ms
    return False


def _answered(fd: int, deadline: float) -> bool:
    """Whether a whole line arrives on `fd` before `deadline`."""
    received = b""
    while not received.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return False
        chunk = os.read(fd, 65536)
        if not chunk:
            return False
        received += chunk
    return True


def _read(fd: int) -> str:
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode()
