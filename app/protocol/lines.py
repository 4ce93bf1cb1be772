"""A process's stdio pipes, on asyncio's protocol interface: its output as lines, read no further
ahead of its reader than a small buffer and without a wake-up for every tiny write; its input,
written at the pace it is read. The web process speaks to a server through them
(app/sandbox/instance.py), and a demo server to the web process (app/demos/stdio.py).

Two costs of a server's output fall on the web process, whatever the server's session is allowed:
every read of the pipe (a wake-up of the event loop and a system call), and every byte held for the
session. The session's pace (app/relay/session.py) makes its pump wait on lines; a reader that kept
reading meanwhile would spend both on a server that writes faster than it is paced. So the pipe is
not read while whole lines wait to be taken and the buffer holds `ahead` bytes (the pipe then fills,
and the server waits in its write), and a line that keeps arriving a few bytes at a time without its
newline has its pipe read once a millisecond, not for each write.
"""

from __future__ import annotations

import asyncio

# A read of fewer bytes than this, with no newline, counts as a small one; after SMALL_READS of them
# in one line, the pipe waits COALESCE_S between reads. A server writes a message in one write, or a
# few (print's text, then its newline): those are never held back.
SMALL_READ_BYTES = 4096
SMALL_READS = 16
COALESCE_S = 0.001


class LineTooLong(Exception):
    """The line under way is longer than the reader's `max_line` (its newline not counted)."""


class LineReader(asyncio.Protocol):
    """Lines of a read pipe (`loop.connect_read_pipe(lambda: reader, pipe)`), one reader at a time.

    `line()` gives the next line without its newline, or None at the end of the output (a last line
    without a newline is still a line). A line longer than `max_line` bytes raises LineTooLong (then
    `skip_line()` drops it, for a reader that goes on), or with `split` comes in pieces of `max_line`
    bytes."""

    def __init__(self, *, ahead: int, max_line: int, split: bool = False) -> None:
        self.ahead = ahead
        self.max_line = max_line
        self.split = split
        self.reads = 0  # chunks the pipe has given, all along
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._has_line = False  # the buffer holds a newline
        self._skipping = False  # dropping what comes until a newline (skip_line)
        self._small_reads = 0  # small reads since the last newline
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._coalescing: asyncio.TimerHandle | None = None

    # --- asyncio's side ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # a read pipe's

    def data_received(self, data: bytes) -> None:
        self.reads += 1
        newline = b"\n" in data
        if newline or len(data) >= SMALL_READ_BYTES:
            self._small_reads = 0
        else:
            self._small_reads += 1
            if self._small_reads >= SMALL_READS and self._coalescing is None:
                self._coalescing = asyncio.get_running_loop().call_later(COALESCE_S, self._coalesced)
        if self._skipping:
            if not newline:
                self._flow()
                return
            self._skipping = False
            data = data[data.index(b"\n") + 1 :]
            newline = b"\n" in data
        self._buffer += data
        self._has_line = self._has_line or newline
        self._flow()
        self._wake()

    def eof_received(self) -> bool:
        self._end()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        self._eof = True
        if self._coalescing is not None:
            self._coalescing.cancel()
            self._coalescing = None
        self._wake()

    def _coalesced(self) -> None:
        self._coalescing = None
        self._flow()

    # --- the reader's side --------------------------------------------------------------------------

    @property
    def held(self) -> bool:
        """Whether the pipe waits, unread, because whole lines not yet taken fill the buffer."""
        return self._paused and self._full()

    async def line(self) -> bytes | None:
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end != -1 and end <= self.max_line:
                return self._take(end, end + 1)
            if end != -1 or len(self._buffer) > self.max_line:  # the line is longer than the cap
                if not self.split:
                    raise LineTooLong
                return self._take(self.max_line, self.max_line)
            if self._eof:
                return self._take(len(self._buffer), len(self._buffer)) if self._buffer else None
            self._scanned = len(self._buffer)
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def skip_line(self) -> None:
        """Drop the line that raised LineTooLong, up to its newline, read or still to come: the next
        `line()` gives the line after it."""
        end = self._buffer.find(b"\n")
        if end == -1:
            self._buffer.clear()
            self._skipping = True
        else:
            del self._buffer[: end + 1]
        self._scanned = 0
        self._has_line = b"\n" in self._buffer
        self._flow()

    def _take(self, size: int, consumed: int) -> bytes:
        line = bytes(self._buffer[:size])
        del self._buffer[:consumed]
        self._scanned = 0
        self._has_line = b"\n" in self._buffer
        self._flow()
        return line

    def _flow(self) -> None:
        """Read the pipe unless whole lines fill the buffer, or a trickle of small reads waits out
        its millisecond. A line under way is read to its end (up to the line cap)."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        pause = self._full() or len(self._buffer) > self.max_line or self._coalescing is not None
        if pause and not self._paused:
            transport.pause_reading()
        elif not pause and self._paused:
            transport.resume_reading()
        self._paused = pause

    def _full(self) -> bool:
        """Whole lines not yet taken, and the buffer at its size."""
        return self._has_line and len(self._buffer) >= self.ahead

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class LineWriter(asyncio.BaseProtocol):
    """A write pipe (`loop.connect_write_pipe(lambda: writer, pipe)`). `write()` returns once the
    transport holds less than its high-water mark: a server that reads its input slowly makes its
    writers wait, rather than the web process hold what they sent."""

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # a write pipe's

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._writable.set()

    @property
    def closed(self) -> bool:
        return self._lost or self._transport is None or self._transport.is_closing()

    async def write(self, data: bytes) -> None:
        """Raises BrokenPipeError once the pipe has closed (the server has gone, or stdin was closed)."""
        if self.closed:
            raise BrokenPipeError
        assert self._transport is not None
        self._transport.write(data)
        await self._writable.wait()
        if self._lost or self._transport.is_closing():  # a write that failed closes the transport
            raise BrokenPipeError

    def close(self) -> None:
        if not self.closed:
            assert self._transport is not None
            self._transport.close()
