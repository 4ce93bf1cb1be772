"""A cgroup per instance (memory, number of processes, CPU), where the host lets us make them.

An extra layer on top of the rlimits: the rlimits count per process (memory) or per uid
(processes); a cgroup counts the whole instance. cgroup v1 hierarchies (memory, pids, cpu) or a
cgroup v2 tree whose memory and pids controllers we may enable; without either the layer says
"not available: why" and the app still starts (hosting mode too: this layer alone is optional).

The fork server sets up one parent cgroup per hierarchy, `playground-<its pid>` beside its own
cgroup, before its root becomes private, and keeps a descriptor of each: every instance cgroup is
made, joined and removed through those descriptors.

The memory parent's limit is the budget of every instance together (Limits.total_memory_bytes): at
it, the kernel's OOM killer ends the instance using the most, and the fork server reads from the
instance's cgroup, before removing it, that memory ended it (`Cgroups.ended_by_memory`). The web
process reads the parent's current usage (`MemoryGauge`) before it admits a new session.
"""

from __future__ import annotations

import errno
import os
import signal
from dataclasses import dataclass, field

from app.sandbox.limits import Limits

CGROUP_MOUNT = "/sys/fs/cgroup"
V1_HIERARCHIES = ("memory", "pids", "cpu")
# Each instance: at most one core, and a quarter of the default share when cores are contended,
# so the web app and the other instances stay responsive under a busy loop.
CPU_PERIOD_US = 100_000
CPU_QUOTA_US = 100_000
CPU_SHARES_V1 = 256
CPU_WEIGHT_V2 = 25
PARENT_PREFIX = "playground-"
# The default budget of every instance together: this share of the host's memory (or of the app's own
# cgroup limit, if lower). The rest is the web process's, the fork server's and the host's own.
DEFAULT_BUDGET_SHARE = 0.5
MIB = 1024 * 1024
# Where processes stand for the kernel's OOM killer (-1000 never, 1000 first; 0 by default): every
# instance before any other process on the host (the largest instance first), and the web process and
# the fork server last, as ending either would end every session. An instance raises its own as it
# starts: anyone may raise theirs, while lowering needs CAP_SYS_RESOURCE, which a container's root
# often lacks; the instances' standing alone still puts them first there.
INSTANCE_OOM_SCORE_ADJ = 1000
SERVICE_OOM_SCORE_ADJ = -900
# How many times `kill` reads an instance's members and signals the new ones. A process killed while
# forking leaves no child, so each pass can only find children born before its own signals landed;
# the pids limit bounds how many those are. Whatever is left is killed again at the removal's retry.
KILL_PASSES = 16


class CgroupsUnavailable(Exception):
    """Why this host gives us no cgroups; the layer reports it as "not available: ..."."""


@dataclass
class _Hierarchy:
    name: str  # "memory", "pids", "cpu", or "unified" (v2)
    path: str  # the parent cgroup, playground-<pid>
    fd: int  # a descriptor of `path`, valid after the fork server's root turns private
    base_fd: int  # and one of the folder holding it, to remove it at the end
    settings: dict[str, str] = field(default_factory=dict)  # file -> value, per instance


class Cgroups:
    """The fork server's instance cgroups. `create(name)` returns descriptors of the new cgroup's
    `cgroup.procs` files: the instance moves itself into each, first thing after it is forked."""

    def __init__(self, version: int, hierarchies: list[_Hierarchy]) -> None:
        self.version = version
        self.hierarchies = hierarchies

    @classmethod
    def setup(cls, limits: Limits) -> Cgroups:
        """Make the parent cgroups and try one instance cgroup; raise CgroupsUnavailable."""
        own = _own_cgroups()
        unified = _v2_mount()
        if unified is not None and "memory" in _controllers(unified, own.get("", "/")):
            made = cls(2, [_make_v2_parent(unified, own.get("", "/"), limits)])
        elif all(os.path.isdir(f"{CGROUP_MOUNT}/{name}") for name in V1_HIERARCHIES):
            made = cls(1, [_make_v1_parent(name, own.get(name, "/"), limits) for name in V1_HIERARCHIES])
        else:
            raise CgroupsUnavailable(
                "neither cgroup v1 hierarchies (memory, pids, cpu) nor a v2 memory controller"
            )
        try:
            for fd in made.create("probe"):
                os.close(fd)
            made.remove("probe")
        except OSError as exc:
            made.close()
            raise CgroupsUnavailable(f"cannot make an instance cgroup: {exc}") from exc
        return made

    def describe(self) -> str:
        return f"cgroup v{self.version}: " + ", ".join(h.path for h in self.hierarchies)

    def create(self, name: str) -> list[int]:
        fds: list[int] = []
        try:
            for hierarchy in self.hierarchies:
                os.mkdir(name, 0o755, dir_fd=hierarchy.fd)
                for file, value in hierarchy.settings.items():
                    _write_at(hierarchy.fd, f"{name}/{file}", value)
                fds.append(os.open(f"{name}/cgroup.procs", os.O_WRONLY | os.O_CLOEXEC, dir_fd=hierarchy.fd))
        except OSError:
            for fd in fds:
                os.close(fd)
            self.remove(name)
            raise
        return fds

    def kill(self, name: str) -> None:
        """SIGKILL every process in the instance's cgroup, whatever process group or session it moved
        to: no process of an instance can leave its cgroup. cgroup v2's `cgroup.kill` where the
        kernel has it (5.14 on); else each member, by a pidfd opened before its membership is read
        again, so that a pid reused since the first reading is never signalled. A cgroup already
        removed has nothing to kill."""
        hierarchy = self.hierarchies[0]  # an instance joins every hierarchy: any one lists them all
        if self.version == 2:
            try:
                _write_at(hierarchy.fd, f"{name}/cgroup.kill", "1")
                return
            except OSError:  # no such file before 5.14 (or no such cgroup): signal the members
                pass
        signalled: set[int] = set()
        for _ in range(KILL_PASSES):
            new = _members(hierarchy.fd, name) - signalled
            if not new:
                return
            handles: dict[int, int] = {}
            try:
                for pid in new:
                    try:
                        handles[pid] = os.pidfd_open(pid)
                    except ProcessLookupError:  # gone already
                        pass
                still = _members(hierarchy.fd, name)
                for pid, handle in handles.items():
                    # A pidfd names one process: listed now, that process is a member (its pid is
                    # its own while it lives); gone since, the signal reaches no one.
                    if pid in still:
                        try:
                            signal.pidfd_send_signal(handle, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
            finally:
                for handle in handles.values():
                    os.close(handle)
            signalled |= new

    def ended_by_memory(self, name: str) -> str | None:
        """Whether the kernel's OOM killer ended a process of the instance `name`: "own" when the
        instance reached its own memory limit, "shared" when every instance together reached the
        budget (or the host ran out), None when it did not. Read before the cgroup is removed."""
        memory = next((h for h in self.hierarchies if h.name in ("memory", "unified")), None)
        if memory is None:
            return None
        try:
            if self.version == 2:
                events = _counters(_read_at(memory.fd, f"{name}/memory.events"))
                killed, own = events.get("oom_kill", 0), events.get("oom", 0)
            else:  # v1: a charge refused at the instance's own limit counts in its failcnt, not above
                killed = _counters(_read_at(memory.fd, f"{name}/memory.oom_control")).get("oom_kill", 0)
                own = int(_read_at(memory.fd, f"{name}/memory.failcnt") or 0)
        except (OSError, ValueError):
            return None
        if not killed:
            return None
        return "own" if own else "shared"

    def remove(self, name: str) -> bool:
        """Remove the instance's cgroups; False while a process is still leaving one (retry later)."""
        done = True
        for hierarchy in self.hierarchies:
            try:
                os.rmdir(name, dir_fd=hierarchy.fd)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                done = False
        return done

    def close(self) -> None:
        """Remove the (empty) parent cgroups; called as the fork server ends."""
        for hierarchy in self.hierarchies:
            try:
                os.close(hierarchy.fd)
                os.rmdir(os.path.basename(hierarchy.path), dir_fd=hierarchy.base_fd)
            except OSError:
                pass  # instances still leaving: the next fork server's sweep takes it
            finally:
                os.close(hierarchy.base_fd)


def join(procs_fds: list[int], proc_fd: int | None = None) -> None:
    """In the new instance, first thing: move this process into its instance cgroups, and stand first
    in line for the OOM killer (`proc_fd`: a descriptor of the host's /proc)."""
    for fd in procs_fds:
        os.write(fd, b"0")  # 0 is the writer itself (its pid here would be 1, of its own namespace)
        os.close(fd)
    if proc_fd is not None:
        set_oom_score_adj(INSTANCE_OOM_SCORE_ADJ, "self", proc_fd)


def set_oom_score_adj(value: int, pid: str = "self", proc_fd: int | None = None) -> bool:
    """Set a process's standing for the OOM killer; False where it may not (lowering needs root)."""
    path = f"{pid}/oom_score_adj" if proc_fd is not None else f"/proc/{pid}/oom_score_adj"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC, dir_fd=proc_fd)
    except OSError:
        return False
    try:
        os.write(fd, str(value).encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


# --- the budget of every instance together ----------------------------------------------------------


def memory_budget_bytes(budget_mb: int | None) -> int:
    """The memory every instance together may use: `budget_mb` (the setting), else the default share
    of what this host (or the app's own cgroup) has, in whole pages: a cgroup's limit is stored in
    pages, so the parent cgroup's limit reads back as exactly this figure."""
    if budget_mb:
        return budget_mb * MIB
    share = int(host_memory_bytes() * DEFAULT_BUDGET_SHARE)
    return share - share % os.sysconf("SC_PAGE_SIZE")


def host_memory_bytes() -> int:
    """The memory the app may count on: the host's (MemTotal), or less where its own memory cgroup, or
    one above it, has a lower limit."""
    with open("/proc/meminfo") as handle:
        total = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemTotal:"))
    limits = [total]
    own = _own_cgroups()
    unified = _v2_mount()
    if unified is not None and os.path.exists(f"{unified}{own.get('', '/').rstrip('/')}/memory.max"):
        mount, path, file = unified, own.get("", "/"), "memory.max"
    else:
        mount, path, file = f"{CGROUP_MOUNT}/memory", own.get("memory", "/"), "memory.limit_in_bytes"
    folder = os.path.normpath(f"{mount}{path}")
    while folder.startswith(mount):  # the cgroup and each one above it, up to the mount's root
        try:
            with open(f"{folder}/{file}") as handle:
                value = handle.read().strip()
            if value.isdigit():
                limits.append(int(value))
        except OSError:
            pass
        if folder == mount:
            break
        folder = os.path.dirname(folder)
    return min(limits)


class MemoryGauge:
    """What every instance together uses now, as their parent cgroup counts it, beside its limit: the
    web process opens it once (as root, before it drops that), and each reading is one small read."""

    def __init__(self, usage_fd: int, limit_bytes: int) -> None:
        self._fd = usage_fd
        self.limit_bytes = limit_bytes

    @classmethod
    def open(cls, fork_server_pid: int) -> MemoryGauge | None:
        """The gauge of the memory parent that the fork server `fork_server_pid` made, None where it
        made none (no cgroups) or it has no limit."""
        own = _own_cgroups()
        unified = _v2_mount()
        candidates = [(f"{CGROUP_MOUNT}/memory{own.get('memory', '/')}", "memory.usage_in_bytes",
                       "memory.limit_in_bytes")]  # fmt: skip
        if unified is not None:
            candidates.insert(0, (f"{unified}{own.get('', '/')}", "memory.current", "memory.max"))
        for base, usage, limit in candidates:
            parent = f"{base.rstrip('/')}/{PARENT_PREFIX}{fork_server_pid}"
            try:
                with open(f"{parent}/{limit}") as handle:
                    value = handle.read().strip()
                fd = os.open(f"{parent}/{usage}", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            if not value.isdigit() or int(value) >= 2**62:  # "max", or v1's "no limit"
                os.close(fd)
                return None
            return cls(fd, int(value))
        return None

    def usage_bytes(self) -> int | None:
        """The parent's usage now; None once the gauge is closed (the fork server has stopped)."""
        if self._fd < 0:
            return None
        return int(os.pread(self._fd, 32, 0))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


# --- finding and making the parents ---------------------------------------------------------------


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per hierarchy ("" for v2), from /proc/self/cgroup."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                own[name] = path
    return own


def _v2_mount() -> str | None:
    if os.path.exists(f"{CGROUP_MOUNT}/cgroup.controllers"):
        return CGROUP_MOUNT  # a pure v2 host
    if os.path.exists(f"{CGROUP_MOUNT}/unified/cgroup.controllers"):
        return f"{CGROUP_MOUNT}/unified"  # a hybrid host's v2 tree (often without memory)
    return None


def _controllers(mount: str, own: str) -> list[str]:
    try:
        with open(f"{mount}{own.rstrip('/')}/cgroup.controllers") as handle:
            return handle.read().split()
    except OSError:
        return []


def _write_at(dir_fd: int, path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read_at(dir_fd: int, path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        return os.read(fd, 4096).decode()
    finally:
        os.close(fd)


def _counters(text: str) -> dict[str, int]:
    """`name value` lines (memory.events, memory.oom_control) as a dict."""
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            found[name] = int(value)
    return found


def _members(dir_fd: int, name: str) -> set[int]:
    """The pids in the cgroup `name` (as this process's PID namespace numbers them); none once it is gone."""
    try:
        fd = os.open(f"{name}/cgroup.procs", os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return set()
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return {int(line) for line in b"".join(chunks).split()}


def _open_dir(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _parent_path(mount: str, own: str) -> str:
    base = f"{mount}{own.rstrip('/')}"
    _sweep(base)
    path = f"{base}/{PARENT_PREFIX}{os.getpid()}"
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError as exc:
        raise CgroupsUnavailable(f"cannot make {path}: {exc.strerror}") from exc
    return path


def _sweep(base: str) -> None:
    """Remove parents a fork server that no longer runs left behind (it was killed)."""
    try:
        names = [n for n in os.listdir(base) if n.startswith(PARENT_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name.removeprefix(PARENT_PREFIX)
        if not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
            continue
        parent = f"{base}/{name}"
        try:
            for child in os.listdir(parent):
                if os.path.isdir(f"{parent}/{child}"):
                    os.rmdir(f"{parent}/{child}")
            os.rmdir(parent)
        except OSError:
            pass


def _make_v1_parent(name: str, own: str, limits: Limits) -> _Hierarchy:
    path = _parent_path(f"{CGROUP_MOUNT}/{name}", own)
    if name == "memory" and limits.total_memory_bytes:
        _limit_v1_parent(path, limits.total_memory_bytes)
    settings = {
        "memory": {"memory.limit_in_bytes": str(limits.memory_bytes)},
        "pids": {"pids.max": str(limits.processes)},
        "cpu": {
            "cpu.shares": str(CPU_SHARES_V1),
            "cpu.cfs_period_us": str(CPU_PERIOD_US),
            "cpu.cfs_quota_us": str(CPU_QUOTA_US),
        },
    }[name]
    if name == "memory" and os.path.exists(f"{path}/memory.memsw.limit_in_bytes"):
        settings["memory.memsw.limit_in_bytes"] = str(limits.memory_bytes)  # no escape into swap
    return _Hierarchy(name, path, _open_dir(path), _open_dir(os.path.dirname(path)), settings)


def _limit_v1_parent(path: str, budget: int) -> None:
    """The budget of every instance together, on the memory parent: its children count in it (always
    on recent kernels; older ones must be told, before the parent has children)."""
    try:
        with open(f"{path}/memory.use_hierarchy") as handle:
            hierarchical = handle.read().strip() == "1"
        if not hierarchical:
            with open(f"{path}/memory.use_hierarchy", "w") as handle:
                handle.write("1")
        with open(f"{path}/memory.limit_in_bytes", "w") as handle:
            handle.write(str(budget))
        if os.path.exists(f"{path}/memory.memsw.limit_in_bytes"):  # no escape into swap
            with open(f"{path}/memory.memsw.limit_in_bytes", "w") as handle:
                handle.write(str(budget))
    except OSError as exc:
        raise CgroupsUnavailable(f"cannot limit {path} to {budget // MIB} MiB: {exc.strerror}") from exc


def _make_v2_parent(mount: str, own: str, limits: Limits) -> _Hierarchy:
    available = _controllers(mount, own)
    wanted = [c for c in ("memory", "pids", "cpu") if c in available]
    if "pids" not in wanted:
        raise CgroupsUnavailable(f"cgroup v2 at {mount}{own}: no pids controller")
    path = _parent_path(mount, own)
    fd = _open_dir(path)
    try:
        enable = " ".join(f"+{c}" for c in wanted)
        # Our own cgroup holds processes (this one, the app), so the kernel may refuse to enable
        # controllers below it: then the tree is not delegated to us in a usable shape.
        with open(f"{mount}{own.rstrip('/')}/cgroup.subtree_control", "w") as handle:
            handle.write(enable)
        _write_at(fd, "cgroup.subtree_control", enable)
    except OSError as exc:
        os.close(fd)
        try:
            os.rmdir(path)
        except OSError:
            pass
        raise CgroupsUnavailable(
            f"cgroup v2 at {mount}{own}: cannot enable {enable}: {exc.strerror}"
        ) from exc
    if limits.total_memory_bytes:
        try:
            for file, value in (("memory.max", str(limits.total_memory_bytes)), ("memory.swap.max", "0")):
                if os.path.exists(f"{path}/{file}"):
                    _write_at(fd, file, value)
        except OSError as exc:
            os.close(fd)
            raise CgroupsUnavailable(f"cannot limit {path}'s memory: {exc.strerror}") from exc
    settings = {
        "memory.max": str(limits.memory_bytes),
        "memory.swap.max": "0",
        "memory.oom.group": "1",  # the OOM killer ends the whole instance, not one of its processes
        "pids.max": str(limits.processes),
    }
    if "cpu" in wanted:
        settings.update({"cpu.max": f"{CPU_QUOTA_US} {CPU_PERIOD_US}", "cpu.weight": str(CPU_WEIGHT_V2)})
    # memory.swap.max exists only with swap accounting; the parent has every file a child will.
    settings = {file: value for file, value in settings.items() if os.path.exists(f"{path}/{file}")}
    return _Hierarchy("unified", path, fd, _open_dir(os.path.dirname(path)), settings)
