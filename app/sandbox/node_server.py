"""Running a learner's server.ts inside a confined instance: Node, on the JavaScript esbuild made of it.

Called only in the instance's server process (forkserver/child.py), once every sandbox layer is in
force, the filter included. The instance then makes one execve, of Node, and is Node from there on:
the same namespaces, uid, rlimits, cgroup and filter. Node's filter (syscall_filter.build) allows
execve only when its path argument is the address of `NodeRuntime.path`, a buffer made once in the
fork server before the filter was built, so that the address is the same in every instance. Node's
own memory holds nothing at that address, so no later execve passes: neither a spawn of the
learner's (child_process, process.execve) nor one of Node's.

Node is told to stay inside a Python instance's share (docs/typescript.md): no executable memory at
run time (--jitless, which also lets V8 live inside an address-space limit), a heap of half the
instance's memory, one V8 worker thread and one libuv thread, no io_uring, no native addons.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from typing import NoReturn

from app.sandbox import own_server
from app.sandbox.limits import MIB, Limits
from app.workspace import MAX_PROGRAM_BYTES, TS_FILE_NAME

# What V8 reserves and never touches, beyond the memory an instance may use: with less address space
# than this Node cannot start (measured on Node 24: 640 MiB in all, with a 128 MiB heap and little else):
# with it, what Node may use comes to about the memory limit, as for a Python server.
NODE_RESERVED_BYTES = 640 * MIB
# PID 1 of its namespace ignores a signal it has no handler for: Node gets one for SIGTERM, as the
# Python servers do, before the learner's module runs.
ON_SIGTERM = 'data:text/javascript,process.on("SIGTERM",()=>process.exit(143))'
# The exit status when Node could not be started at all (as a shell says of a command it cannot run).
CANNOT_EXECUTE = 126
MODULE_NAME = "server.mjs"


def address_space_bytes(limits: Limits) -> int:
    """RLIMIT_AS for a Node instance: its memory and what V8 reserves beyond it."""
    return limits.memory_bytes + NODE_RESERVED_BYTES


def node_arguments(limits: Limits) -> list[str]:
    heap_mib = max(16, limits.memory_bytes // MIB // 2)
    return [
        "--jitless",
        f"--max-old-space-size={heap_mib}",
        "--v8-pool-size=1",
        "--no-addons",
        "--enable-source-maps",
        f"--import={ON_SIGTERM}",
    ]


def environment(home: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "UV_USE_IO_URING": "0",  # the filter refuses io_uring anyway; libuv then never tries
        "UV_THREADPOOL_SIZE": "1",
    }


class NodeRuntime:
    """Node and the packages a server.ts may import; made in the fork server at start-up."""

    def __init__(self, node: str, modules: str) -> None:
        self.node = node
        self.modules = modules
        # Its address goes into the filter (below): it must outlive every fork, and never move.
        self.path = ctypes.create_string_buffer(os.fsencode(node))
        libc = ctypes.CDLL(None, use_errno=True)  # loaded here: an instance cannot open libraries
        self._execve = libc.execve
        self._execve.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_char_p),
        ]
        self._execve.restype = ctypes.c_int

    @property
    def address(self) -> int:
        return ctypes.addressof(self.path)

    def run_file(self, fd: int, limits: Limits) -> NoReturn:
        """Read the module from `fd`, write it to the instance's tmpfs beside a link to the packages,
        and become Node running it. Exits when the file breaks the rules, or Node cannot start."""
        text = own_server.read_file(fd, TS_FILE_NAME, MAX_PROGRAM_BYTES["node"])
        workdir = tempfile.mkdtemp(prefix="server-")  # TMPDIR is the instance's own tmpfs
        with open(os.path.join(workdir, MODULE_NAME), "w", encoding="utf-8") as out:
            out.write(text)
        # Node looks for imported packages in node_modules beside the module, then in its parents.
        os.symlink(self.modules, os.path.join(workdir, "node_modules"))
        os.chdir(workdir)
        args = [self.node, *node_arguments(limits), MODULE_NAME]
        env = [f"{key}={value}" for key, value in environment(workdir).items()]
        argv = (ctypes.c_char_p * (len(args) + 1))(*(os.fsencode(a) for a in args), None)
        envp = (ctypes.c_char_p * (len(env) + 1))(*(e.encode() for e in env), None)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self._execve(self.address, argv, envp)  # returns only when it failed
        error = ctypes.get_errno()
        print(f"{TS_FILE_NAME} cannot be run: Node could not start ({os.strerror(error)}).", file=sys.stderr,
              flush=True)  # fmt: skip
        os._exit(CANNOT_EXECUTE)
