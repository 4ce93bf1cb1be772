"""A server's output read as lines (app/protocol/lines.py), over a real pipe from a real writer
process, on asyncio's loop and on uvloop (the web process's): whole lines up to the cap, pieces when
asked, and what a hostile writer costs the reader: never a buffer beyond its size, never a read for
each byte. And a server's input: writes wait while it does not read, and fail once it has gone."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
import uvloop

from app.protocol.lines import COALESCE_S, SMALL_READS, LineReader, LineTooLong, LineWriter
from app.sandbox.instance import pipe_end
from tests.support.procs import PIPE_BYTES, STDIO_BUFFER_BYTES, bytes_written, waiting_to_write

RUNNERS = pytest.mark.parametrize("run", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
CAP = 256 * 1024


class Writer:
    """A Python process writing `source` to a pipe, and the LineReader reading that pipe."""

    def __init__(self, source: str, reader: LineReader) -> None:
        self.reader = reader
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        # Its stdin is the test's: a source that waits on it writes on when told (go()).
        self.process = subprocess.Popen(
            [sys.executable, "-c", source], stdout=write_end, stdin=subprocess.PIPE
        )
        os.close(write_end)
        self._read_end = read_end

    async def __aenter__(self) -> Writer:
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.connect_read_pipe(
            lambda: self.reader, pipe_end(self._read_end, "rb", loop)
        )
        return self

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"\n")
        self.process.stdin.flush()

    async def __aexit__(self, *exc: object) -> None:
        self.transport.close()
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.kill()
        self.process.wait()


LINES = f"""
import sys
sys.stdout.write("a" * 200_000 + "\\n")
sys.stdout.write("b" * {CAP} + "\\n")
sys.stdout.write("short\\r\\n")
sys.stdout.write("c" * {CAP + 1} + "\\n")
"""


@RUNNERS
def test_lines_come_whole_up_to_the_cap_and_a_byte_more_is_too_long(run: Callable) -> None:
    async def test() -> None:
        async with Writer(LINES, LineReader(ahead=64 * 1024, max_line=CAP)) as writer:
            assert await writer.reader.line() == b"a" * 200_000  # longer than the buffer
            assert await writer.reader.line() == b"b" * CAP  # the cap, without the newline
            assert await writer.reader.line() == b"short\r"  # only the newline is the reader's
            with pytest.raises(LineTooLong):
                await writer.reader.line()

    run(test())


# Two lines over the cap: the first's newline is in the buffer when it is found too long, the
# second's comes once told, after the reader has dropped what it held.
SKIPPED = f"""
import sys
sys.stdout.write("a" * {CAP + 10} + "\\nkept\\n")
sys.stdout.write("b" * {2 * CAP})
sys.stdout.flush()
sys.stdin.readline()
sys.stdout.write("bbb\\nafter\\n")
"""


@RUNNERS
def test_a_line_too_long_can_be_skipped_and_the_next_comes_whole(run: Callable) -> None:
    async def test() -> None:
        reader = LineReader(ahead=64 * 1024, max_line=CAP)
        async with Writer(SKIPPED, reader) as writer:
            with pytest.raises(LineTooLong):
                await writer.reader.line()
            writer.reader.skip_line()
            assert await writer.reader.line() == b"kept"
            with pytest.raises(LineTooLong):
                await writer.reader.line()
            writer.reader.skip_line()  # before the rest of the line has come
            writer.go()
            assert await writer.reader.line() == b"after"
            assert await writer.reader.line() is None

    run(test())


@RUNNERS
def test_the_last_line_without_a_newline_is_a_line_then_the_end(run: Callable) -> None:
    async def test() -> None:
        source = "import sys\nsys.stdout.write('first\\n\\nlast')"
        async with Writer(source, LineReader(ahead=1024, max_line=CAP)) as writer:
            assert [await writer.reader.line() for _ in range(4)] == [b"first", b"", b"last", None]
            assert await writer.reader.line() is None  # and stays ended

    run(test())


@RUNNERS
def test_split_lines_come_in_pieces_of_the_cap(run: Callable) -> None:
    async def test() -> None:
        source = "import sys\nsys.stdout.write('0123456789abcdef\\nxy')"
        async with Writer(source, LineReader(ahead=1024, max_line=8, split=True)) as writer:
            pieces = [await writer.reader.line() for _ in range(4)]
            assert pieces == [b"01234567", b"89abcdef", b"xy", None]

    run(test())


FLOOD = "import sys\nwhile True:\n    sys.stdout.write('x' * 99 + '\\n')\n"


@RUNNERS
@pytest.mark.parametrize("split", [False, True], ids=["stdout", "stderr"])
def test_a_writer_faster_than_its_reader_waits_in_its_write(run: Callable, split: bool) -> None:
    """The reader takes one line and no more: the pipe is read until whole lines fill the buffer,
    then not at all, and the writer waits on its full pipe. What left it: the buffer (and up to one
    read, a pipeful, beyond it), the pipe, and one write of its own buffer. The same for a reader of
    pieces (stderr's), whose cap is its buffer."""

    async def test() -> None:
        ahead = 64 * 1024
        reader = LineReader(ahead=ahead, max_line=ahead if split else CAP, split=split)
        async with Writer(FLOOD, reader) as writer:
            assert await writer.reader.line() == b"x" * 99
            deadline = time.monotonic() + 30
            while not (writer.reader.held and waiting_to_write(writer.process.pid)):
                assert time.monotonic() < deadline, "the writer never waited in its write"
                await asyncio.sleep(0.01)
            written = bytes_written(writer.process.pid)
            assert written <= ahead + 2 * PIPE_BYTES + STDIO_BUFFER_BYTES, written
            for _ in range(2000):  # what was held is read as ever, and reading goes on
                assert await writer.reader.line() == b"x" * 99
            assert bytes_written(writer.process.pid) > written

    run(test())


TRICKLE = """
import os
for _ in range(100_000):
    os.write(1, b"x")
os.write(1, b"\\n")
"""


@RUNNERS
def test_a_line_trickling_in_a_byte_at_a_time_is_read_once_a_millisecond(run: Callable) -> None:
    """Every write(2) of a byte would wake the reader for a read of its own (a server's partial line
    is charged to no pace until it ends): after SMALL_READS of them, the pipe waits COALESCE_S
    between reads, and the line still comes whole."""

    async def test() -> None:
        async with Writer(TRICKLE, LineReader(ahead=64 * 1024, max_line=CAP)) as writer:
            began = time.monotonic()
            assert await writer.reader.line() == b"x" * 100_000
            took = time.monotonic() - began
            assert writer.reader.reads <= SMALL_READS + took / COALESCE_S + 2, (writer.reader.reads, took)

    run(test())


@RUNNERS
def test_writes_to_a_server_that_does_not_read_wait_and_end_when_it_goes(run: Callable) -> None:
    """A server that never reads its input: the pipe fills, then the transport's buffer to its
    high-water mark, and each write waits there (what the web process holds for it stays bounded);
    once the server has gone, the waiting write and every later one raise BrokenPipeError."""

    async def test() -> None:
        loop = asyncio.get_running_loop()
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        reader = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(60)"], stdin=read_end)
        os.close(read_end)
        writer = LineWriter()
        transport, _ = await loop.connect_write_pipe(lambda: writer, pipe_end(write_end, "wb", loop))
        line, handed = b"x" * 1023 + b"\n", [0]

        async def write_lines() -> None:
            for _ in range(10_000):  # 10 MiB, were nothing to wait for
                await writer.write(line)
                handed[0] += len(line)

        writing = asyncio.create_task(write_lines())
        try:
            high = transport.get_write_buffer_limits()[1]
            deadline = time.monotonic() + 30
            while transport.get_write_buffer_size() < high:
                assert time.monotonic() < deadline and not writing.done(), handed
                await asyncio.sleep(0.01)
            for _ in range(5):
                await asyncio.sleep(0)  # the writing task's turns: it waits
            assert not writing.done() and handed[0] <= PIPE_BYTES + high + len(line), handed
        finally:
            reader.kill()
            reader.wait()
        with pytest.raises(BrokenPipeError):
            await asyncio.wait_for(writing, 30)
        with pytest.raises(BrokenPipeError):
            await writer.write(line)
        transport.close()

    run(test())


@RUNNERS
def test_the_first_write_to_a_server_that_has_gone_raises(run: Callable) -> None:
    async def test() -> None:
        loop = asyncio.get_running_loop()
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        reader = subprocess.Popen([sys.executable, "-c", "pass"], stdin=read_end)
        os.close(read_end)
        reader.wait()  # the pipe has no reader left
        writer = LineWriter()
        transport, _ = await loop.connect_write_pipe(lambda: writer, pipe_end(write_end, "wb", loop))
        with pytest.raises(BrokenPipeError):
            await writer.write(b"{}\n")
        transport.close()

    run(test())
