"""The isolation layers, applied by the fork server (once) and by each instance (after fork).

With the kernel's own calls, not bubblewrap: run as root, bubblewrap either keeps every capability
or leaves a uid that the host sees as root, so neither meets the sandbox rule. The fork server runs
them as root, or as root of a user namespace of its own in rootless mode (docs/sandbox.md).
Order matters: namespaces and mounts need that root, so privileges are dropped last, then seccomp.
"""

from __future__ import annotations

import os
import resource
import select
import tempfile
from collections.abc import Iterable

from app.sandbox import kernel as k
from app.sandbox.limits import Limits

# The layers, by name; /healthz and the start-up banner report each one.
LAYERS = (
    "filesystem",  # read-only view holding only the interpreter, the libraries and the demo code
    "namespaces",  # own network, IPC, UTS and mount namespaces
    "pid_namespace",  # own PID namespace (the server is PID 1 of it)
    "uid",  # an unprivileged uid of its own from the reserved range
    "capabilities",  # no capabilities, empty bounding set, no_new_privs
    "rlimits",  # memory, CPU seconds, open files, file size, processes
    "cgroups",  # a cgroup per instance (memory, processes, CPU); optional: "not available" on some hosts
    "seccomp",  # an allow-list of system calls (app/sandbox/syscalls.py); AF_UNIX sockets only
)

# Devices a Python process may open; everything else under /dev stays invisible.
DEVICES = ("null", "zero", "random", "urandom")


def scratch_dir(paths: Iterable[str]) -> str:
    """Where each instance gets its private tmpfs: /tmp, unless the project itself lives under /tmp
    (a checkout in /tmp/...), which a tmpfs there would hide from the server."""
    under_tmp = any(p == "/tmp" or p.startswith("/tmp/") for p in (os.path.realpath(p) for p in paths))
    return "/scratch" if under_tmp else "/tmp"


def build_read_only_root(paths: Iterable[str], scratch: str) -> None:
    """Give this process (the fork server) a private, read-only root holding only `paths`.

    Done once at fork-server start: every instance inherits the view, then mounts its own tmpfs
    on `scratch` (an empty directory made here).
    """
    k.unshare(k.CLONE_NEWNS)
    k.mount(None, "/", None, k.MS_REC | k.MS_PRIVATE)
    # The mount point is made on the host's /tmp (or $TMPDIR): ours to remove whatever happens.
    root = tempfile.mkdtemp(prefix="playground-root-")
    try:
        _assemble_root(root, paths, scratch)
        os.makedirs(root + "/.old", mode=0o700)
        k.pivot_root(root, root + "/.old")
    except BaseException:
        _abandon_root(root)
        raise
    os.chdir("/")
    os.rmdir("/.old" + root)  # nothing is mounted on it now: the root moved away
    k.umount("/.old", k.MNT_DETACH)
    os.rmdir("/.old")
    k.mount(None, "/", None, k.MS_REMOUNT | k.MS_RDONLY | k.MS_NOSUID | k.MS_NODEV)


def _assemble_root(root: str, paths: Iterable[str], scratch: str) -> None:
    """Mount a small tmpfs on `root` and show in it, read-only, `paths` and the allowed devices."""
    k.mount("tmpfs", root, "tmpfs", k.MS_NOSUID | k.MS_NODEV, "size=64k,mode=0755")
    binds = _outermost(os.path.realpath(p) for p in paths if os.path.exists(p))
    for path in binds:
        target = root + path
        if os.path.isdir(path):
            os.makedirs(target, mode=0o755, exist_ok=True)
        else:  # a single module file: its folder stays hidden
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            open(target, "w").close()
        k.mount(path, target, None, k.MS_BIND | k.MS_REC)
        kept = k.mount_flags(path)  # inside a user namespace, flags the mount had may not be dropped
        flags = k.MS_BIND | k.MS_REMOUNT | k.MS_RDONLY | k.MS_NOSUID | k.MS_NODEV | kept
        k.mount(None, target, None, flags)
    for name in ("bin", "lib", "lib64", "sbin"):  # Debian's merged-/usr links
        host = "/" + name
        if os.path.islink(host) and not os.path.exists(root + host):
            os.symlink(os.readlink(host), root + host)
    os.makedirs(root + "/dev", mode=0o755)
    for dev in DEVICES:
        target = f"{root}/dev/{dev}"
        open(target, "w").close()
        k.mount(f"/dev/{dev}", target, None, k.MS_BIND)
    os.makedirs(root + scratch, mode=0o755, exist_ok=True)


def _abandon_root(root: str) -> None:
    """A root that could not be finished: unmount what was mounted on it and remove its mount point."""
    try:
        k.umount(root, k.MNT_DETACH)
    except OSError:
        pass  # nothing was mounted yet
    try:
        os.rmdir(root)
    except OSError:
        pass  # still busy: the host keeps an empty directory, nothing more


def _outermost(paths: Iterable[str]) -> list[str]:
    """The paths, less any inside another: a folder's bind already shows what is in it."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path.startswith(outer.rstrip("/") + "/") for outer in kept):
            kept.append(path)
    return kept


def enter_user_namespace(outside_uid: int, outside_gid: int) -> None:
    """Rootless mode: become root of a new user namespace, which is `outside_uid` on the host.

    Root there may unshare the other namespaces, mount and pivot_root; nothing it does reaches
    past the namespace. Only one uid is mapped, so every instance shares it.
    """
    k.unshare(k.CLONE_NEWUSER)
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny")
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"0 {outside_uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"0 {outside_gid} 1")


def enter_instance_user_namespace(proc: int) -> None:
    """Rootless mode, in each instance as it sets up: a user namespace of the instance's own, nested in the
    fork server's and mapping its root to the same single uid.

    The kernel counts RLIMIT_NPROC per user namespace and uid (ucounts, Linux 5.14 on), so with one
    namespace per instance each instance has its own process budget although all share the app's
    uid. `proc` is a descriptor of the host's /proc, which the fork server's own root no longer shows.
    """
    k.unshare(k.CLONE_NEWUSER)
    for name, text in (("setgroups", "deny"), ("uid_map", "0 0 1"), ("gid_map", "0 0 1")):
        fd = os.open(f"self/{name}", os.O_WRONLY, dir_fd=proc)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def drop_capabilities() -> None:
    """Rootless mode, where there is no other uid to become: keep the uid, lose every capability."""
    k.drop_bounding_capabilities()
    k.clear_capabilities()
    k.prctl(k.PR_SET_NO_NEW_PRIVS, 1)


def enter_namespaces(uid: int, limits: Limits, *, scratch: str | None) -> None:
    """In the instance, as it sets up: new namespaces and a private, size-capped tmpfs on `scratch`
    (None: no tmpfs, when the root could not be built and the only candidate would hide the project).
    Its PID namespace it was born in (kernel.fork_in_new_pid_namespace)."""
    k.unshare(k.CLONE_NEWNS | k.CLONE_NEWNET | k.CLONE_NEWIPC | k.CLONE_NEWUTS)
    if scratch is None:
        os.chdir("/")
        return
    k.mount(
        "tmpfs", scratch, "tmpfs", k.MS_NOSUID | k.MS_NODEV | k.MS_NOEXEC,
        f"size={limits.tmpfs_bytes},mode=0700,uid={uid},gid={uid}",
    )  # fmt: skip
    os.chdir(scratch)


def set_rlimits(limits: Limits, *, per_uid: bool = True, address_space: int | None = None) -> None:
    """`per_uid` False: no RLIMIT_NPROC, which counts every process of the uid (in one user
    namespace): for rootless mode where an instance could not have a user namespace of its own, as
    there the uid is the app's own, shared with everything else its user runs. `address_space`:
    RLIMIT_AS other than the memory limit (Node's, node_server.py)."""
    values = [
        (resource.RLIMIT_AS, address_space or limits.memory_bytes),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        (resource.RLIMIT_CORE, 0),
    ]
    if per_uid:
        values.append((resource.RLIMIT_NPROC, limits.processes))
    for which, value in values:
        resource.setrlimit(which, (value, value))


def drop_privileges(uid: int) -> None:
    """Become `uid` for good: no supplementary groups, no capabilities, no way back (no_new_privs)."""
    k.drop_bounding_capabilities()
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # clears the permitted and effective capability sets
    k.prctl(k.PR_SET_NO_NEW_PRIVS, 1)


def die_with_parent(expected_parent: int, sig: int) -> None:
    """Send `sig` to this process when its parent dies (set after setuid, which clears it)."""
    k.prctl(k.PR_SET_PDEATHSIG, sig)
    if os.getppid() != expected_parent:  # the parent died before the prctl took hold
        os._exit(137)


def die_with_fork_server(life_fd: int) -> None:
    """In a server, whose parent is the fork server: SIGKILL this process when the fork server dies.

    As PID 1 of its namespace the server sees every parent as pid 0, so getppid() cannot tell whether
    the fork server died before the prctl took hold: `life_fd` reads a pipe only the fork server
    writes to, at end of file once it has gone. Closed after the check."""
    k.prctl(k.PR_SET_PDEATHSIG, 9)
    gone, _, _ = select.select([life_fd], [], [], 0)
    os.close(life_fd)
    if gone:
        os._exit(137)


def build_seccomp_filter(node_exec: int | None = None) -> tuple[k.SeccompProgram, list[str]]:
    """Built once in the fork server (an allow-list, app/sandbox/syscalls.py); each instance loads
    the compiled program after fork. The list names rules that could not be built. `node_exec`:
    Node's filter instead, with its one execve (app/sandbox/node_server.py)."""
    from app.sandbox import syscall_filter

    return syscall_filter.compile_program(node_exec)
