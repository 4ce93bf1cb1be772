"""Run a command as on a host that refuses new PID namespaces (a container without CAP_SYS_ADMIN).

    python -m tests.support.no_pid_namespace [--no-seccomp] COMMAND [ARGS...]

A seccomp filter that allows everything else makes clone() and unshare() with CLONE_NEWPID fail
with EPERM, and clone3(), whose flags sit in memory where a filter cannot read them, with ENOSYS, so
that glibc falls back to clone(). With --no-seccomp it also refuses every later seccomp filter (the
seccomp() call, and prctl(PR_SET_SECCOMP)), as a host without seccomp would. The filter is inherited
by everything the command starts: the fork server's probe then reports those layers missing, and
every instance is forked without them.
"""

from __future__ import annotations

import errno
import os
import sys

CLONE_NEWPID = 0x20000000
PR_SET_SECCOMP = 22


def main() -> None:
    import pyseccomp as sc

    args = sys.argv[1:]
    no_seccomp = args[:1] == ["--no-seccomp"]
    if no_seccomp:
        args = args[1:]
    filt = sc.SyscallFilter(sc.ALLOW)
    for name in ("clone", "unshare"):
        filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.MASKED_EQ, CLONE_NEWPID, CLONE_NEWPID))
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    if no_seccomp:
        filt.add_rule(sc.ERRNO(errno.EPERM), "seccomp")
        filt.add_rule(sc.ERRNO(errno.EPERM), "prctl", sc.Arg(0, sc.EQ, PR_SET_SECCOMP))
    filt.load()
    os.execvp(args[0], args)


if __name__ == "__main__":
    main()
