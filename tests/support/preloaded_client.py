"""`python -I -S preloaded_client.py SOCKET (-m MODULE | PATH) [ARGS...]`: run a module or file in a
child of the preloaded Python (tests/support/preloaded.py) with this process's stdin, stdout and
stderr, and exit as the child did. Standard library only: it starts in milliseconds."""

import json
import os
import signal
import socket
import sys


def main() -> None:
    path, argv = sys.argv[1], sys.argv[2:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    # Only the child may hold the pipes now, so their ends reach the caller when it exits.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)

    def pass_on(signum: int, _frame: object) -> None:
        conn.send(str(signum).encode())

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, pass_on)
    reply = b""
    while chunk := conn.recv(4096):
        reply += chunk
    if not reply:
        os._exit(1)
    status = json.loads(reply)["status"]
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


main()
