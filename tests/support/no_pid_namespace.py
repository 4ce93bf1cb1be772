"""Run a command as on a host that refuses new PID namespaces (a container without CAP_SYS_ADMIN).

    python -m tests.support.no_pid_namespace COMMAND [ARGS...]

A seccomp filter that allows everything else makes clone() and unshare() with CLONE_NEWPID fail
with EPERM, and clone3(), whose flags sit in memory where a filter cannot read them, with ENOSYS, so
that glibc falls back to clone(). The filter is inherited by everything the command starts: the fork
server's probe then reports the `pid_namespace` layer missing, and every instance is forked without it.
"""

from __future__ import annotations

import errno
import os
import sys

CLONE_NEWPID = 0x20000000


def main() -> None:
    import pyseccomp as sc

    filt = sc.SyscallFilter(sc.ALLOW)
    for name in ("clone", "unshare"):
        filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.MASKED_EQ, CLONE_NEWPID, CLONE_NEWPID))
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    filt.load()
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
