"""The fork server's process: it loads every demo, then answers the app's requests (protocol.py),
forks instances (child.py), reaps them, and makes and removes their cgroups."""

from __future__ import annotations

import gc
import itertools
import os
import selectors
import signal
import socket
import sys
import time
import traceback
from collections import deque

from app.demos import MY_SERVER, load_registry
from app.sandbox import cgroups
from app.sandbox.forkserver import protocol
from app.sandbox.forkserver.child import Confinement, read_to_end
from app.sandbox.limits import Limits
from app.sandbox.node_server import NodeRuntime

# How soon to try again to remove a cgroup whose last process was still leaving.
CGROUP_RETRY_S = 0.2
# At shutdown, how long to wait for the killed instances to leave their cgroups.
SHUTDOWN_CGROUP_WAIT_S = 2.0


class ForkServer:
    def __init__(self, config: dict) -> None:
        self.config = config
        self.limits = Limits(**config["limits"])
        self.sock = socket.socket(fileno=config["fd"])
        self.registry = load_registry(config["extra_modules"])
        self.modules = {name: demo.load() for name, demo in self.registry.items() if not demo.learners_own}
        node = config.get("node")
        self.node = NodeRuntime(node["node"], node["modules"]) if node else None
        self.runtimes = ("python", "node") if self.node else ("python",)
        self.confinement = Confinement(
            self.limits,
            uid_probe=config["uid_probe"],
            rootless=config.get("rootless", False),
            outside_uid=config["outside_uid"],
            outside_gid=config["outside_gid"],
            node=self.node,
        )
        self.cgroups: cgroups.Cgroups | None = None
        low, high = config.get("uid_range") or (config["uid_probe"], config["uid_probe"] + 1)
        self.uid_range = range(int(low), int(high))  # the only uids an instance may be given
        # An instance's id is its server's pid, which is also its process group.
        self.instances: set[int] = set()  # ids of live instances: the only groups we signal
        # Ids of instances ended lately. The app's stop can cross an instance's own exit, so a signal
        # to one of these is refused like any other pid not live, but not logged as hostile. As many
        # as there are uids: every live instance has one, and the app may stop them all at once.
        self._ended_recently: deque[int] = deque(maxlen=len(self.uid_range))
        self._instance_uids: dict[int, int] = {}  # instance id -> the uid it was given
        self._cgroup_ids = itertools.count(1)
        self._instance_cgroups: dict[int, str] = {}  # instance id -> its cgroup's name
        self._leftover_cgroups: set[str] = set()  # instances gone, cgroups not yet removable
        self._selector = selectors.DefaultSelector()
        # Instances still setting up: pid -> (request id, the pipe its report comes on). The fork
        # server does not wait for them, so instances set up in parallel (namespaces and mounts
        # take milliseconds); a spawn's only serial cost is its cgroup and its fork.
        self._reports: dict[int, tuple[int, int]] = {}

    # --- start-up -------------------------------------------------------------------------------

    def prepare(self) -> None:
        self._preimport()
        if not self.config["sandbox"]:
            self.confinement.off()
            return
        try:  # as the user we were started as, before the root turns private
            self.cgroups = cgroups.Cgroups.setup(self.limits)
            self.confinement.layers["cgroups"] = "ok"
        except (cgroups.CgroupsUnavailable, OSError) as exc:
            self.confinement.layers["cgroups"] = f"not available: {exc}"
        self.confinement.prepare(self._visible_paths())

    def _preimport(self) -> None:
        # Whatever a server imports lazily must be loaded now: the sandboxed uid cannot read
        # new files from every corner of the tree, and importing per instance would cost time.
        import anyio._backends._asyncio  # noqa: F401
        import mcp.server.stdio  # noqa: F401
        from mcp.server.mcpserver import MCPServer

        from app.sandbox.warmup import warm_up

        for name, module in self.modules.items():
            server = getattr(module, "server", None)
            if isinstance(server, MCPServer):
                try:
                    warm_up(server, getattr(module, "WARM_UP", None))
                except Exception as exc:  # a cold instance still works; say so and go on
                    print(f"fork server: warming {name} failed: {exc!r}", file=sys.stderr, flush=True)

    def _visible_paths(self) -> list[str]:
        import app

        paths = {sys.base_prefix, sys.prefix, "/usr", os.path.dirname(app.__file__)}
        for module in self.modules.values():
            # Only the demo's own package or file: an instructor's module may live in a folder
            # (a home directory) holding much else.
            package_dirs = getattr(module, "__path__", None)
            paths.update(package_dirs if package_dirs is not None else [module.__file__ or ""])
        paths.update(p for p in sys.path if p.startswith(sys.prefix) or p.startswith(sys.base_prefix))
        if self.node is not None:  # Node and the packages a server.ts may import, and nothing beside them
            paths.add(self.node.modules)
        return sorted(p for p in paths if p)

    def has(self, layer: str) -> bool:
        return self.confinement.has(layer)

    # --- the loop -------------------------------------------------------------------------------

    def serve(self) -> None:
        wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wake-up fd is written
        signal.signal(signal.SIGTERM, lambda *_: self._shut_down())
        self.confinement.open_life_pipe()
        gc.collect()
        gc.freeze()  # keep the collector from touching (and so copying) every inherited page
        protocol.send(self.sock, {"op": "ready", "layers": self.confinement.layers, "pid": os.getpid()})
        selector = self._selector
        selector.register(self.sock, selectors.EVENT_READ, "control")
        selector.register(wake_read, selectors.EVENT_READ, "children")
        while True:
            # Cgroups of instances whose last process was still leaving: try again shortly.
            timeout = CGROUP_RETRY_S if self._leftover_cgroups else None
            if self._leftover_cgroups:
                for name in list(self._leftover_cgroups):
                    self._kill_cgroup(name)  # a process that outran the first kill
                self._remove_cgroups(list(self._leftover_cgroups))
            for key, _ in selector.select(timeout):
                if isinstance(key.data, int):  # an instance's report: it has set up
                    if key.data in self._reports:  # not already read as it was reaped
                        self._report(key.data)
                elif key.data == "children":
                    while True:
                        try:
                            if not os.read(wake_read, 4096):
                                break
                        except BlockingIOError:
                            break
                    self._reap()
                else:
                    self._handle_control()

    def _handle_control(self) -> None:
        try:
            data, fds, flags = protocol.receive(self.sock)
        except InterruptedError:
            return
        except ConnectionResetError:  # the app closed its end with our replies unread: it is gone too
            data, fds, flags = b"", [], 0
        if not data and not fds:  # the app is gone; so are we, and every instance with us
            self._shut_down()
        try:
            request, problem = protocol.check_request(
                data,
                fds,
                flags,
                servers=self.modules,
                uid_range=self.uid_range,
                instances=self.instances,
                runtimes=self.runtimes,
            )
        except Exception as exc:  # whatever a request holds, the fork server keeps serving
            request, problem = {}, f"unreadable request: {exc!r}"
        if problem:
            for fd in fds:
                os.close(fd)
            if not (request.get("op") == "signal" and request.get("pid") in self._ended_recently):
                print(f"fork server: refused a request: {problem}", file=sys.stderr, flush=True)
            protocol.send(self.sock, protocol.refusal(request, problem))
            return
        if request["op"] == "signal":
            try:
                os.killpg(request["pid"], request["signal"])
            except ProcessLookupError:
                pass
            return
        failure = None
        try:
            source = fds[3] if request["server"] == MY_SERVER else None  # passed on, never read here
            self._spawn(request["id"], request["server"], request["uid"], fds[:3], source,
                        request.get("runtime", "python"))  # fmt: skip
        except OSError as exc:
            failure = str(exc)
        finally:
            for fd in fds:
                os.close(fd)
        if failure is not None:  # told once nothing of the request is held open any more
            protocol.send(self.sock, {"op": "failed", "id": request["id"], "error": failure})

    # --- one instance ---------------------------------------------------------------------------

    def _spawn(self, request_id: int, server: str, uid: int, fds: list[int], source: int | None,
               runtime: str = "python") -> None:  # fmt: skip
        """Fork the instance (`source`: the descriptor of a learner's file, for my-server, on `runtime`);
        the "spawned" reply goes out when its report arrives."""
        cgroup, procs = None, []
        if self.cgroups is not None:
            cgroup = f"i{next(self._cgroup_ids)}"
            procs = self.cgroups.create(cgroup)  # an OSError fails this spawn, as it should
        report_read, report_write = os.pipe()
        demo = self.modules[server] if source is None else None
        try:
            pid = self.confinement.fork_instance(uid, fds, report_write, procs, demo=demo, source=source,
                                                 runtime=runtime)  # fmt: skip
        except OSError:  # no process to be had: this spawn fails, and leaves nothing open
            for fd in (*procs, report_read, report_write):
                os.close(fd)
            if cgroup is not None:
                self._remove_cgroups([cgroup])
            raise
        for fd in procs:
            os.close(fd)
        self.instances.add(pid)
        self._instance_uids[pid] = uid
        if cgroup is not None:
            self._instance_cgroups[pid] = cgroup
        os.close(report_write)
        self._reports[pid] = (request_id, report_read)
        self._selector.register(report_read, selectors.EVENT_READ, pid)

    def _report(self, pid: int) -> None:
        """The instance `pid` has set up and closed its report pipe (or died): tell the app.

        Read to the end: the pipe is closed by then (the instance writes nothing and is its only
        writer), so this never waits. An instance that died setting up is still reported as
        spawned: its exit, reported next, says how it ended."""
        request_id, fd = self._reports.pop(pid)
        self._selector.unregister(fd)
        read_to_end(fd)
        protocol.send(self.sock, {"op": "spawned", "id": request_id, "pid": pid})

    def _reap(self) -> None:
        while True:
            try:  # look first, reap after: see _ended
                exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if exited is None:
                return
            pid = exited.si_pid
            if pid in self.instances:
                self._end_leftovers(pid)
            _, status = os.waitpid(pid, 0)
            if pid in self._reports:  # its report (or its failure) first: the app expects that order
                self._report(pid)
            if pid in self.instances:
                self._ended(pid, status)

    def _ended(self, instance: int, status: int) -> None:
        """The instance exited with `status` (and its process group was killed): remove its cgroup
        and tell the app.

        Without the PID namespace layer (whose PID 1's exit ends everything in it), what the server
        started would live on, reparented to init, under a uid the app is about to give to someone
        else. It is all still in the server's process group, which the filter lets no process leave
        (setsid and setpgid are not on its list): `_reap` kills that group before it reaps the
        server, while its zombie still holds the pid, so the group's id cannot have been reused.
        Where the filter is missing too, a process may have left the group, but not the instance's
        cgroup: `_end_leftovers` also kills every process in that cgroup, and whatever runs under
        the instance's uid where it has one of its own (rootless mode has not, and a host without
        cgroups has no cgroup to search)."""
        self.instances.discard(instance)
        self._ended_recently.append(instance)
        self._instance_uids.pop(instance, None)
        name = self._instance_cgroups.pop(instance, None)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        memory = self.cgroups.ended_by_memory(name) if killed and name and self.cgroups else None
        if name is not None:
            self._remove_cgroups([name])
        protocol.send(
            self.sock,
            {
                "op": "exited",
                "pid": instance,
                "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                **({"memory": memory} if memory else {}),  # read before its cgroup is gone
            },
        )

    def _end_leftovers(self, instance: int) -> None:
        """Kill whatever the instance's server started (see `_ended`); called before it is reaped."""
        _kill_group(instance)
        name = self._instance_cgroups.get(instance)
        if name is not None:
            self._kill_cgroup(name)
        uid = self._instance_uids.get(instance)
        if uid is not None and self._sweep_uids():
            _kill_uid(uid)

    def _sweep_uids(self) -> bool:
        """Whether to end an instance's uid too: without the PID namespace, where each instance has a
        uid of its own (never rootless, where every instance shares the app's)."""
        return not self.has("pid_namespace") and self.has("uid") and not self.confinement.rootless

    # --- cgroups and shutdown -------------------------------------------------------------------

    def _remove_cgroups(self, names: list[str]) -> None:
        assert self.cgroups is not None
        for name in names:
            try:
                removed = self.cgroups.remove(name)
            except OSError as exc:
                print(f"fork server: cannot remove cgroup {name}: {exc}", file=sys.stderr, flush=True)
                removed = True  # nothing more to try
            if removed:
                self._leftover_cgroups.discard(name)
            else:
                self._leftover_cgroups.add(name)

    def _kill_cgroup(self, name: str) -> None:
        assert self.cgroups is not None
        try:
            self.cgroups.kill(name)
        except OSError as exc:  # never expected (we made it); say so, and keep serving
            print(f"fork server: cannot end cgroup {name}: {exc}", file=sys.stderr, flush=True)

    def _shut_down(self) -> None:
        """End every instance, remove their cgroups, and exit."""
        instances = self.instances | set(self._instance_cgroups)
        for pid in instances:
            self._end_leftovers(pid)
        if self.cgroups is not None:
            for pid in instances:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
            self._leftover_cgroups.update(self._instance_cgroups.values())
            deadline = time.monotonic() + SHUTDOWN_CGROUP_WAIT_S
            while self._leftover_cgroups and time.monotonic() < deadline:
                self._remove_cgroups(list(self._leftover_cgroups))  # servers may still be leaving
                if self._leftover_cgroups:
                    time.sleep(CGROUP_RETRY_S / 10)
            self.cgroups.close()
        os._exit(0)


def _kill_group(group: int) -> None:
    """SIGKILL every process in `group`; one signal reaches all of them, even ones forking meanwhile."""
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:  # nothing left in it
        pass
    except OSError as exc:  # never expected (we are its root); say so, and keep serving
        print(f"fork server: cannot end process group {group}: {exc}", file=sys.stderr, flush=True)


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid`, an instance's own: a child that becomes the uid and calls
    kill(-1) reaches every process that uid may signal, its own, at once, none forking past it."""
    pid = os.fork()
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)  # none of the fork server's signal handling is this child's
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:  # nothing runs under it
            pass
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
