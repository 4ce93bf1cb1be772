"""The app's side of the fork server: start it, ask it for instances, hear when they exit."""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Callable

from app.sandbox.cgroups import SERVICE_OOM_SCORE_ADJ, MemoryGauge, set_oom_score_adj
from app.sandbox.errors import SandboxError
from app.sandbox.limits import Limits
from app.workspace import Program

log = logging.getLogger(__name__)

# The fork server imports the SDK and every demo server before it says it is ready.
READY_TIMEOUT_S = 60.0
# A spawn is a fork and a few system calls; anything near this means the fork server is stuck.
SPAWN_TIMEOUT_S = 15.0
MAX_PACKET = 65536

# Layers that add to others rather than stand alone: on a host that cannot offer one ("not
# available: ..."), the app starts, hosting mode too, and /healthz still shows why.
OPTIONAL_LAYERS = frozenset({"cgroups"})
# Without a uid range from the app (Launcher(uid_range=...)), the one the probe uid starts, this long.
DEFAULT_UID_SPAN = 1024

# What a server's environment holds: nothing of the app's own environment (secrets, tokens).
ENV_ALLOW = ("LANG", "LC_ALL", "TZ", "TMPDIR")  # TMPDIR: where the fork server makes its mount point


def child_environment(project_root: str) -> dict[str, str]:
    env = {key: os.environ[key] for key in ENV_ALLOW if key in os.environ}
    env.update(
        PATH="/usr/bin:/bin",
        HOME="/tmp",
        PYTHONPATH=project_root,
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONIOENCODING="utf-8",
        LANG=env.get("LANG", "C.UTF-8"),
    )
    return env


def node_runtime() -> dict[str, str] | None:
    """Where Node and the packages a server.ts may import are, or None when they are not installed."""
    from app.workspace import typescript

    if typescript.missing():
        return None
    return {"node": str(typescript.NODE.resolve()), "modules": str(typescript.NODE_MODULES.resolve())}


def _sealed_file(text: str) -> int:
    """A memfd holding `text`, sealed so that nothing can change it once the fork server has it."""
    fd = os.memfd_create("server", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                    | fcntl.F_SEAL_WRITE)  # fmt: skip
    except BaseException:
        os.close(fd)
        raise
    return fd


def subordinate_id_overlap(ids: range, files: tuple[str, ...] = ("/etc/subuid", "/etc/subgid")) -> str:
    """Where `ids` overlaps a user's subordinate ids ("" when nowhere).

    A user given those ids may map them in a user namespace of their own, and so own (signal, trace)
    a process the sandbox runs under one of them.
    """
    found = []
    for path in files:
        try:
            with open(path) as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue  # no such file: nobody has subordinate ids
        for line in lines:
            parts = line.strip().split(":")
            if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
                continue
            start, count = int(parts[1]), int(parts[2])
            if start < ids.stop and ids.start < start + count:
                found.append(f"{path} ({parts[0]}: {start}-{start + count - 1})")
    return ", ".join(found)


class ExitStatus:
    """How an instance ended: an exit code or a signal, in words for the learner. `memory`: the OOM
    killer ended it, at its own limit ("own", of `limit_mib`) or at every instance's together ("shared")."""

    def __init__(self, code: int | None, signal: int | None, memory: str | None = None,
                 limit_mib: int | None = None) -> None:  # fmt: skip
        self.code = code
        self.signal = signal
        self.memory = memory
        self.limit_mib = limit_mib

    def __str__(self) -> str:
        if self.signal is not None:
            import signal as signals

            try:
                name = signals.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            if self.memory == "own":
                most = f" ({self.limit_mib} MiB)" if self.limit_mib else ""
                return f"killed by {name}: it used all the memory one server may have{most}"
            if self.memory == "shared":
                return (f"killed by {name}: the servers running here together ran out of memory, and "
                        "this one was using the most")  # fmt: skip
            return f"killed by {name}"
        return f"exited with status {self.code}"

    def to_json(self) -> dict[str, int | str | None]:
        return {"code": self.code, "signal": self.signal, "memory": self.memory, "text": str(self)}


class Launcher:
    """Owns the fork-server process. One per app."""

    def __init__(
        self,
        *,
        limits: Limits,
        sandbox: bool,
        extra_modules: list[str],
        uid_probe: int,
        rootless: bool = False,
        uid_range: range | None = None,
    ) -> None:
        self.limits = limits
        self.sandbox = sandbox
        self.extra_modules = extra_modules
        self.uid_probe = uid_probe
        self.rootless = rootless or os.geteuid() != 0  # without root, only a user namespace can sandbox
        # Every uid an instance may get, and the probe's: checked against /etc/subuid and /etc/subgid.
        self.uid_range = (
            range(uid_probe, max(uid_range.stop, uid_probe + 1))
            if uid_range
            else range(uid_probe, uid_probe + DEFAULT_UID_SPAN)
        )
        self.layers: dict[str, str] = {}
        self.process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._exit_handlers: dict[int, Callable[[ExitStatus], None]] = {}
        self._early_exits: dict[int, ExitStatus] = {}
        self._reader: asyncio.Task | None = None
        self._send_lock = asyncio.Lock()
        self._background: set[asyncio.Task] = set()
        self.closed = asyncio.Event()
        # Every instance's memory together, where their parent cgroup has a limit (the budget).
        self.memory: MemoryGauge | None = None

    def command(self, fd: int) -> list[str]:
        """The fork server's command line; it talks over the SOCK_SEQPACKET socket `fd`."""
        config = {
            "fd": fd,
            "parent": os.getpid(),
            "limits": self.limits.to_json(),
            "sandbox": self.sandbox,
            "extra_modules": self.extra_modules,
            "uid_probe": self.uid_probe,
            "uid_range": [self.uid_range.start, self.uid_range.stop],  # the only uids it will run as
            "rootless": self.rootless,
            "outside_uid": os.geteuid(),
            "outside_gid": os.getegid(),
            # Node for a learner's server.ts, when the runtime is installed (docs/typescript.md).
            "node": node_runtime(),
        }
        return [sys.executable, "-m", "app.sandbox.forkserver", json.dumps(config)]

    async def start(self) -> None:
        from app.config import PROJECT_ROOT

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Started from the event loop's (main) thread: the parent-death signal follows the thread.
        self.process = subprocess.Popen(
            self.command(theirs.fileno()),
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=child_environment(str(PROJECT_ROOT)),
            start_new_session=True,  # a Ctrl+C in the terminal is the app's to handle, not ours
        )
        theirs.close()
        # As root, while the app still is: the OOM killer ends any instance (each raises its own standing
        # as it starts) before the fork server or this process, either of which would end every session.
        if not (set_oom_score_adj(SERVICE_OOM_SCORE_ADJ)
                and set_oom_score_adj(SERVICE_OOM_SCORE_ADJ, str(self.process.pid))):  # fmt: skip
            log.info("the web process and the fork server keep the OOM killer's default standing (no "
                     "CAP_SYS_RESOURCE here); every instance still stands before them")  # fmt: skip
        ours.setblocking(False)
        self._sock = ours
        loop = asyncio.get_running_loop()
        try:
            ready = json.loads(
                await asyncio.wait_for(loop.sock_recv(ours, MAX_PACKET), READY_TIMEOUT_S) or b"{}"
            )
        except (TimeoutError, json.JSONDecodeError) as exc:
            await self.close()
            raise SandboxError(
                "The demo servers could not be started.",
                reason="forkserver",
                log_message=f"fork server: {exc!r}",
            ) from exc
        if ready.get("op") != "ready":
            await self.close()
            raise SandboxError("The demo servers could not be started.", reason="forkserver",
                               log_message="the fork server exited during start-up (see its stderr above)")  # fmt: skip
        self.layers = ready["layers"]
        if self.layers.get("cgroups") == "ok":
            self.memory = MemoryGauge.open(self.process.pid)  # opened while the app is root
        if self.layers.get("uid") == "ok":
            overlap = subordinate_id_overlap(self.uid_range)
            if overlap:
                self.layers["uid"] = f"missing: the reserved uid range overlaps {overlap}"
        self._reader = asyncio.create_task(self._read_loop(), name="forkserver-reader")

    def missing_layers(self) -> dict[str, str]:
        """The layers not in force, leaving out optional ones this host does not offer: what
        hosting mode refuses to start without (unless the operator accepts a weaker sandbox)."""
        return {
            name: why
            for name, why in self.layers.items()
            if why != "ok" and not (name in OPTIONAL_LAYERS and why.startswith("not available"))
        }

    async def _read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._sock is not None
        try:
            while data := await loop.sock_recv(self._sock, MAX_PACKET):
                message = json.loads(data)
                op = message.get("op")
                if op in ("spawned", "failed"):
                    future = self._pending.pop(message["id"], None)
                    if future is not None and not future.done():
                        future.set_result(message)
                elif op == "exited":
                    memory = message.get("memory") if message.get("memory") in ("own", "shared") else None
                    status = ExitStatus(message["code"], message["signal"], memory,
                                        self.limits.memory_bytes // (1024 * 1024))  # fmt: skip
                    handler = self._exit_handlers.pop(message["pid"], None)
                    if handler is not None:
                        handler(status)
                    else:  # exited before the spawn reply was read
                        self._early_exits[message["pid"]] = status
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self.closed.set()
            gone = ExitStatus(None, 9)
            for handler in self._exit_handlers.values():
                handler(gone)
            self._exit_handlers.clear()
            for future in self._pending.values():
                if not future.done():
                    future.set_result({"op": "failed", "error": "the fork server has stopped"})

    async def spawn(self, server: str, uid: int, fds: tuple[int, int, int],
                    on_exit: Callable[[ExitStatus], None], source: Program | None = None) -> int:  # fmt: skip
        """Start one instance with the given stdin/stdout/stderr ends; return its pid (and group).

        `source`: what my-server runs (my-server only), the learner's server.py or the JavaScript made
        of their server.ts; its text goes as a sealed memfd."""
        if self._sock is None or self.closed.is_set():
            raise SandboxError("The demo servers are not running.", reason="forkserver", status_code=503)
        request_id = next(self._ids)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        request = {"op": "spawn", "id": request_id, "server": server, "uid": uid}
        if source is not None:
            request["runtime"] = source.runtime
        packet = json.dumps(request).encode()
        extra = [] if source is None else [_sealed_file(source.text)]
        try:
            async with self._send_lock:
                await self._send_fds(packet, [*fds, *extra])
        finally:
            for fd in extra:
                os.close(fd)
        try:
            reply = await asyncio.wait_for(future, SPAWN_TIMEOUT_S)
        except TimeoutError as exc:
            self._pending.pop(request_id, None)
            raise SandboxError("The demo server did not start in time.", reason="spawn_timeout") from exc
        if reply["op"] != "spawned":
            raise SandboxError("The demo server could not be started.", reason="spawn_failed",
                               log_message=f"spawn {server}: {reply.get('error')}")  # fmt: skip
        pid = reply["pid"]
        early = self._early_exits.pop(pid, None)
        if early is not None:
            on_exit(early)
        else:
            self._exit_handlers[pid] = on_exit
        return pid

    def signal(self, pid: int, sig: int) -> None:
        """Have the fork server send `sig` (SIGTERM or SIGKILL) to the process group of its instance
        `pid`: once the web process has dropped root, it cannot signal an instance's uid itself."""
        if self._sock is None or self.closed.is_set():
            return  # the fork server is gone, and every instance with it
        packet = json.dumps({"op": "signal", "pid": pid, "signal": int(sig)}).encode()
        try:
            self._sock.send(packet)
        except BlockingIOError:  # the socket is full for a moment: send it from the loop
            task = asyncio.get_running_loop().create_task(self._send_later(packet))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        except OSError as exc:
            log.warning("cannot ask the fork server to signal %s: %s", pid, exc)

    async def _send_later(self, packet: bytes) -> None:
        async with self._send_lock:
            try:
                await self._send_fds(packet, [])
            except OSError as exc:
                log.warning("cannot reach the fork server: %s", exc)

    async def _send_fds(self, packet: bytes, fds: list[int]) -> None:
        loop = asyncio.get_running_loop()
        assert self._sock is not None
        while True:
            try:
                if fds:
                    socket.send_fds(self._sock, [packet], fds)
                else:
                    self._sock.send(packet)
                return
            except BlockingIOError:
                ready: asyncio.Future[None] = loop.create_future()

                def writable(future: asyncio.Future[None] = ready) -> None:
                    if not future.done():
                        future.set_result(None)

                loop.add_writer(self._sock, writable)
                try:
                    await ready
                finally:
                    loop.remove_writer(self._sock)

    async def close(self) -> None:
        """Stop the fork server; every instance dies with it."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except asyncio.CancelledError:
                pass
        # The socket's end tells the fork server to end every instance and exit: no signal needed,
        # and the web process may no longer be allowed to send one (it dropped root).
        if self.process is not None and self.process.poll() is None:
            try:
                await asyncio.to_thread(self.process.wait, 10)
            except subprocess.TimeoutExpired:
                try:
                    self.process.kill()
                except PermissionError:
                    log.error("the fork server (pid %s) did not stop and cannot be killed from here",
                              self.process.pid)  # fmt: skip
                else:
                    await asyncio.to_thread(self.process.wait)
        if self.memory is not None:
            self.memory.close()
        self.closed.set()
