"""deploy/seccomp.json, the container's profile: it lets the app and its sandbox work, and allows
nothing broader than Docker's default profile plus the sandbox's own calls.

No container engine runs on these machines, so the profile is checked as data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyseccomp as sc

from app.sandbox import syscalls

PROFILE = Path(__file__).resolve().parents[2] / "deploy" / "seccomp.json"

# Docker's default profile (moby, profiles/seccomp/default.json), the calls it allows on x86_64
# without conditions, as data for this comparison.
DOCKER_DEFAULT = set(
    """
accept accept4 access adjtimex alarm bind brk capget capset chdir chmod chown clock_adjtime
clock_getres clock_gettime clock_nanosleep close close_range connect copy_file_range creat dup dup2
dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait
epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat faccessat2 fadvise64
fallocate fanotify_mark fchdir fchmod fchmodat fchown fchownat fcntl fdatasync fgetxattr flistxattr
flock fork fremovexattr fsetxattr fstat fstatfs fsync ftruncate futex futex_waitv futimesat getcpu
getcwd getdents getdents64 getegid geteuid getgid getgroups getitimer getpeername getpgid getpgrp
getpid getppid getpriority getrandom getresgid getresuid getrlimit get_robust_list getrusage getsid
getsockname getsockopt get_thread_area gettid gettimeofday getuid getxattr inotify_add_watch
inotify_init inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy io_getevents io_pgetevents
ioprio_get ioprio_set io_setup io_submit io_uring_enter io_uring_register io_uring_setup kill
landlock_add_rule landlock_create_ruleset landlock_restrict_self lchown lgetxattr link linkat listen
listxattr llistxattr lremovexattr lseek lsetxattr lstat madvise membarrier memfd_create memfd_secret
mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mprotect mq_getsetattr mq_notify
mq_open mq_timedreceive mq_timedsend mq_unlink mremap msgctl msgget msgrcv msgsnd msync munlock
munlockall munmap name_to_handle_at nanosleep newfstatat open openat openat2 pause pidfd_open
pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll prctl pread64 preadv
preadv2 prlimit64 process_mrelease pselect6 pwrite64 pwritev pwritev2 read readahead readlink
readlinkat readv recvfrom recvmmsg recvmsg remap_file_pages removexattr rename renameat renameat2
restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn
rt_sigsuspend rt_sigtimedwait rt_tgsigqueueinfo sched_getaffinity sched_getattr sched_getparam
sched_get_priority_max sched_get_priority_min sched_getscheduler sched_rr_get_interval
sched_setaffinity sched_setattr sched_setparam sched_setscheduler sched_yield seccomp select semctl
semget semop semtimedop sendfile sendmmsg sendmsg sendto setfsgid setfsuid setgid setgroups
setitimer setpgid setpriority setregid setresgid setresuid setreuid setrlimit set_robust_list setsid
setsockopt set_thread_area set_tid_address setuid setxattr shmat shmctl shmdt shmget shutdown
sigaltstack signalfd signalfd4 socketpair splice stat statfs statx symlink symlinkat sync
sync_file_range syncfs sysinfo tee tgkill time timer_create timer_delete timer_getoverrun
timer_gettime timer_settime timerfd_create timerfd_gettime timerfd_settime times tkill truncate umask
uname unlink unlinkat utime utimensat utimes vfork vmsplice wait4 waitid write writev
arch_prctl modify_ldt
""".split()
)
# Allowed there only with conditions (arguments, or a capability the container is not given).
DOCKER_CONDITIONAL = {"socket", "personality", "clone", "clone3"}
# What the fork server and the app do that Docker's default refuses (most of it needs CAP_SYS_ADMIN,
# which the container is given; pivot_root is not in Docker's profile at all).
SANDBOX_CALLS = {"unshare", "mount", "umount2", "pivot_root", "seccomp", "prctl", "setuid", "setgid",
                 "setresuid", "setresgid", "setgroups", "capset", "clone", "execve"}  # fmt: skip
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16


def load() -> dict:
    return json.loads(PROFILE.read_text())


def allowed(profile: dict) -> dict[str, list[dict]]:
    """Each allowed name, with the argument conditions of each rule that allows it ([] = always)."""
    found: dict[str, list[dict]] = {}
    for group in profile["syscalls"]:
        if group["action"] == "SCMP_ACT_ALLOW":
            for name in group["names"]:
                found.setdefault(name, []).append({"args": group.get("args", [])})
    return found


def test_the_profile_denies_by_default_and_names_only_real_calls() -> None:
    profile = load()
    assert profile["defaultAction"] in ("SCMP_ACT_ERRNO", "SCMP_ACT_KILL_PROCESS")
    assert set(profile["architectures"]) <= {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"}  # no x32, no i386
    for name in allowed(profile):
        assert sc.resolve_syscall(sc.Arch.X86_64, name) >= 0, name


def test_the_sandbox_and_every_instance_can_make_their_calls() -> None:
    found = allowed(load())
    unconditional = {name for name, rules in found.items() if any(not r["args"] for r in rules)}
    assert SANDBOX_CALLS <= unconditional
    # An instance's calls pass the container's filter first, then its own.
    assert set(syscalls.allowed_names()) - {"socket", "personality"} <= unconditional
    families = {rule["args"][0]["valueTwo"] for rule in found["socket"]}
    assert {AF_UNIX, AF_INET, AF_INET6} <= families  # the instances, and uvicorn on TCP


def test_nothing_broader_than_dockers_default_plus_the_sandbox() -> None:
    found = allowed(load())
    assert set(found) - DOCKER_DEFAULT - DOCKER_CONDITIONAL - SANDBOX_CALLS == set()
    # Calls Docker allows only with conditions: ours are as narrow, compared as the kernel reads them.
    for rule in found["socket"]:
        (arg,) = rule["args"]
        assert arg["op"] == "SCMP_CMP_MASKED_EQ" and arg["value"] == 0xFFFFFFFF
        assert arg["valueTwo"] in {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}  # never AF_VSOCK (40)
    for rule in found["personality"]:
        (arg,) = rule["args"]
        assert arg["op"] == "SCMP_CMP_MASKED_EQ" and arg["valueTwo"] in {0, 0xFFFFFFFF}
    assert "clone3" not in found  # ENOSYS instead, as Docker answers without CAP_SYS_ADMIN
    for name in ("bpf", "perf_event_open", "io_uring_setup", "fsopen", "open_tree", "kexec_load", "add_key"):
        assert name not in found
