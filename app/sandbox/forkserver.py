"""The fork server: a process that has imported the SDK and every demo server, and forks instances.

Run as `python -m app.sandbox.forkserver CONFIG_JSON` by app.sandbox.launcher, never by hand.
Talks to the app over one SOCK_SEQPACKET socket, a JSON message per packet:

  app -> here  {"op": "spawn", "id": N, "server": NAME, "uid": UID}  + 3 pipe fds (stdin, stdout,
                 stderr) and, for my-server only, a 4th: a memfd holding the learner's server.py
                 (never read here: the instance reads it after the fork, see `_instance`)
               {"op": "signal", "pid": PID, "signal": 15 | 9}   to the group of a live instance of ours
  here -> app  {"op": "ready", "layers": {layer: "ok" | "why it is missing"}, "pid": PID}
               {"op": "spawned", "id": N, "pid": PID}   the instance's server, leader of its group
               {"op": "failed", "id": N, "error": TEXT}
               {"op": "exited", "pid": PID, "code": INT | null, "signal": INT | null}
                 + "memory": "own" | "shared" when the OOM killer ended it (its own limit, or the budget
                 of every instance together)

An instance is one process: the server, forked by us straight into a new PID namespace whose PID 1 it
is (kernel.clone_fork), our child from start to end. It sets itself up (cgroups, a session of its
own, whose id is its pid and the group the app signals; the other namespaces and its tmpfs), reports,
then drops everything and serves. Its pid is the instance's id.

Nothing a learner wrote is ever read, decoded, copied or logged here: whatever this process held
would stay in its heap, and every instance forked afterwards would inherit a copy. A learner's file
passes through as a descriptor, and the instance reads it after the fork (own_server.run_file).

The web process drops root once this process is up (app/privileges.py), so a request here may come
from a compromised, unprivileged process: every one is checked (`check_request`), exactly these
keys, a registered server, a uid inside the reserved range, three pipes (and for my-server a regular
file of at most 64 KiB, by fstat); anything else is refused with a "failed" reply (id null when it had
none) and logged on stderr.
"""

from __future__ import annotations

import fcntl
import gc
import itertools
import json
import os
import selectors
import signal
import socket
import stat
import sys
import tempfile
import time
import traceback
from typing import NoReturn

from app.demos import MY_SERVER, load_registry
from app.sandbox import cgroups, confine, kernel, own_server
from app.sandbox.limits import Limits

MAX_PACKET = 65536
# How soon to try again to remove a cgroup whose last process was still leaving.
CGROUP_RETRY_S = 0.2
# At shutdown, how long to wait for the killed instances to leave their cgroups.
SHUTDOWN_CGROUP_WAIT_S = 2.0
# Where an instance puts the read end of the life pipe (only this process writes to it: at end of
# file, we have died) while it sets up; its report pipe (closed once it is set up, or as it dies
# setting up: its exit, reported next, tells which) is fd 3, its stdio 0 to 2; a learner's file,
# for my-server, fd 5 (read and closed by the instance itself).
REPORT_FD = 3
LIFE_FD = 4
SOURCE_FD = 5


def _send(sock: socket.socket, message: dict) -> None:
    sock.send(json.dumps(message).encode())


def _read_all(fd: int) -> bytes:
    """Read a pipe until its writer closes it (or dies), then close it."""
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    os.close(fd)
    return data


class ForkServer:
    def __init__(self, config: dict) -> None:
        self.config = config
        self.limits = Limits(**config["limits"])
        self.sock = socket.socket(fileno=config["fd"])
        self.registry = load_registry(config["extra_modules"])
        self.modules = {name: demo.load() for name, demo in self.registry.items() if not demo.learners_own}
        self.layers: dict[str, str] = {}
        self.seccomp: kernel.SeccompProgram | None = None
        self.seccomp_problem: str | None = None  # why the seccomp layer is not whole, if it is not
        self.scratch: str | None = "/tmp"  # where instances get their private tmpfs
        # Rootless: not started as root, so the sandbox lives in a user namespace and every
        # instance shares the app's uid (no per-instance uid). Each instance then gets a user
        # namespace of its own, nested in ours, where the kernel counts its processes apart.
        self.rootless: bool = config.get("rootless", False)
        self.instance_userns = False  # rootless, and nested user namespaces work here
        # The host's /proc, which the fork server's own root no longer shows: for the nested
        # namespaces' id maps (rootless) and each instance's standing with the OOM killer.
        self.proc_fd: int | None = None
        self.apply_rlimits = False
        self.cgroups: cgroups.Cgroups | None = None
        low, high = config.get("uid_range") or (config["uid_probe"], config["uid_probe"] + 1)
        self.uid_range = range(int(low), int(high))  # the only uids an instance may be given
        # An instance's id is its server's pid, which is also its process group.
        self.instances: set[int] = set()  # ids of live instances: the only groups we signal
        self._instance_uids: dict[int, int] = {}  # instance id -> the uid it was given
        self._cgroup_ids = itertools.count(1)
        self._instance_cgroups: dict[int, str] = {}  # instance id -> its cgroup's name
        self._life_read: int | None = None  # read end of a pipe whose only writer is this process
        self._life_write: int | None = None  # never written to, only held: closed when we die
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
            self.layers = {layer: "off: the sandbox setting is off" for layer in confine.LAYERS}
            self.proc_fd = _open_proc()
            return
        try:  # as the user we were started as, before the root turns private
            self.cgroups = cgroups.Cgroups.setup(self.limits)
            self.layers["cgroups"] = "ok"
        except (cgroups.CgroupsUnavailable, OSError) as exc:
            self.layers["cgroups"] = f"not available: {exc}"
        if self.rootless:
            try:
                confine.enter_user_namespace(self.config["outside_uid"], self.config["outside_gid"])
            except OSError as exc:  # no user namespaces here: every layer below will say so
                print(f"fork server: no user namespace: {exc}", file=sys.stderr, flush=True)
        self.proc_fd = _open_proc()  # before the root is built without /proc
        try:  # before the root turns read-only: ctypes needs a writable /tmp to load libseccomp
            self.seccomp, problems = confine.build_seccomp_filter()
            if problems:  # the filter still loads (stricter than meant), but the layer is not whole
                self.seccomp_problem = "missing: rules that could not be built: " + "; ".join(problems)
        except Exception as exc:  # libseccomp absent or unusable
            self.seccomp_problem = f"missing: {exc}"
        paths = self._visible_paths()
        wanted = confine.scratch_dir(paths)
        try:
            confine.build_read_only_root(paths, wanted)
            self.layers["filesystem"] = "ok"
            self.scratch = wanted
        except OSError as exc:
            self.layers["filesystem"] = f"missing: {exc}"
            self.scratch = "/tmp" if wanted == "/tmp" else None  # never hide the project under a tmpfs
        # Instances inherit this environment: temporary files go to their own tmpfs.
        os.environ["TMPDIR"] = os.environ["HOME"] = self.scratch or "/tmp"
        tempfile.tempdir = None  # mkdtemp above cached /tmp; let instances look again
        probed = self._probe_layers()
        nested = probed.pop("instance_userns", "missing: not rootless")
        self.instance_userns = self.rootless and nested == "ok"
        self.apply_rlimits = probed.get("rlimits") == "ok"
        if self.rootless and not self.instance_userns and self.layers.get("cgroups") != "ok":
            # Nothing would bound how many processes an instance starts: say so.
            probed["rlimits"] = (
                "missing: no process limit per instance: rootless mode without a user namespace of "
                f"its own per instance ({nested}) and without cgroups"
            )
        if self.instance_userns and probed.get("uid", "").startswith("missing: rootless mode"):
            probed["uid"] = (
                f"missing: rootless mode (a user namespace): every instance runs as the app's uid "
                f"{self.config['outside_uid']} (each in a user namespace of its own, so the process "
                "limit still counts per instance)"
            )
        self.layers.update(probed)
        if self.seccomp_problem is not None:
            self.layers["seccomp"] = self.seccomp_problem

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
        return sorted(p for p in paths if p)

    def _probe_layers(self) -> dict[str, str]:
        """Try every per-instance layer in a throwaway child and report which ones hold here."""
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            results: dict[str, str] = {}
            uid = self.config["uid_probe"]

            def attempt(name: str, action) -> None:  # noqa: ANN001
                try:
                    action()
                    results[name] = "ok"
                except Exception as exc:
                    results[name] = f"missing: {exc}"

            owner = self._owner(uid)
            if self.rootless:  # first, as each instance does
                attempt("instance_userns", lambda: confine.enter_instance_user_namespace(self._proc()))
            attempt(
                "namespaces",
                lambda: confine.enter_namespaces(owner, self.limits, scratch=self.scratch),
            )
            attempt("pid_namespace", self._probe_pid_namespace)
            attempt("rlimits", lambda: confine.set_rlimits(self.limits, per_uid=self._per_uid(results)))
            if self.rootless:
                results["uid"] = (
                    f"missing: rootless mode (a user namespace): every instance runs as the app's uid "
                    f"{self.config['outside_uid']} and shares its process limit"
                )
                attempt("capabilities", confine.drop_capabilities)
            else:
                attempt("uid", lambda: confine.drop_privileges(uid))
                results["capabilities"] = results["uid"]
            if self.seccomp is not None:
                attempt("seccomp", self.seccomp.load)
            os.write(write, json.dumps(results).encode())
            os._exit(0)
        os.close(write)
        data = _read_all(read)
        os.waitpid(pid, 0)
        return json.loads(data or b"{}")

    @staticmethod
    def _probe_pid_namespace() -> None:
        child = kernel.fork_in_new_pid_namespace()
        if child == 0:
            os._exit(0 if os.getpid() == 1 else 1)
        _, status = os.waitpid(child, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise OSError("the first child was not PID 1")

    def has(self, layer: str) -> bool:
        return self.layers.get(layer) == "ok"

    # --- the loop -------------------------------------------------------------------------------

    def serve(self) -> None:
        wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wake-up fd is written
        signal.signal(signal.SIGTERM, lambda *_: self._shut_down())
        self._life_read, self._life_write = _pipe_above_instances_fds()
        gc.collect()
        gc.freeze()  # keep the collector from touching (and so copying) every inherited page
        _send(self.sock, {"op": "ready", "layers": self.layers, "pid": os.getpid()})
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
        self._instance_uids.pop(instance, None)
        name = self._instance_cgroups.pop(instance, None)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        memory = self.cgroups.ended_by_memory(name) if killed and name and self.cgroups else None
        if name is not None:
            self._remove_cgroups([name])
        _send(
            self.sock,
            {
                "op": "exited",
                "pid": instance,
                "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                **({"memory": memory} if memory else {}),  # read before its cgroup is gone
            },
        )

    def check_request(self, data: bytes, fds: list[int], flags: int) -> tuple[dict, str]:
        """The request, and "" when it is well-formed, else what is wrong with it."""
        try:
            request = json.loads(data)
        except (ValueError, RecursionError):
            return {}, "not JSON"
        if not isinstance(request, dict):
            return {}, "not a JSON object"
        if flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC):
            return request, "truncated (too many descriptors or too long)"
        op = request.get("op")
        if op == "spawn":
            if set(request) != {"op", "id", "server", "uid"}:
                return request, "a spawn takes exactly op, id, server and uid"
            if not _is_int(request["id"]):
                return request, "the id is not an integer"
            own = request["server"] == MY_SERVER
            if not isinstance(request["server"], str) or not (own or request["server"] in self.modules):
                return request, f"no registered server {request['server']!r}"
            if not _is_int(request["uid"]) or request["uid"] not in self.uid_range:
                return request, (f"uid {request['uid']!r} is outside the reserved range "
                                 f"{self.uid_range.start}-{self.uid_range.stop - 1}")  # fmt: skip
            wanted = 4 if own else 3
            if len(fds) != wanted:
                return request, f"a spawn of {request['server']} needs {wanted} descriptors, got {len(fds)}"
            for fd in fds[:3]:
                if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                    return request, "a spawn's descriptors must be pipes"
            if own:
                info = os.fstat(fds[3])
                if not stat.S_ISREG(info.st_mode):
                    return request, "the server file must come as a regular file (a memfd)"
                if info.st_size > own_server.MAX_SOURCE_BYTES:
                    return request, f"the server file is over {own_server.MAX_SOURCE_BYTES} bytes"
            return request, ""
        if op == "signal":
            if set(request) != {"op", "pid", "signal"}:
                return request, "a signal takes exactly op, pid and signal"
            if fds:
                return request, "a signal takes no descriptors"
            if not _is_int(request["pid"]) or request["pid"] not in self.instances:
                return request, f"{request['pid']!r} is not a live instance"
            if not _is_int(request["signal"]) or request["signal"] not in (signal.SIGTERM, signal.SIGKILL):
                return request, f"signal {request['signal']!r} is not SIGTERM or SIGKILL"
            return request, ""
        return request, f"unknown op {op!r}"

    def _handle_control(self) -> None:
        try:
            data, fds, flags, _addr = socket.recv_fds(self.sock, MAX_PACKET, 4)
        except InterruptedError:
            return
        if not data and not fds:  # the app is gone; so are we, and every instance with us
            self._shut_down()
        try:
            request, problem = self.check_request(data, fds, flags)
        except Exception as exc:  # whatever a request holds, the fork server keeps serving
            request, problem = {}, f"unreadable request: {exc!r}"
        if problem:
            for fd in fds:
                os.close(fd)
            request_id = request.get("id")
            print(f"fork server: refused a request: {problem}", file=sys.stderr, flush=True)
            _send(self.sock, {"op": "failed", "id": request_id if _is_int(request_id) else None,
                              "error": f"bad request: {problem}"})  # fmt: skip
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
            self._spawn(request["id"], request["server"], request["uid"], fds[:3], source)
        except OSError as exc:
            failure = str(exc)
        finally:
            for fd in fds:
                os.close(fd)
        if failure is not None:  # told once nothing of the request is held open any more
            _send(self.sock, {"op": "failed", "id": request["id"], "error": failure})

    def _report(self, pid: int) -> None:
        """The instance `pid` has set up and closed its report pipe (or died): tell the app.

        Read to the end: the pipe is closed by then (the instance writes nothing and is its only
        writer), so this never waits. An instance that died
        setting up is still reported as spawned: its exit, reported next, says how it ended."""
        request_id, fd = self._reports.pop(pid)
        self._selector.unregister(fd)
        _read_all(fd)
        _send(self.sock, {"op": "spawned", "id": request_id, "pid": pid})

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

    def _end_leftovers(self, instance: int) -> None:
        """Kill whatever the instance's server started (see `_ended`); called before it is reaped."""
        _kill_group(instance)
        name = self._instance_cgroups.get(instance)
        if name is not None:
            self._kill_cgroup(name)
        uid = self._instance_uids.get(instance)
        if uid is not None and self._sweep_uids():
            _kill_uid(uid)

    def _kill_cgroup(self, name: str) -> None:
        assert self.cgroups is not None
        try:
            self.cgroups.kill(name)
        except OSError as exc:  # never expected (we made it); say so, and keep serving
            print(f"fork server: cannot end cgroup {name}: {exc}", file=sys.stderr, flush=True)

    def _sweep_uids(self) -> bool:
        """Whether to end an instance's uid too: without the PID namespace, where each instance has a
        uid of its own (never rootless, where every instance shares the app's)."""
        return not self.has("pid_namespace") and self.has("uid") and not self.rootless

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

    # --- one instance ---------------------------------------------------------------------------

    def _spawn(self, request_id: int, server: str, uid: int, fds: list[int], source: int | None) -> None:
        """Fork the instance (`source`: the descriptor of a learner's file, for my-server); the "spawned"
        reply goes out when its report arrives."""
        cgroup, procs = None, []
        if self.cgroups is not None:
            cgroup = f"i{next(self._cgroup_ids)}"
            procs = self.cgroups.create(cgroup)  # an OSError fails this spawn, as it should
        report_read, report_write = os.pipe()
        try:
            pid = self._fork_instance(server, uid, fds, report_write, procs, source)
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

    def _fork_instance(self, server: str, uid: int, fds: list[int], report: int, cgroup_procs: list[int],
                       source: int | None) -> int:  # fmt: skip
        """The new instance's pid."""
        pid = kernel.fork_in_new_pid_namespace() if self.has("pid_namespace") else os.fork()
        if pid == 0:
            self._run_instance(server, uid, fds, report, cgroup_procs, source)
        return pid

    def _run_instance(self, server: str, uid: int, fds: list[int], report: int, cgroup_procs: list[int],
                      source: int | None) -> NoReturn:  # fmt: skip
        """In the new process: the instance, until it exits."""
        try:
            self._instance(server, uid, fds, report, cgroup_procs, source)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(70)

    def _instance(self, server: str, uid: int, fds: list[int], report: int, cgroup_procs: list[int],
                  source: int | None) -> None:  # fmt: skip
        """In the new process: set up as root (of a user namespace, rootless), report, lock down, serve."""
        self._confine(uid, fds, report=report, cgroup_procs=cgroup_procs, source=source)
        # Set up and locked down, filter loaded: only now may the fork server answer the request, as
        # the app hands a reported instance to a learner at once.
        os.close(REPORT_FD)
        # PID 1 ignores signals it has no handler for, so give SIGTERM one.
        signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
        if source is not None:  # read only now, confined: never in the process that forks
            own_server.run_file(SOURCE_FD)  # exits as `python server.py` would
        self.modules[server].serve()
        os._exit(0)

    def _confine(self, uid: int, fds: list[int], *, report: int, cgroup_procs: list[int],
                 source: int | None = None) -> None:  # fmt: skip
        """In a new instance: set up, then lock down. `fds` become 0 to 2, `report` REPORT_FD, `source`
        SOURCE_FD."""
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        cgroups.join(cgroup_procs, self.proc_fd)  # first: whatever it starts is born inside them
        os.setsid()  # own session and process group: the app ends the whole group
        if self.instance_userns:  # before the descriptors move: ours to /proc may be any number
            confine.enter_instance_user_namespace(self._proc())
        if source is not None:  # clear of every number the moves below write to
            source = fcntl.fcntl(source, fcntl.F_DUPFD, SOURCE_FD + 1)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.dup2(report, REPORT_FD)
        assert self._life_read is not None
        os.dup2(self._life_read, LIFE_FD)
        if source is not None:
            os.dup2(source, SOURCE_FD)
        last = LIFE_FD if source is None else SOURCE_FD
        os.closerange(last + 1, os.sysconf("SC_OPEN_MAX"))  # other sessions' pipes must see EOF
        if self.has("namespaces"):
            confine.enter_namespaces(self._owner(uid), self.limits, scratch=self.scratch)
        self._lock_down(uid)

    def _owner(self, uid: int) -> int:
        """Who owns the instance's tmpfs: its uid, or in rootless mode the one uid there is."""
        return 0 if self.rootless else uid

    def _proc(self) -> int:
        if self.proc_fd is None:
            raise OSError("no descriptor of /proc")
        return self.proc_fd

    def _per_uid(self, probe: dict[str, str] | None = None) -> bool:
        """Whether RLIMIT_NPROC bounds one instance: with a uid of its own, or (rootless) a user
        namespace of its own; never when the count would cover every process of the app's user."""
        if not self.rootless:
            return True
        return probe.get("instance_userns") == "ok" if probe is not None else self.instance_userns

    def _lock_down(self, uid: int) -> None:
        if self.apply_rlimits:
            confine.set_rlimits(self.limits, per_uid=self._per_uid())
        if self.rootless:
            if self.has("capabilities"):
                confine.drop_capabilities()
        elif self.has("uid"):
            confine.drop_privileges(uid)
        confine.die_with_fork_server(LIFE_FD)  # after setuid, which would clear the parent-death signal
        if self.has("seccomp") and self.seccomp is not None:
            self.seccomp.load()


def _open_proc() -> int:
    return os.open("/proc", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def _pipe_above_instances_fds() -> tuple[int, int]:
    """A pipe whose read end is clear of the fds an instance fills (0 to SOURCE_FD), so it survives there."""
    read, write = os.pipe()
    moved = fcntl.fcntl(read, fcntl.F_DUPFD_CLOEXEC, SOURCE_FD + 1)
    os.close(read)
    return moved, write


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


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def main() -> None:
    config = json.loads(sys.argv[1])
    # SIGTERM, not SIGKILL: its handler ends every instance's whole process group, which matters
    # where a server's exit does not end its PID namespace (that layer missing).
    confine.die_with_parent(config["parent"], signal.SIGTERM)
    server = ForkServer(config)
    server.prepare()
    server.serve()


if __name__ == "__main__":
    main()
