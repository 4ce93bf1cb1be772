"""The fork server's protocol: the messages on its socket, and the check every request passes.

The app and the fork server talk over one SOCK_SEQPACKET socket, a JSON message per packet:

  app -> here  {"op": "spawn", "id": N, "server": NAME, "uid": UID}  + 3 pipe fds (stdin, stdout,
                 stderr); for my-server also "runtime": "python" | "node", and a 4th fd: a memfd
                 holding the learner's server.py, or the JavaScript made of their server.ts (never
                 read here: the instance reads it after the fork, see child.py)
               {"op": "signal", "pid": PID, "signal": 15 | 9}   to the group of a live instance of ours
  here -> app  {"op": "ready", "layers": {layer: "ok" | "why it is missing"}, "pid": PID}
               {"op": "spawned", "id": N, "pid": PID}   the instance's server, leader of its group
               {"op": "failed", "id": N, "error": TEXT}
               {"op": "exited", "pid": PID, "code": INT | null, "signal": INT | null}
                 + "memory": "own" | "shared" when the OOM killer ended it (its own limit, or the budget
                 of every instance together)

The web process drops root once the fork server is up (app/privileges.py), so a request may come
from a compromised, unprivileged process: every one is checked (`check_request`), exactly these
keys, a registered server, a uid inside the reserved range, three pipes (and for my-server a runtime
this fork server has, and a regular file within its runtime's limit, by fstat); anything else is refused with a "failed" reply (id null when it had
none) and logged on stderr.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
from collections.abc import Container

from app.demos import MY_SERVER
from app.workspace import MAX_PROGRAM_BYTES, RUNTIMES

MAX_PACKET = 65536
MAX_FDS = 4  # a spawn of my-server: three pipes and the learner's file


def send(sock: socket.socket, message: dict) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except (BrokenPipeError, ConnectionResetError):
        pass  # the app is gone: the next read says so, and the server shuts down then


def receive(sock: socket.socket) -> tuple[bytes, list[int], int]:
    """One request: its bytes, the descriptors that came with it, and recvmsg's flags."""
    data, fds, flags, _addr = socket.recv_fds(sock, MAX_PACKET, MAX_FDS)
    return data, fds, flags


def refusal(request: dict, problem: str) -> dict:
    """The reply to a request refused for `problem`."""
    request_id = request.get("id")
    return {
        "op": "failed",
        "id": request_id if is_int(request_id) else None,
        "error": f"bad request: {problem}",
    }


def check_request(data: bytes, fds: list[int], flags: int, *, servers: Container[str], uid_range: range,
                  instances: Container[int], runtimes: Container[str] = ("python",)) -> tuple[dict, str]:  # fmt: skip
    """The request, and "" when it is well-formed, else what is wrong with it. `servers`: the demos
    the fork server has loaded; `instances`: the pids of its live instances; `runtimes`: what it can
    run a learner's file on (python, and node when installed)."""
    try:
        request = json.loads(data)
    except (ValueError, RecursionError):
        return {}, "not JSON"
    if not isinstance(request, dict):
        return {}, "not a JSON object"
    if flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC):
        return request, "truncated (too many descriptors or too long)"
    op = request.get("op")
    if op == "spawn":
        return request, _spawn_problem(request, fds, servers, uid_range, runtimes)
    if op == "signal":
        if set(request) != {"op", "pid", "signal"}:
            return request, "a signal takes exactly op, pid and signal"
        if fds:
            return request, "a signal takes no descriptors"
        if not is_int(request["pid"]) or request["pid"] not in instances:
            return request, f"{request['pid']!r} is not a live instance"
        if not is_int(request["signal"]) or request["signal"] not in (signal.SIGTERM, signal.SIGKILL):
            return request, f"signal {request['signal']!r} is not SIGTERM or SIGKILL"
        return request, ""
    return request, f"unknown op {op!r}"


def _spawn_problem(request: dict, fds: list[int], servers: Container[str], uid_range: range,
                   runtimes: Container[str]) -> str:  # fmt: skip
    own = request.get("server") == MY_SERVER
    if own and set(request) != {"op", "id", "server", "uid", "runtime"}:
        return "a spawn of my-server takes exactly op, id, server, uid and runtime"
    if not own and set(request) != {"op", "id", "server", "uid"}:
        return "a spawn takes exactly op, id, server and uid"
    if not is_int(request["id"]):
        return "the id is not an integer"
    if own and (request["runtime"] not in RUNTIMES or request["runtime"] not in runtimes):
        return f"runtime {request['runtime']!r} is not one this fork server has"
    if not isinstance(request["server"], str) or not (own or request["server"] in servers):
        return f"no registered server {request['server']!r}"
    if not is_int(request["uid"]) or request["uid"] not in uid_range:
        return f"uid {request['uid']!r} is outside the reserved range {uid_range.start}-{uid_range.stop - 1}"
    wanted = 4 if own else 3
    if len(fds) != wanted:
        return f"a spawn of {request['server']} needs {wanted} descriptors, got {len(fds)}"
    for fd in fds[:3]:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return "a spawn's descriptors must be pipes"
    if own:
        info = os.fstat(fds[3])
        if not stat.S_ISREG(info.st_mode):
            return "the server file must come as a regular file (a memfd)"
        limit = MAX_PROGRAM_BYTES[request["runtime"]]
        if info.st_size > limit:
            return f"the server file is over {limit} bytes"
    return ""


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
