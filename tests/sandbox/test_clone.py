"""kernel.fork_in_new_pid_namespace: a fork whose child is PID 1 of a new PID namespace.

Run in a process of its own, single-threaded as the fork server is (pytest's may not be)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

# A new PID namespace needs CAP_SYS_ADMIN; the second test becomes an unprivileged uid to lose it.
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="run as root, as the fork server is")

CHILD_REPORT = textwrap.dedent(
    """
    import json, os, random, signal, threading, asyncio
    from app.sandbox import kernel

    random.random()  # the parent's stream has begun
    read, write = os.pipe()
    pid = kernel.fork_in_new_pid_namespace()
    if pid == 0:
        os.close(read)
        got = []
        signal.signal(signal.SIGUSR1, lambda *_: got.append("raised"))
        signal.raise_signal(signal.SIGUSR1)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        worker = threading.Thread(target=lambda: got.append("thread"))
        worker.start()
        worker.join()

        async def main():
            return await asyncio.to_thread(lambda: "to_thread")

        got.append(asyncio.run(main()))
        grandchild = os.fork()
        if grandchild == 0:
            os._exit(7)
        _, status = os.waitpid(grandchild, 0)
        report = {"pid": os.getpid(), "random": random.random(), "got": got,
                  "grandchild": [grandchild, os.waitstatus_to_exitcode(status)]}
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    child = json.loads(os.read(read, 65536))
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"child": child, "random": random.random(), "pid": pid, "code": os.waitstatus_to_exitcode(status)}))
    """
)


def test_the_child_is_pid_1_of_its_own_namespace_and_a_whole_python_process() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD_REPORT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    child = result["child"]
    assert result["pid"] > 1 and result["code"] == 0  # the parent sees its host pid and reaps it
    assert child["pid"] == 1
    # Signals to itself, threads, asyncio's worker threads and fork all work in the child.
    assert child["got"] == ["raised", "raised", "thread", "to_thread"]
    assert child["grandchild"][1] == 7 and child["grandchild"][0] > 1
    # The interpreter's fork hooks ran: random is reseeded, so no two instances share a stream
    # with each other or with the fork server.
    assert child["random"] != result["random"]


def test_without_the_privilege_it_fails_with_an_error_and_the_parent_goes_on() -> None:
    """A new PID namespace needs CAP_SYS_ADMIN: without it, an OSError, and the interpreter is whole."""
    script = textwrap.dedent(
        """
        import os, threading
        from app.sandbox import kernel
        os.setresuid(65534, 65534, 65534)
        try:
            kernel.fork_in_new_pid_namespace()
        except OSError as exc:
            print("refused:", exc)
        worker = threading.Thread(target=lambda: print("still whole"))
        worker.start()
        worker.join()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["refused: [Errno 1] clone: Operation not permitted", "still whole"]
