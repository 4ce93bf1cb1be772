"""What a visitor's request bodies make the web process hold, read from the real process's memory
(/proc/PID/status): a body past the site's limit, and requests to an endpoint waiting their turn."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterator

import httpx
import pytest

from app.web.guard import SITE_BODY_BYTES
from app.web.learner import COOKIE
from tests.support.appserver import AppProcess
from tests.web.test_connections import one_response
from tests.web.test_endpoints import initialize, make_endpoint

SAME_SITE_JSON = {"Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppProcess]:
    with AppProcess(tmp_path_factory.mktemp("bodies"), warm_pool_size=1) as app:
        yield app


def _peak_rss_reset(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as out:
        out.write("5")  # the peak resident size starts again from now


def _rss_mib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith(field))


def test_a_body_past_the_limit_is_refused_before_it_is_read(app: AppProcess) -> None:
    # 64 MiB of `[],[],...` for a name: read and parsed whole, it would take 5 s of the web process's
    # time and 1.7 GiB at its peak.
    pid = app.proc.pid
    assert pid is not None
    _peak_rss_reset(pid)
    before = _rss_mib(pid, "VmRSS")
    data = b"[" + b"[]," * (64 * 2**20 // 3) + b"[]]"
    with app.client(cookies={COOKIE: app.learner_cookie("big-body")}) as client:
        reply = client.put("/api/progress/name", content=data, headers=SAME_SITE_JSON)
        assert reply.status_code == 413
        assert reply.json()["error"]["message"] == (
            f"The request's body is over the limit of {SITE_BODY_BYTES // 1024} KiB, so nothing of it was read."
        )
        assert _rss_mib(pid, "VmHWM") - before < 32
        form = client.post("/course/name", data={"display_name": "x" * SITE_BODY_BYTES},
                           headers={"Sec-Fetch-Site": "same-origin"})  # fmt: skip
        assert form.status_code == 413 and "text/html" in form.headers["content-type"]  # a page, for a form
        fine = client.put("/api/progress/name", json={"display_name": "Small"}, headers=SAME_SITE_JSON)
        assert fine.status_code == 200 and fine.json() == {"display_name": "Small"}


def test_requests_waiting_their_turn_hold_no_bodies_and_may_give_up(app: AppProcess) -> None:
    # 40 requests of 512 KiB, each sent whole at once on a connection of its own: all but the first
    # few wait their turn. Read at once and then kept waiting, they would grow the web process by
    # 25 MiB (60 of 1 MiB: 128 MiB); each is read in its turn (12 MiB, the session's transcript and
    # uvicorn's 64 KiB of each body included), and answered.
    url = make_endpoint(app)["url"]
    session = initialize(url)
    pad = {"_meta": {"pad": "x" * 524_288}}
    pid = app.proc.pid
    assert pid is not None
    _peak_rss_reset(pid)
    before = _rss_mib(pid, "VmRSS")
    sockets = []
    try:
        for n in range(100, 140):
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping", "params": pad}).encode()
            sockets.append(_raw_post(url, session, body, len(body)))
        bodies = [one_response(sock).partition(b"\r\n\r\n")[2] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    grown = _rss_mib(pid, "VmHWM") - before
    assert [json.loads(body)["id"] for body in bodies] == list(range(100, 140))
    assert grown < 18, f"the web process grew {grown} MiB while requests waited"  # 25 if read at once

    # A client that gives up while its request waits (it declares 3 MiB: past the first second's
    # worth, whatever is left of it): part of the body, then a reset. Nothing breaks, and the session
    # answers after it.
    with _raw_post(url, session, b'{"jsonrpc": "2.0", "id": 7, ' + b" " * 100_000, 3 * 1024 * 1024) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    headers = {"Accept": "application/json", "Mcp-Session-Id": session}
    ping = httpx.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=headers, timeout=60)
    assert ping.json() == {"jsonrpc": "2.0", "id": 3, "result": {}}  # after the given-up request's turn
    assert "Traceback" not in app.log() and "Exception in ASGI" not in app.log()


def _raw_post(url: str, session: str, body: bytes, length: int) -> socket.socket:
    """A POST to `url` on a connection of its own, `body` sent whole (of the `length` declared)."""
    target = httpx.URL(url)
    sock = socket.create_connection((target.host, target.port), timeout=60)
    head = (f"POST {target.raw_path.decode()} HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n"
            f"Content-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: {session}\r\n"
            f"Content-Length: {length}\r\n\r\n")  # fmt: skip
    sock.sendall(head.encode() + body)
    return sock
