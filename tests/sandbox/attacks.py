"""What hostile code inside an instance may try, as one table: name, how (Python run in a forked
child, see tests/fixtures/attack_kit.py), and what counts as denied.

`denied` is an errno name (the call must fail with exactly that), "SIGSYS" (the process must be
killed), or ANY_ERROR (the call must fail, whichever layer stops it). `layer` names the layer that
stops it; rows of the seccomp layer are also run against the filter alone, as root, where only the
filter stands between the attempt and success (tests/sandbox/test_syscall_filter.py).

System-call numbers are x86_64's. To add an attack, add a row.
"""

from __future__ import annotations

from dataclasses import dataclass

ANY_ERROR = "any error"

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET
AF_UNIX = 1
AF_MAX = 46  # one past the highest address family Linux knows today


@dataclass(frozen=True)
class Attack:
    name: str
    code: str
    denied: str
    layer: str = "seccomp"


def _socket_rows() -> list[Attack]:
    rows = [
        Attack(f"socket(family {family})", f"result = syscall(41, {family}, 2, 0)", "EPERM")
        for family in range(AF_MAX)
        if family != AF_UNIX
    ]
    for family, name in ((2, "AF_INET"), (16, "AF_NETLINK"), (40, "AF_VSOCK"), (10, "AF_INET6")):
        high = (1 << 32) | family  # the kernel reads an int: these bits must not hide the family
        rows.append(Attack(f"socket((1<<32)|{name})", f"result = syscall(41, {high}, 2, 0)", "EPERM"))
        rows.append(
            Attack(
                f"socketpair((1<<32)|{name})",
                f"fds = (ctypes.c_int * 2)(); result = syscall(53, {high}, 1, 0, fds)",
                "EPERM",
            )
        )
    rows.append(
        Attack(
            "socketpair(AF_INET)", "fds = (ctypes.c_int * 2)(); result = syscall(53, 2, 1, 0, fds)", "EPERM"
        )
    )
    return rows


# A child made by a raw clone returns 0 here and must leave at once.
_CLONE = f"""
pid = syscall(56, {{flags}} | {SIGCHLD}, 0, 0, 0, 0)
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
result = pid
"""
_CLONE3 = f"""
args = struct.pack("=11Q", {NAMESPACES}, 0, 0, 0, {SIGCHLD}, 0, 0, 0, 0, 0, 0)
buffer = ctypes.create_string_buffer(args, len(args))
pid = syscall(435, buffer, len(args))
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
result = pid
"""
_EXECVEAT_MEMFD = """
try:
    fd = syscall(319, b"payload", 0)  # memfd_create
    with open("/bin/true", "rb") as source:
        os.write(fd, source.read())
except OSError:
    fd = os.open("/bin/true", os.O_PATH)  # no memfd: the same exec from an O_PATH descriptor
argv = (ctypes.c_char_p * 2)(b"true", None)
envp = (ctypes.c_char_p * 1)(None)
result = syscall(322, fd, b"", argv, envp, 0x1000)  # AT_EMPTY_PATH
"""
_EXECVE = """
argv = (ctypes.c_char_p * 2)(b"/bin/true", None)
envp = (ctypes.c_char_p * 1)(None)
result = syscall(59, b"/bin/true", argv, envp)
"""
_MKNOD = """
import tempfile
path = os.path.join(tempfile.gettempdir(), f"fifo-{os.getpid()}").encode()
result = syscall(133, path, 0o010600, 0)  # S_IFIFO
os.unlink(path)
"""
# On a pipe of its own: never a terminal, whatever the test runner's stdin is.
_IOCTL = """
read, write = os.pipe()
result = syscall(16, read, {request}, ctypes.c_char_p(b"x"))
"""
_IO_URING = """
params = ctypes.create_string_buffer(120)
result = syscall(425, 1, params)
"""

ATTACKS: list[Attack] = [
    *_socket_rows(),
    # new namespaces, by every door
    Attack("unshare(CLONE_NEWUSER)", f"result = syscall(272, {CLONE_NEWUSER})", "EPERM"),
    Attack("unshare(CLONE_NEWNS|CLONE_NEWNET)", f"result = syscall(272, {CLONE_NEWNS | CLONE_NEWNET})", "EPERM"),
    Attack("clone(CLONE_NEWUSER)", _CLONE.format(flags=CLONE_NEWUSER), "EPERM"),
    Attack("clone(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWNET)", _CLONE.format(flags=NAMESPACES), "EPERM"),
    Attack("clone((1<<32)|CLONE_NEWUSER)", _CLONE.format(flags=(1 << 32) | CLONE_NEWUSER), "EPERM"),
    Attack("clone3(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWNET)", _CLONE3, "ENOSYS"),
    Attack("setns", "result = syscall(308, -1, 0)", "EPERM"),
    # mounts, old and new API
    Attack("mount(tmpfs)", 'result = syscall(165, b"none", b"/tmp", b"tmpfs", 0, 0)', "EPERM"),
    Attack("fsopen(tmpfs)", 'result = syscall(430, b"tmpfs", 0)', "EPERM"),
    Attack("fsmount", "result = syscall(432, -1, 0, 0)", "EPERM"),
    Attack("open_tree(/, OPEN_TREE_CLONE)", 'result = syscall(428, -100, b"/", 1)', "EPERM"),
    Attack("move_mount", 'result = syscall(429, -1, b"", -1, b"", 0)', "EPERM"),
    Attack("umount2(/)", 'result = syscall(166, b"/", 2)', "EPERM"),
    Attack("pivot_root", 'result = syscall(155, b".", b".")', "EPERM"),
    Attack("chroot(/)", 'result = syscall(161, b"/")', "EPERM"),
    # kernel attack surface
    Attack("io_uring_setup", _IO_URING, "EPERM"),
    Attack("userfaultfd(UFFD_USER_MODE_ONLY)", "result = syscall(323, 1)", "EPERM"),
    Attack("bpf(BPF_MAP_CREATE)", "result = syscall(321, 0, 0, 0)", "EPERM"),
    Attack("perf_event_open", "result = syscall(298, 0, 0, -1, -1, 0)", "EPERM"),
    Attack("keyctl(KEYCTL_GET_KEYRING_ID)", "result = syscall(250, 0, -3, 1)", "EPERM"),
    Attack("add_key", 'result = syscall(248, b"user", b"k", b"v", 1, -2)', "EPERM"),
    Attack("ptrace(PTRACE_TRACEME)", "result = syscall(101, 0, 0, 0, 0)", "EPERM"),
    Attack("process_vm_readv(self)", "result = syscall(310, os.getpid(), 0, 0, 0, 0, 0)", "EPERM"),
    Attack("pidfd_open(self)", "result = syscall(434, os.getpid(), 0)", "EPERM"),
    Attack("pidfd_getfd", "result = syscall(438, -1, 0, 0)", "EPERM"),
    Attack("open_by_handle_at", "result = syscall(304, -1, 0, 0)", "EPERM"),
    Attack("init_module", 'result = syscall(175, 0, 0, b"")', "EPERM"),
    Attack("finit_module", 'result = syscall(313, -1, b"", 0)', "EPERM"),
    Attack("kexec_load (bad flags)", "result = syscall(246, 0, 0, 0, 0xDEAD0000)", "EPERM"),
    Attack("reboot (bad magic)", "result = syscall(169, 0, 0, 0, 0)", "EPERM"),
    Attack("personality(READ_IMPLIES_EXEC)", "result = syscall(135, 0x0400000)", "EPERM"),
    Attack("personality(ADDR_NO_RANDOMIZE)", "result = syscall(135, 0x0040000)", "EPERM"),
    Attack("personality((1<<32)|READ_IMPLIES_EXEC)", f"result = syscall(135, {(1 << 32) | 0x0400000})", "EPERM"),
    Attack("mknod(fifo)", _MKNOD, "EPERM"),
    Attack("sethostname", 'result = syscall(170, b"x", 1)', "EPERM"),
    Attack("acct(NULL)", "result = syscall(163, 0)", "EPERM"),
    Attack("setuid(0)", "result = syscall(105, 0)", "EPERM"),
    Attack("setresgid(0)", "result = syscall(119, 0, 0, 0)", "EPERM"),
    Attack("seccomp(SECCOMP_GET_NOTIF_SIZES)", "result = syscall(317, 3, 0, ctypes.create_string_buffer(8))", "EPERM"),
    Attack("prctl(PR_SET_DUMPABLE)", "result = syscall(157, 4, 1)", "EPERM"),
    Attack("prctl(PR_SET_MM_MAP_SIZE)", "result = syscall(157, 35, 15, 0, 0, 0)", "EPERM"),
    Attack("ioctl(TIOCSTI)", _IOCTL.format(request=0x5412), "EPERM"),
    Attack("ioctl((1<<32)|TIOCSTI)", _IOCTL.format(request=(1 << 32) | 0x5412), "EPERM"),
    Attack("fcntl(F_SETOWN)", "result = syscall(72, 0, 8, os.getpid())", "EPERM"),
    Attack("fcntl(F_SETLEASE)", "result = syscall(72, 0, 1024, 0)", "EPERM"),
    Attack("x32 getpid", f"result = syscall({0x40000000 | 39})", "SIGSYS"),
    Attack("execve(/bin/true)", _EXECVE, "EPERM"),
    Attack("execveat(memfd)", _EXECVEAT_MEMFD, "EPERM"),
    # the file system: a read-only root holding only what a server needs
    Attack("write into /etc", 'result = open("/etc/planted", "w").write("x")', ANY_ERROR, "filesystem"),
    Attack("write into /usr", 'result = open("/usr/planted", "w").write("x")', ANY_ERROR, "filesystem"),
    Attack("write beside the app's code", 'import app, os.path\nresult = open(os.path.join(os.path.dirname(app.__file__), "planted.py"), "w").write("x")', ANY_ERROR, "filesystem"),
    Attack("write into /", 'result = open("/planted", "w").write("x")', ANY_ERROR, "filesystem"),
    Attack("read /etc/shadow", 'result = open("/etc/shadow").read(10)', ANY_ERROR, "filesystem"),
    Attack("read /proc/1/environ", 'result = open("/proc/1/environ", "rb").read(10)', ANY_ERROR, "filesystem"),
    Attack("list /proc", 'result = os.listdir("/proc")', ANY_ERROR, "filesystem"),
    Attack("open a block device", 'result = os.open("/dev/vda", os.O_RDONLY)', ANY_ERROR, "filesystem"),
]  # fmt: skip


def is_denied(attack: Attack, outcome: dict) -> bool:
    if attack.denied == "SIGSYS":
        return outcome.get("signal") == "SIGSYS"
    if attack.denied == ANY_ERROR:
        return "errno" in outcome
    return outcome.get("errno") == attack.denied
