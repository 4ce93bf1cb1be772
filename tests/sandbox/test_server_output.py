"""What the web process reads of a server's stdout, with a real fork server: every line whole up to
the line cap, however much longer than the reader's buffer, and never further ahead of its reader
than that buffer (a hostile file writing as fast as it can then waits in its write)."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from app.sandbox.errors import OutputLimitError
from app.sandbox.instance import STDOUT_BUFFER_BYTES, Instance
from app.sandbox.limits import Limits
from app.sandbox.pool import InstancePool
from app.workspace import Program
from tests.support.procs import (
    PIPE_BYTES,
    STDIO_BUFFER_BYTES,
    bytes_written,
    processes_in_uid_range,
    waiting_to_write,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the fork server gives each instance a uid")

LINE_CAP = 256 * 1024
FLOODER = "import sys\nwhile True:\n    sys.stdout.write('x' * 99 + '\\n')\n"


def own_server_pool(uid_base: int) -> InstancePool:
    return InstancePool(servers=["my-server"], limits=Limits(), sandbox=True, extra_modules=[], capacity=2,
                        pool_sizes={}, uid_base=uid_base, max_line_bytes=LINE_CAP,
                        max_output_bytes=64 << 20)  # fmt: skip


def waiting_to_write_stdout(instance: Instance) -> int | None:
    """The pid of the instance's process that sleeps in a write(2) to its stdout, if one does."""
    return next(
        (p.pid for p in processes_in_uid_range(instance.uid, instance.uid + 1) if waiting_to_write(p.pid)),
        None,
    )


async def test_a_server_writing_faster_than_it_is_read_waits_in_its_write() -> None:
    """Nobody reads its lines: the web process reads its pipe until its buffer is full, then stops,
    and the file waits in its write with its pipe full. What left it: the buffer (and up to one read,
    a pipeful, beyond it), the pipe, and one write of the file's own buffer. (A buffer the size of the
    line cap lets out more than twice that.)"""
    pool = own_server_pool(324_000)
    await pool.start()
    instance = await pool.acquire("my-server", Program.python(FLOODER))
    try:
        deadline = time.monotonic() + 30
        # Both at once: the file waits on a full pipe that the web process has stopped reading (the
        # file also waits a moment whenever it writes faster than the pipe is read).
        while (pid := waiting_to_write_stdout(instance)) is None or not (
            instance.stdout and instance.stdout.held
        ):
            assert time.monotonic() < deadline, "the flooder never waited in its write"
            await asyncio.sleep(0.01)
        written = bytes_written(pid)
        assert written <= STDOUT_BUFFER_BYTES + 2 * PIPE_BYTES + STDIO_BUFFER_BYTES, written
        line = await instance.read_line()  # what was held is read as ever
        assert line == "x" * 99
    finally:
        await pool.release(instance)
        await pool.stop()


LONG_LINES = f"""
import sys
sys.stdout.write("a" * 200_000 + "\\n")
sys.stdout.write("b" * {LINE_CAP} + "\\n")
sys.stdout.write("short\\n")
sys.stdout.write("c" * {LINE_CAP + 1} + "\\n")
sys.stdout.flush()
"""


async def test_lines_longer_than_the_buffer_come_whole_up_to_the_cap() -> None:
    pool = own_server_pool(326_000)
    await pool.start()
    instance = await pool.acquire("my-server", Program.python(LONG_LINES))
    try:
        assert await instance.read_line() == "a" * 200_000
        assert await instance.read_line() == "b" * LINE_CAP  # the cap, without the newline...
        assert await instance.read_line() == "short"
        with pytest.raises(OutputLimitError, match=f"longer than {LINE_CAP} bytes"):
            await instance.read_line()  # ...and a byte more ends it
    finally:
        await pool.release(instance)
        await pool.stop()


LAST_LINE = f"print('first')\nprint('z' * {LINE_CAP}, end='')"


async def test_the_last_line_without_a_newline_is_read_then_the_end() -> None:
    pool = own_server_pool(328_000)
    await pool.start()
    instance = await pool.acquire("my-server", Program.python(LAST_LINE))
    try:
        assert await instance.read_line() == "first"
        assert await instance.read_line() == "z" * LINE_CAP
        assert await instance.read_line() is None
    finally:
        await pool.release(instance)
        await pool.stop()
