"""Turn the allow-list in app/sandbox/syscalls.py into a seccomp filter (libseccomp, via pyseccomp).

Default action EPERM. Only the native ABI: libseccomp adds no other architecture, a call from
another one (i386 through int 0x80) kills the process, and so does an x32 call (x86_64 numbers
with bit 0x40000000). Built once in the fork server; every instance loads its own copy after fork.
"""

from __future__ import annotations

import errno
from typing import Any

from app.sandbox import syscalls
from app.sandbox.kernel import SeccompProgram

X32_SYSCALL_BIT = 0x40000000


def compile_program(node_exec: int | None = None) -> tuple[SeccompProgram, list[str]]:
    """The filter as a BPF program, and the rules that could not be built (see build())."""
    import tempfile

    filt, problems = build(node_exec)
    with tempfile.TemporaryFile() as out:
        filt.export_bpf(out)
        out.seek(0)
        return SeccompProgram(out.read()), problems


def build(node_exec: int | None = None) -> tuple[Any, list[str]]:
    """The filter (a pyseccomp.SyscallFilter), and the rules that could not be built.

    `node_exec`: Node's filter, which also allows what Node needs, and execve with its path at this
    address only (app/sandbox/node_server.py). An empty list means every rule is in force; anything
    else must be reported, never ignored.
    """
    import pyseccomp as sc

    problems: list[str] = []
    filt = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
    filt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    try:
        # A binary tree of syscall numbers instead of a linear chain: every system call of every
        # instance walks this program, and 125 allowed calls made the chain cost start-up time.
        filt.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    except (OSError, ValueError):
        pass  # an older libseccomp: the same rules, only slower to walk

    def add(action: int, name: str, *args: Any) -> None:
        try:
            filt.add_rule(action, name, *args)
        except (OSError, ValueError) as exc:
            if name not in syscalls.OPTIONAL:
                problems.append(f"{name}: {exc}")

    for name in syscalls.ALLOWED:
        add(sc.ALLOW, name)
    for rule in syscalls.ARGUMENT_RULES:
        for value in rule.values:
            add(sc.ALLOW, rule.syscall, sc.Arg(rule.arg, sc.MASKED_EQ, rule.mask, value))
    if node_exec is not None:
        for name in syscalls.NODE_ALLOWED:
            add(sc.ALLOW, name)
        for rule in syscalls.NODE_ARGUMENT_RULES:
            for value in rule.values:
                add(sc.ALLOW, rule.syscall, sc.Arg(rule.arg, sc.MASKED_EQ, rule.mask, value))
        add(sc.ALLOW, syscalls.NODE_EXEC, sc.Arg(0, sc.EQ, node_exec))
    for name in syscalls.ENOSYS_SYSCALLS:
        add(sc.ERRNO(syscalls.ENOSYS), name)
    if sc.system_arch() == sc.Arch.X86_64:
        problems.extend(_kill_x32(filt))
    return filt, problems


def _kill_x32(filt: Any) -> list[str]:
    """libseccomp sends x32 numbers to the bad-architecture action (kill) when the filter holds no
    x32 architecture; check that this build does, rather than trust it."""
    import struct
    import tempfile

    with tempfile.TemporaryFile() as out:
        filt.export_bpf(out)
        out.seek(0)
        program = out.read()
    jump_if_at_least = 0x35  # BPF_JMP | BPF_JGE | BPF_K
    for offset in range(0, len(program) - 7, 8):
        code, _jt, _jf, k = struct.unpack("=HBBI", program[offset : offset + 8])
        if code == jump_if_at_least and k == X32_SYSCALL_BIT:
            return []
    return ["x32: the filter does not refuse x32 system calls"]
