"""The hop with no Python on the data path: what a forwarder costs when it is not written in Python.

Python answers the upgrade and takes a sandboxed demo server from the same pool as the floors'
(bench/floor.py), then hands the socket and the server's two pipes to a small C program (cfloor.c)
that copies messages both ways in one poll() loop, and waits for it to end. Every message of the
round trip crosses only C and the kernel, so this says what relay/direct a hop outside Python would
reach on this host. A measuring stick, never to be served.

Run as `python -m bench.cfloor PORT UID_BASE CAPACITY`; serves any path (subprotocol `mcp`). Needs a C
compiler (`cc`); the binary is built once into build/.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import uvloop

from app.sandbox.instance import Instance
from app.sandbox.pool import InstancePool
from bench.floor import SERVER, command_line, make_pool
from bench.thinfloor import upgrade_reply

SOURCE = Path(__file__).with_name("cfloor.c")
BINARY = Path(__file__).resolve().parent.parent / "build" / "cfloor"


def build(binary: Path = BINARY) -> Path:
    """The compiled forwarder, rebuilt whenever its source is newer than it."""
    if binary.exists() and binary.stat().st_mtime >= SOURCE.stat().st_mtime:
        return binary
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("bench/cfloor.py needs a C compiler: install one (apt-get install -y gcc)")
    binary.parent.mkdir(exist_ok=True)
    # Built under a name of its own and renamed, so a concurrent run never starts a half-written file.
    partial = binary.with_name(f"{binary.name}.{os.getpid()}")
    subprocess.run(
        [compiler, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(partial), str(SOURCE)], check=True
    )
    partial.replace(binary)
    return binary


async def handle(conn: socket.socket, pool: InstancePool, binary: Path) -> None:
    loop = asyncio.get_running_loop()
    instance: Instance | None = None
    proc: asyncio.subprocess.Process | None = None
    try:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = await loop.sock_recv(conn, 4096)
            if not chunk:
                return
            head += chunk
        # The client sends nothing before it sees the 101, so the upgrade is all there is to read.
        reply = upgrade_reply(head)
        instance = await pool.acquire(SERVER)
        await loop.sock_sendall(conn, reply)
        # From here the C program alone reads the server's stdout: stop this loop from reading it.
        stdout_transport = instance._transports[0]
        stdout_transport.pause_reading()
        assert instance._stdin is not None
        to_server = instance._stdin.transport.get_extra_info("pipe").fileno()
        from_server = stdout_transport.get_extra_info("pipe").fileno()
        fds = (conn.fileno(), to_server, from_server)
        proc = await asyncio.create_subprocess_exec(str(binary), *map(str, fds), pass_fds=fds)
        await proc.wait()
    finally:
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()
        conn.close()
        if instance is not None:
            await pool.release(instance)


async def serve(port: int, uid_base: int, capacity: int) -> None:
    """Serve until SIGTERM, then end the pool's instances."""
    binary = build()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    pool = make_pool(uid_base, capacity)
    await pool.start()
    listener = socket.create_server(("127.0.0.1", port))
    listener.setblocking(False)
    handlers: set[asyncio.Task] = set()

    async def accept() -> None:
        while True:
            conn, _ = await loop.sock_accept(listener)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = asyncio.ensure_future(handle(conn, pool, binary))
            handlers.add(task)
            task.add_done_callback(handlers.discard)

    accepting = asyncio.ensure_future(accept())
    try:
        await stop.wait()
    finally:
        accepting.cancel()
        listener.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await pool.stop()


def main() -> None:
    uvloop.run(serve(*command_line()))


if __name__ == "__main__":
    main()
