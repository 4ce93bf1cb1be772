"""An instance's confinement: which layers hold here, found once at start-up, and each new child's
set-up, from its fork to its server.

An instance is one process: the server, forked by the fork server straight into a new PID namespace
whose PID 1 it is (kernel.clone_fork), its child from start to end. It sets itself up (cgroups, a
session of its own, whose id is its pid and the group the app signals; the other namespaces and its
tmpfs), reports, then drops everything and serves. Its pid is the instance's id.

Nothing a learner wrote is read, decoded, copied or logged in the fork server: whatever it held would
stay in its heap, and every instance forked afterwards would inherit a copy. A learner's file passes
through as a descriptor, and the instance reads it after the fork (own_server.run_file).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import tempfile
import traceback
from types import ModuleType
from typing import NoReturn

from app.sandbox import cgroups, confine, kernel, own_server
from app.sandbox.limits import Limits
from app.sandbox.node_server import NodeRuntime, address_space_bytes

# Where an instance puts the read end of the life pipe (only the fork server writes to it: at end of
# file, the fork server has died) while it sets up; its report pipe (closed once it is set up, or as
# it dies setting up: its exit, reported next, tells which) is fd 3, its stdio 0 to 2; a learner's
# file, for my-server, fd 5 (read and closed by the instance itself).
REPORT_FD = 3
LIFE_FD = 4
SOURCE_FD = 5


class Confinement:
    """What confines each instance: built and probed once at start-up (`prepare`), applied in every
    new child (`fork_instance`)."""

    def __init__(self, limits: Limits, *, uid_probe: int, rootless: bool, outside_uid: int,
                 outside_gid: int, node: NodeRuntime | None = None) -> None:  # fmt: skip
        self.limits = limits
        self.node = node  # Node for a learner's server.ts, when installed
        self.uid_probe = uid_probe  # the uid the start-up probe sets up as
        # Rootless: not started as root, so the sandbox lives in a user namespace and every
        # instance shares the app's uid (no per-instance uid). Each instance then gets a user
        # namespace of its own, nested in ours, where the kernel counts its processes apart.
        self.rootless = rootless
        self.outside_uid = outside_uid
        self.outside_gid = outside_gid
        self.layers: dict[str, str] = {}
        self.seccomp: kernel.SeccompProgram | None = None
        self.seccomp_node: kernel.SeccompProgram | None = None  # Node's: the same, and its one execve
        self.scratch: str | None = "/tmp"  # where instances get their private tmpfs
        self.instance_userns = False  # rootless, and nested user namespaces work here
        self.apply_rlimits = False
        # The host's /proc, which the fork server's own root no longer shows: for the nested
        # namespaces' id maps (rootless) and each instance's standing with the OOM killer.
        self.proc_fd: int | None = None
        self._life_read: int | None = None  # read end of a pipe whose only writer is the fork server
        self._life_write: int | None = None  # never written to, only held: closed when it dies

    def has(self, layer: str) -> bool:
        return self.layers.get(layer) == "ok"

    # --- start-up, in the fork server -----------------------------------------------------------

    def off(self) -> None:
        """The sandbox setting is off: no layer, only each instance's standing with the OOM killer."""
        self.layers = {layer: "off: the sandbox setting is off" for layer in confine.LAYERS}
        self.proc_fd = _open_proc()

    def prepare(self, paths: list[str]) -> None:
        """Build what every instance shares (the filter, the read-only root of `paths`) and find which
        per-instance layers hold here. The cgroups' layer is in `layers` already: set up before this,
        as the user the fork server was started as."""
        if self.rootless:
            try:
                confine.enter_user_namespace(self.outside_uid, self.outside_gid)
            except OSError as exc:  # no user namespaces here: every layer below will say so
                print(f"fork server: no user namespace: {exc}", file=sys.stderr, flush=True)
        self.proc_fd = _open_proc()  # before the root is built without /proc
        seccomp_problem = None  # why the seccomp layer is not whole, if it is not
        try:  # before the root turns read-only: ctypes needs a writable /tmp to load libseccomp
            self.seccomp, problems = confine.build_seccomp_filter()
            if self.node is not None:
                self.seccomp_node, node_problems = confine.build_seccomp_filter(self.node.address)
                problems += [f"Node's filter: {p}" for p in node_problems if p not in problems]
            if problems:  # the filter still loads (stricter than meant), but the layer is not whole
                seccomp_problem = "missing: rules that could not be built: " + "; ".join(problems)
        except Exception as exc:  # libseccomp absent or unusable
            seccomp_problem = f"missing: {exc}"
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
        if self.rootless and not self.instance_userns and not self.has("cgroups"):
            # Nothing would bound how many processes an instance starts: say so.
            probed["rlimits"] = (
                "missing: no process limit per instance: rootless mode without a user namespace of "
                f"its own per instance ({nested}) and without cgroups"
            )
        if self.instance_userns and probed.get("uid", "").startswith("missing: rootless mode"):
            probed["uid"] = (
                f"missing: rootless mode (a user namespace): every instance runs as the app's uid "
                f"{self.outside_uid} (each in a user namespace of its own, so the process "
                "limit still counts per instance)"
            )
        self.layers.update(probed)
        if seccomp_problem is not None:
            self.layers["seccomp"] = seccomp_problem

    def _probe_layers(self) -> dict[str, str]:
        """Try every per-instance layer in a throwaway child and report which ones hold here."""
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            results: dict[str, str] = {}
            uid = self.uid_probe

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
            attempt("pid_namespace", _probe_pid_namespace)
            attempt("rlimits", lambda: confine.set_rlimits(self.limits, per_uid=self._per_uid(results)))
            if self.rootless:
                results["uid"] = (
                    f"missing: rootless mode (a user namespace): every instance runs as the app's uid "
                    f"{self.outside_uid} and shares its process limit"
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
        data = read_to_end(read)
        os.waitpid(pid, 0)
        return json.loads(data or b"{}")

    def open_life_pipe(self) -> None:
        """The pipe each instance watches to know that the fork server is alive (`die_with_fork_server`)."""
        read, self._life_write = os.pipe()
        # Clear of the fds an instance fills (0 to SOURCE_FD), so it survives there.
        self._life_read = fcntl.fcntl(read, fcntl.F_DUPFD_CLOEXEC, SOURCE_FD + 1)
        os.close(read)

    # --- one instance ---------------------------------------------------------------------------

    def fork_instance(self, uid: int, fds: list[int], report: int, cgroup_procs: list[int], *,
                      demo: ModuleType | None, source: int | None, runtime: str = "python") -> int:  # fmt: skip
        """Fork an instance that serves `demo`, or for my-server the learner's file `source` on
        `runtime` (python, or node for the JavaScript made of a server.ts); its pid."""
        pid = kernel.fork_in_new_pid_namespace() if self.has("pid_namespace") else os.fork()
        if pid == 0:
            self._run_instance(uid, fds, report, cgroup_procs, demo, source, runtime)
        return pid

    def _run_instance(self, uid: int, fds: list[int], report: int, cgroup_procs: list[int],
                      demo: ModuleType | None, source: int | None, runtime: str) -> NoReturn:  # fmt: skip
        """In the new process: the instance, until it exits."""
        try:
            self._instance(uid, fds, report, cgroup_procs, demo, source, runtime)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(70)

    def _instance(self, uid: int, fds: list[int], report: int, cgroup_procs: list[int],
                  demo: ModuleType | None, source: int | None, runtime: str) -> None:  # fmt: skip
        """In the new process: set up as root (of a user namespace, rootless), report, lock down, serve."""
        node = self.node if runtime == "node" else None
        self._confine(
            uid, fds, report=report, cgroup_procs=cgroup_procs, source=source, node=node is not None
        )
        # Set up and locked down, filter loaded: only now may the fork server answer the request, as
        # the app hands a reported instance to a learner at once.
        os.close(REPORT_FD)
        # PID 1 ignores signals it has no handler for, so give SIGTERM one.
        signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
        if source is not None and node is not None:
            node.run_file(SOURCE_FD, self.limits)  # becomes Node, or exits saying why it cannot
        if source is not None:  # read only now, confined: never in the process that forks
            own_server.run_file(SOURCE_FD)  # exits as `python server.py` would
        assert demo is not None
        demo.serve()
        os._exit(0)

    def _confine(self, uid: int, fds: list[int], *, report: int, cgroup_procs: list[int],
                 source: int | None, node: bool = False) -> None:  # fmt: skip
        """Set up, then lock down. `fds` become 0 to 2, `report` REPORT_FD, `source` SOURCE_FD."""
        signal.set_wakeup_fd(-1)  # none of the fork server's signal handling is the instance's
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
        self._lock_down(uid, node=node)

    def _lock_down(self, uid: int, *, node: bool = False) -> None:
        """`node`: the instance will become Node: more address space (not memory), and Node's filter."""
        if self.apply_rlimits:
            address_space = address_space_bytes(self.limits) if node else None
            confine.set_rlimits(self.limits, per_uid=self._per_uid(), address_space=address_space)
        if self.rootless:
            if self.has("capabilities"):
                confine.drop_capabilities()
        elif self.has("uid"):
            confine.drop_privileges(uid)
        confine.die_with_fork_server(LIFE_FD)  # after setuid, which would clear the parent-death signal
        program = self.seccomp_node if node else self.seccomp
        if self.has("seccomp") and program is not None:
            program.load()

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


def read_to_end(fd: int) -> bytes:
    """Read a pipe until its writer closes it (or dies), then close it."""
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    os.close(fd)
    return data


def _probe_pid_namespace() -> None:
    child = kernel.fork_in_new_pid_namespace()
    if child == 0:
        os._exit(0 if os.getpid() == 1 else 1)
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError("the first child was not PID 1")


def _open_proc() -> int:
    return os.open("/proc", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
