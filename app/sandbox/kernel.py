"""Thin wrappers over the Linux calls the sandbox needs and Python's os module lacks."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
# The same C library, called without releasing the GIL: for a raw clone(), where the child must
# come back into the interpreter exactly as os.fork()'s child does (see fork_in_new_pid_namespace).
_libc_holding_gil = ctypes.PyDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc_holding_gil.syscall.restype = ctypes.c_long
# The interpreter's fork hooks, looked up here once: ctypes makes a function object at the first
# lookup of a name, and PyOS_AfterFork_Child, looked up first in each fork's child, would cost some
# 20 page copies of every instance's start.
_before_fork, _after_fork_child, _after_fork_parent = (
    getattr(ctypes.pythonapi, name)
    for name in ("PyOS_BeforeFork", "PyOS_AfterFork_Child", "PyOS_AfterFork_Parent")
)
for _hook in (_before_fork, _after_fork_child, _after_fork_parent):
    _hook.argtypes, _hook.restype = (), None
_CLONE_SYSCALL = ctypes.c_long({"x86_64": 56, "aarch64": 220}[os.uname().machine])

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
SIGCHLD = 17  # clone()'s exit signal: the parent hears of the child's end as from fork()

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_RELATIME = 1 << 21

# statvfs f_flag bits, and the mount flags they stand for: a remount inside a user namespace must
# keep the flags the mount already had, or the kernel refuses it.
_STATVFS_TO_MOUNT = {1: MS_RDONLY, 2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME,
                     2048: MS_NODIRATIME, 4096: MS_RELATIME}  # fmt: skip
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
CAP_LAST_CAP_GUESS = 63


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def fork_in_new_pid_namespace() -> int:
    """os.fork(), but the child is PID 1 of a new PID namespace: 0 in the child, its pid in the parent.

    One process where unshare(CLONE_NEWPID) would need two (it moves only the caller's later
    children, and works once per process)."""
    return clone_fork(CLONE_NEWPID)


def clone_fork(flags: int) -> int:
    """os.fork() with clone() `flags` (CLONE_NEWPID): 0 in the child, its pid in the parent.

    A raw clone() with no new stack returns twice like fork(); around it, the interpreter's own fork
    hooks (documented C API) do what os.fork() does: the import lock, the GIL and thread state,
    signals, and the os.register_at_fork callbacks (random reseeds). Only for a single-threaded
    process, as the fork server is: glibc's own fork handlers do not run.
    """
    _before_fork()
    pid = _libc_holding_gil.syscall(_CLONE_SYSCALL, ctypes.c_ulong(flags | SIGCHLD), None, None, None, None)
    if pid == 0:
        _after_fork_child()
        return 0
    err = ctypes.get_errno()
    _after_fork_parent()
    if pid < 0:
        raise OSError(err, f"clone: {os.strerror(err)}")
    return pid


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(
        _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {target}",
    )


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(target.encode(), flags), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    # glibc has no wrapper; 155 is pivot_root on x86_64, 41 on aarch64.
    number = {"x86_64": 155, "aarch64": 41}[os.uname().machine]
    _check(_libc.syscall(number, new_root.encode(), put_old.encode()), "pivot_root")


def prctl(option: int, arg2: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg2), 0, 0, 0), f"prctl {option}")


def mount_flags(path: str) -> int:
    """The per-mount flags of the mount holding `path`."""
    bits = os.statvfs(path).f_flag
    return sum(flag for bit, flag in _STATVFS_TO_MOUNT.items() if bits & bit)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def clear_capabilities() -> None:
    """Empty this thread's effective, permitted and inheritable sets (capset(2), version 3)."""
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    number = {"x86_64": 126, "aarch64": 91}[os.uname().machine]
    _check(_libc.syscall(number, ctypes.byref(header), data), "capset")


def drop_bounding_capabilities() -> None:
    """Empty the capability bounding set, so nothing can regain a capability later."""
    for cap in range(CAP_LAST_CAP_GUESS + 1):
        if _libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) < 0:
            break  # past the kernel's last capability


class _SockFilterProgram(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SeccompProgram:
    """A compiled BPF filter, ready to load with one system call (no libseccomp work per instance)."""

    def __init__(self, program: bytes) -> None:
        if not program or len(program) % 8:
            raise ValueError("a BPF program is a whole number of 8-byte instructions")
        self._code = ctypes.create_string_buffer(program, len(program))
        self._prog = _SockFilterProgram(len(program) // 8, ctypes.addressof(self._code))
        self.instructions = len(program) // 8

    def load(self) -> None:
        """Install the filter on this thread (and, through fork, on everything it starts)."""
        prctl(PR_SET_NO_NEW_PRIVS, 1)  # required without CAP_SYS_ADMIN; set already on every path
        number = {"x86_64": 317, "aarch64": 277}[os.uname().machine]
        _check(_libc.syscall(number, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(self._prog)), "seccomp")


SECCOMP_SET_MODE_FILTER = 1
