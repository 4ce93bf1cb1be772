"""A Python with the SDK and every demo server already imported, for the tests' plain subprocesses.

A cold `python -m app.demos.orders` spends about half a second of CPU importing the SDK before it
reads a line, and the fast tier starts hundreds of them. `interpreter()` returns a command that
stands in for `python` in `[*interpreter(), "-m", module]` or `[*interpreter(), path]`: a thin
stdlib-only client (tests/support/preloaded_client.py) hands its stdin, stdout and stderr to this
module's server, which forks a child from its imported state to run the module or file there, and
reports the child's exit. The caller still holds an ordinary subprocess: its pipes, its exit status
(the child's), and kill() (ending the client ends the child).

The server runs once per test process, started on first use and ended by `stop()` (the session
fixture `preloaded_python` in tests/conftest.py). It is for tests only: no sandbox, the test's uid.
"""

from __future__ import annotations

import json
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).with_name("preloaded_client.py")
# What every plain demo server imports first; each demo module too (app.demos' registry).
PRELOAD = ("mcp.server.mcpserver", "mcp.server.stdio", "mcp.types", "pydantic", "anyio")
START_TIMEOUT_S = 60.0
MAX_REQUEST = 1 << 20

_lock = threading.Lock()
_server: tuple[subprocess.Popen, str, str] | None = None  # process, socket path, its folder


def interpreter() -> list[str]:
    """The command that stands in for `python` (start the server on first use)."""
    global _server
    with _lock:
        if _server is None or _server[0].poll() is not None:
            folder = tempfile.mkdtemp(prefix="preloaded-")
            path = os.path.join(folder, "socket")
            ready_r, ready_w = os.pipe()
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.support.preloaded", path, str(ready_w)],
                cwd=ROOT, pass_fds=[ready_w], stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )  # fmt: skip
            os.close(ready_w)
            with os.fdopen(ready_r, "rb") as ready:
                if ready.read(1) != b"1":  # its end without a byte: it failed to start
                    proc.wait(START_TIMEOUT_S)
                    raise RuntimeError(f"the preloaded Python exited with {proc.returncode}")
            _server = (proc, path, folder)
        return [sys.executable, "-I", "-S", str(CLIENT), _server[1]]


def stop() -> None:
    """End the server (its children end with their clients) and remove its socket."""
    global _server
    with _lock:
        if _server is None:
            return
        proc, path, folder = _server
        _server = None
    proc.terminate()
    proc.wait(30)
    for leftover in (path, folder):
        try:
            os.unlink(leftover) if leftover == path else os.rmdir(leftover)
        except OSError:
            pass


# -- the server ------------------------------------------------------------------------------------


def _serve(path: str, ready_fd: int) -> None:
    from app.demos import load_registry

    for name in PRELOAD:
        __import__(name)
    for server in load_registry().values():
        if server.module:
            __import__(server.module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(ready_fd, b"1")
    os.close(ready_fd)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    children: dict[int, tuple[socket.socket, int]] = {}  # pidfd -> (its client's connection, pid)
    try:
        while True:
            for key, _ in selector.select():
                # A key handled earlier in this round may have unregistered this one (a child's exit and
                # its client's end come together), and its descriptor may even have been reused since.
                if selector.get_map().get(key.fd) is not key:
                    continue
                try:
                    _handle(key, selector, listener, children)
                except Exception:  # a bug here must not end every test's servers: say it, serve on
                    traceback.print_exc()
    finally:
        for _conn, pid in children.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _handle(key: selectors.SelectorKey, selector: selectors.BaseSelector, listener: socket.socket,
            children: dict[int, tuple[socket.socket, int]]) -> None:  # fmt: skip
    if key.data == "accept":
        conn, _ = listener.accept()
        started = _start(conn, listener)
        if started is None:
            conn.close()
            return
        pid, pidfd = started
        children[pidfd] = (conn, pid)
        selector.register(pidfd, selectors.EVENT_READ, "exit")
        selector.register(conn, selectors.EVENT_READ, pidfd)
    elif key.data == "exit":  # the child exited: tell its client how, and forget both
        conn, pid = children.pop(key.fd)
        selector.unregister(key.fd)
        if conn.fileno() in selector.get_map():  # not if its client ended first
            selector.unregister(conn)
        _, status = os.waitpid(pid, 0)
        try:
            conn.sendall(json.dumps({"status": status}).encode())
        except OSError:
            pass  # the client has gone already
        conn.close()
        os.close(key.fd)
    else:  # the client sent a signal to pass on, or ended (then the child ends)
        conn, pid = children[key.data]
        try:
            data = conn.recv(16)
        except OSError:
            data = b""
        number = (
            int(data) if data.strip().isdigit() and int(data) in signal.valid_signals() else signal.SIGKILL
        )
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass
        if not data:
            selector.unregister(conn)


def _start(conn: socket.socket, listener: socket.socket) -> tuple[int, int] | None:
    """Read one request (argv, env, cwd, and the client's stdin, stdout, stderr) and fork its child."""
    try:
        data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
        request = json.loads(data)
    except (OSError, ValueError):
        return None
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    pid = os.fork()
    if pid == 0:
        listener.close()
        conn.close()
        _run_child(request, fds)
    for fd in fds:
        os.close(fd)
    return pid, os.pidfd_open(pid)


def _run_child(request: dict, fds: list[int]) -> None:
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as in a fresh Python, not the server's
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv = request["argv"]
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[:0] = [request["cwd"], *extra]
            sys.modules.pop(argv[1], None)  # imported ahead as itself: run it afresh as __main__
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[:0] = [os.path.dirname(os.path.abspath(argv[0])), *extra]
            runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]))
