"""The system calls a sandboxed server may make: the seccomp allow-list, as a table to read.

Derived by tracing (strace, from the filter's load onwards) every demo server through the relay
tests, the fork server's warm-up, the sandbox tests and ordinary learner code (threads, asyncio,
json, sqlite3 in memory, mmap, random, datetime, pydantic: tests/fixtures/learner_code.py), then
reviewed by hand: a few calls the trace did not show but everyday Python makes (signal.alarm,
os.waitpid's relatives, extended-attribute reads in shutil.copy2, other-glibc spellings) are added
and marked "not traced". Everything else fails with EPERM; app/sandbox/syscall_filter.py turns the
table into a filter. To trace again: run the fork server under `strace -D -ff --decode-pids=pidns`
and count, per process, the calls after its `seccomp(SECCOMP_SET_MODE_FILTER, ...) = 0`.

Names are libseccomp's (x86_64 spelling). A name libseccomp does not know makes the seccomp layer
report it as missing, unless it is listed in OPTIONAL (calls newer than some libseccomp releases).
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

# --- allowed without conditions -----------------------------------------------------------------

ALLOWED: dict[str, str] = {
    # processes and threads (clone is allowed with conditions, below)
    "exit": "a thread ends",
    "exit_group": "the process ends",
    "wait4": "os.waitpid; a server waits for the processes it starts (subprocess)",
    "getpid": "os.getpid, and the SDK's anyio checks",
    "getppid": "os.getppid",
    "gettid": "threading.get_native_id, glibc",
    "getuid": "os.getuid",
    "geteuid": "os.geteuid",
    "getgid": "os.getgid",
    "getegid": "os.getegid",
    "getgroups": "os.getgroups (not traced)",
    "getresuid": "os.getresuid (not traced)",
    "getresgid": "os.getresgid (not traced)",
    "getpgrp": "os.getpgrp (not traced)",
    "getpgid": "os.getpgid (not traced)",
    "getsid": "os.getsid (not traced)",
    "set_tid_address": "glibc, each new thread",
    "set_robust_list": "glibc, each new thread",
    "rseq": "glibc registers restartable sequences for each thread",
    "futex": "every lock and condition variable",
    "sched_yield": "glibc spin locks",
    "sched_getaffinity": "os.cpu_count, concurrent.futures worker counts",
    "getpriority": "os.getpriority (not traced)",
    "getrusage": "resource.getrusage",
    "times": "os.times (not traced)",
    "prlimit64": "resource.getrlimit; lowering a limit is harmless, raising one needs a capability",
    "restart_syscall": "the kernel restarts a call a signal interrupted",
    # signals (only processes inside the instance's own PID namespace can be reached)
    "kill": "os.kill; a server signals the processes it starts",
    "tgkill": "signals to a thread (faulthandler, pthread_kill)",
    "rt_sigaction": "signal.signal; the server's SIGTERM handler",
    "rt_sigprocmask": "glibc blocks signals around thread creation",
    "rt_sigreturn": "return from a signal handler",
    "sigaltstack": "faulthandler and threads' alternate signal stacks",
    "pause": "signal.pause (not traced)",
    "alarm": "signal.alarm (not traced)",
    "setitimer": "signal.setitimer (not traced)",
    "getitimer": "signal.getitimer (not traced)",
    # time
    "clock_gettime": "time.time and time.monotonic when the vDSO is not used",
    "clock_getres": "time.get_clock_info",
    "clock_nanosleep": "time.sleep",
    # memory
    "brk": "malloc",
    "mmap": "malloc, mmap module, loading extension modules",
    "munmap": "free, mmap.close",
    "mprotect": "thread stacks' guard pages, loading extension modules",
    "mremap": "realloc of large blocks, mmap.resize",
    "madvise": "glibc returns freed thread stacks",
    "msync": "mmap.flush",
    # files (the read-only root and the private tmpfs decide what a path can reach)
    "read": "",
    "write": "",
    "readv": "",
    "writev": "",
    "pread64": "sqlite3",
    "pwrite64": "sqlite3",
    "lseek": "file.seek, tell",
    "openat": "open()",
    "close": "",
    "close_range": "os.closerange",
    "dup": "os.dup",
    "dup2": "os.dup2",
    "dup3": "os.dup2(inheritable=False)",
    "fstat": "os.fstat",
    "newfstatat": "os.stat, the import system",
    "statx": "os.stat on newer glibc (not traced)",
    "statfs": "os.statvfs",
    "fstatfs": "os.fstatvfs",
    "access": "os.access",
    "faccessat": "os.access",
    "faccessat2": "os.access on newer glibc",
    "readlink": "os.readlink, os.path.realpath",
    "getdents64": "os.listdir, os.scandir",
    "getcwd": "os.getcwd",
    "chdir": "os.chdir",
    "mkdir": "os.mkdir, tempfile.mkdtemp",
    "rmdir": "os.rmdir",
    "unlink": "os.unlink, tempfile's clean-up",
    "unlinkat": "shutil.rmtree, TemporaryDirectory clean-up",
    "rename": "os.rename",
    "symlink": "os.symlink",
    "chmod": "os.chmod",
    "fchmod": "os.fchmod",
    "umask": "os.umask, tempfile",
    "truncate": "os.truncate",
    "ftruncate": "file.truncate, sqlite3",
    "fsync": "os.fsync, sqlite3",
    "fdatasync": "sqlite3 commits",
    "flock": "fcntl.flock",
    "utimensat": "os.utime, shutil.copy2",
    "listxattr": "shutil.copy2 looks for extended attributes to copy",
    "llistxattr": "shutil.copy2 on a symbolic link (not traced)",
    "flistxattr": "os.listxattr(fd) (not traced)",
    "getxattr": "shutil.copy2, when a file has extended attributes (not traced)",
    "lgetxattr": "shutil.copy2 on a symbolic link (not traced)",
    "fgetxattr": "os.getxattr(fd) (not traced)",
    "sendfile": "shutil.copyfile",
    "copy_file_range": "shutil.copyfile on newer Python (not traced)",
    # waiting for input: the SDK's event loop and the relay's pipes
    "pipe2": "os.pipe",
    "epoll_create1": "asyncio's selector",
    "epoll_ctl": "asyncio's selector",
    "epoll_wait": "asyncio's selector",
    "poll": "select.poll",
    "ppoll": "select.poll on newer glibc (not traced)",
    "pselect6": "select.select",
    # sockets: only AF_UNIX can be created (socket and socketpair, below)
    "connect": "an AF_UNIX socket",
    "bind": "an AF_UNIX socket",
    "listen": "an AF_UNIX socket",
    "accept": "an AF_UNIX socket (not traced)",
    "accept4": "an AF_UNIX socket",
    "sendto": "asyncio's self-pipe socketpair",
    "recvfrom": "asyncio's self-pipe socketpair",
    "sendmsg": "an AF_UNIX socket",
    "recvmsg": "an AF_UNIX socket",
    "shutdown": "an AF_UNIX socket",
    "getsockname": "asyncio checks the sockets it is given",
    "getpeername": "asyncio checks the sockets it is given",
    "setsockopt": "an AF_UNIX socket",
    "getsockopt": "asyncio checks the sockets it is given",
    # the rest
    "getrandom": "os.urandom, random's seed, secrets, uuid4, hash randomisation",
    "uname": "platform, os.uname",
}

# --- allowed only with some argument values ----------------------------------------------------

AF_UNIX = socket.AF_UNIX
LOW_32_BITS = 0xFFFFFFFF  # an `int` argument: the kernel reads only these bits
# Every namespace flag of clone(); CLONE_NEWTIME (0x80) lies in clone()'s exit-signal byte there.
CLONE_NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)


@dataclass(frozen=True)
class ArgumentRule:
    """Allow `syscall` when argument `arg` masked with `mask` equals one of `values`."""

    syscall: str
    arg: int
    mask: int
    values: tuple[int, ...]
    why: str


ARGUMENT_RULES: tuple[ArgumentRule, ...] = (
    ArgumentRule("socket", 0, LOW_32_BITS, (AF_UNIX,), "asyncio's socketpair; no network, netlink, vsock"),
    ArgumentRule("socketpair", 0, LOW_32_BITS, (AF_UNIX,), "asyncio's self-pipe"),
    ArgumentRule("clone", 0, CLONE_NAMESPACE_FLAGS, (0,), "threads and os.fork, never a new namespace"),
    # personality(0xffffffff) asks for the current persona; PER_LINUX (0) is the default one.
    ArgumentRule("personality", 0, LOW_32_BITS, (0, 0xFFFFFFFF), "query, or the default persona"),
    ArgumentRule(
        "ioctl",
        1,
        LOW_32_BITS,
        (
            0x5401,  # TCGETS: isatty(), as io.open does on every file
            0x5413,  # TIOCGWINSZ: shutil.get_terminal_size
            0x5421,  # FIONBIO: socket.setblocking
            0x541B,  # FIONREAD: bytes waiting on a pipe or socket
            0x5450,  # FIONCLEX: os.set_inheritable(fd, True)
            0x5451,  # FIOCLEX: os.set_inheritable(fd, False)
        ),
        "the requests Python's own modules make on pipes, sockets and files",
    ),
    ArgumentRule(
        "fcntl",
        1,
        LOW_32_BITS,
        (
            0,
            1030,  # F_DUPFD, F_DUPFD_CLOEXEC
            1,
            2,  # F_GETFD, F_SETFD: close-on-exec
            3,
            4,  # F_GETFL, F_SETFL: non-blocking mode
            5,
            6,
            7,  # F_GETLK, F_SETLK, F_SETLKW: record locks (sqlite3 on a file)
            36,
            37,
            38,  # F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW
            1032,  # F_GETPIPE_SZ
        ),
        "descriptor flags and file locks; no F_SETOWN, leases or notifications",
    ),
    ArgumentRule(
        "prctl",
        0,
        LOW_32_BITS,
        (
            3,  # PR_GET_DUMPABLE
            15,
            16,  # PR_SET_NAME, PR_GET_NAME: thread names
            21,  # PR_GET_SECCOMP
            39,  # PR_GET_NO_NEW_PRIVS
            0x53564D41,  # PR_SET_VMA: glibc names its anonymous mappings
        ),
        "thread names and read-only queries",
    ),
)

# --- Node (a learner's server.ts) ---------------------------------------------------------------
# Node's instances load a filter of their own: everything above, and what Node needs beyond it.
# Traced as above, with Node 24 serving the reference solutions of the Build track.

NODE_ALLOWED: dict[str, str] = {
    "epoll_pwait": "libuv's event loop waits with it",
    "eventfd2": "libuv wakes its loop from its other threads",
    "sched_getparam": "pthread_getschedparam, which V8's locks ask of each new thread",
    "sched_getscheduler": "pthread_getschedparam, which V8's locks ask of each new thread",
}

NODE_ARGUMENT_RULES: tuple[ArgumentRule, ...] = (
    ArgumentRule(
        "arch_prctl", 0, LOW_32_BITS, (0x1002,), "ARCH_SET_FS: the loader sets up Node's thread-local storage"
    ),
)
# And execve, once: only with the path at the address the fork server gives the filter (node_server.py).
NODE_EXEC = "execve"

# clone3 passes its flags in memory, where a filter cannot look: refuse it as "not implemented",
# and glibc falls back to clone, whose flags the rule above checks.
ENOSYS_SYSCALLS: tuple[str, ...] = ("clone3",)
ENOSYS = errno.ENOSYS

# Names a libseccomp release may not know yet; without them the filter still holds (a call the
# filter cannot name is refused by the default action).
OPTIONAL: frozenset[str] = frozenset({"rseq", "close_range", "faccessat2", "clone3"})


def allowed_names(node: bool = False) -> list[str]:
    """Every system call the filter lets through, with or without conditions (`node`: Node's filter)."""
    names = {*ALLOWED, *(rule.syscall for rule in ARGUMENT_RULES)}
    if node:
        names |= {*NODE_ALLOWED, *(rule.syscall for rule in NODE_ARGUMENT_RULES), NODE_EXEC}
    return sorted(names)
