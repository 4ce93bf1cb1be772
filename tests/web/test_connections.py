"""What one TCP connection may hold before the app sees a request, and how many one address may hold
(app/web/connections.py), tried from the attacker's side against the app on a real uvicorn.

Clients here come from several loopback addresses (127.0.0.0/8 is all this machine's), so that one
address can be over its cap while another is served. Loopback is a trusted proxy by default, so
these apps trust nobody, unless a test says otherwise."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest

from app.web.client import ClientMiddleware, TrustedProxies, address_key, client_key
from app.web.connections import ConnectionLimits, Connections, RequestPacing
from tests.support.clocks import FrozenClock
from tests.support.inprocess import ServedApp
from tests.support.procs import wait_until
from tests.support.wsclient import McpClient

HEAD_TIMEOUT_S = 1.0
BODY_IDLE_S = 1.5
REQUESTS_PER_S = 20.0  # past a first 10 seconds' worth
# Time-outs in these tests are generous: a busy 2-core machine may be slow to do anything.
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    """Short time-outs, default caps."""
    with ServedApp(tmp_path_factory.mktemp("quick"), warm_pool_size=1, trusted_proxies=[],
                   request_head_timeout_s=HEAD_TIMEOUT_S, request_body_idle_s=BODY_IDLE_S,
                   max_request_head_bytes=16384) as app:  # fmt: skip
        yield app


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    """Small caps, time-outs far longer than any test here (so only the caps close connections)."""
    with ServedApp(tmp_path_factory.mktemp("capped"), warm_pool_size=1, trusted_proxies=["127.0.0.10"],
                   max_connections=12, max_connections_per_address=8,
                   request_head_timeout_s=600) as app:  # fmt: skip
        yield app


@pytest.fixture(scope="module")
def paced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    """A slow pace for each address's requests: 20 a second past a first 200."""
    with ServedApp(tmp_path_factory.mktemp("paced"), warm_pool_size=1, trusted_proxies=["127.0.0.30"],
                   requests_per_s_per_address=REQUESTS_PER_S, max_sessions_per_learner=12) as app:  # fmt: skip
        yield app


def connect(app: ServedApp, source: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", app.port), timeout=DEADLINE_S, source_address=(source, 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as closed)."""
    data = b""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk
    raise AssertionError(f"the server kept the connection open; it sent {data[:200]!r}")


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else 0


def get(app: ServedApp, source: str, path: str = "/healthz", headers: str = "") -> bytes:
    """A whole GET on a connection of its own from `source`, and everything the server says to it."""
    with connect(app, source) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\n{headers}Connection: close\r\n\r\n".encode()
        )
        return until_closed(sock)


def one_response(sock: socket.socket) -> bytes:
    """One whole response (by its Content-Length) on a connection that stays open."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed within a response head: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed within a response body"
        body += chunk
    return head + b"\r\n\r\n" + body


def metric(app: ServedApp, name: str) -> float:
    text = httpx.get(app.base + "/metrics", timeout=DEADLINE_S).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def rss_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS"))


# --- time-outs and head size ---------------------------------------------------------------------


@pytest.mark.slow  # the head time-out, on the real clock
def test_connections_that_never_send_a_request_are_closed_silently(quick: ServedApp) -> None:
    began = time.monotonic()
    sockets = [connect(quick, "127.0.0.3") for _ in range(20)]
    try:
        said = [until_closed(sock) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert said == [b""] * 20  # nothing asked, nothing answered
    assert time.monotonic() - began >= HEAD_TIMEOUT_S * 0.9  # closed by the time-out, not refused
    assert metric(quick, 'playground_connections_cut_total{phase="head"}') >= 20


@pytest.mark.slow  # the head time-out, on the real clock
def test_a_head_sent_a_byte_at_a_time_is_cut_with_408_however_busy(quick: ServedApp) -> None:
    # Slowloris: every byte comes well within any idle time, the head never ends.
    with connect(quick, "127.0.0.3") as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        began = time.monotonic()
        try:
            while time.monotonic() - began < DEADLINE_S:
                sock.sendall(b"a")
                time.sleep(0.05)  # the attacker's pace, not a wait for the app
        except (BrokenPipeError, ConnectionResetError):
            pass
        said = until_closed(sock)
    assert status_of(said) == 408, said
    assert HEAD_TIMEOUT_S * 0.9 <= time.monotonic() - began < DEADLINE_S


def test_a_huge_request_line_or_header_is_refused_with_431_unread(quick: ServedApp) -> None:
    # Unguarded, uvicorn gathers a 200 MB URL whole (the web process grows 290 MB and spends 50 s of CPU).
    pid = os.getpid()  # the app is served in this process; the client here sends from one small buffer
    before = rss_mib(pid)
    for start in (b"GET /", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: "):
        with connect(quick, "127.0.0.4") as sock:
            sent = 0
            try:
                sock.sendall(start)
                while sent < 64 * 1024 * 1024:
                    sock.sendall(b"a" * 65536)
                    sent += 65536
            except (BrokenPipeError, ConnectionResetError):
                pass
            said = until_closed(sock)
        # Closed long before the client was done: what it got to send is what the kernel's buffers
        # took (megabytes on loopback), the app read at most one read past the limit (the RSS below).
        assert sent < 32 * 1024 * 1024, f"the client sent {sent} bytes of one head before it was closed"
        assert status_of(said) in (431, 0), said  # 0: the reset came before the answer could be read
    assert rss_mib(pid) - before < 16
    assert metric(quick, 'playground_connections_cut_total{phase="head_size"}') >= 2
    # Within the limit, a big head is served.
    assert status_of(get(quick, "127.0.0.4", headers=f"X-Pad: {'p' * 12000}\r\n")) == 200


@pytest.mark.slow  # the head time-out, on the real clock
def test_a_kept_alive_connection_is_served_again_and_timed_again(quick: ServedApp) -> None:
    with connect(quick, "127.0.0.5") as sock:
        for _ in range(3):
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{quick.port}\r\n\r\n".encode())
            assert status_of(one_response(sock)) == 200
        began = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next head begins, and stops
        said = until_closed(sock)
    assert b"408 Request Timeout" in said
    assert time.monotonic() - began >= HEAD_TIMEOUT_S * 0.9


def _put_name(app: ServedApp, source: str, body: bytes, length: int) -> socket.socket:
    sock = connect(app, source)
    sock.sendall(
        f"PUT /api/progress/name HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\nOrigin: {app.base}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    return sock


@pytest.mark.slow  # the body's idle time-out, on the real clock
def test_a_stalled_body_is_cut_and_a_slow_one_is_not(quick: ServedApp) -> None:
    body = b'{"display_name": "' + b"n" * 40 + b'"}'
    # Half the body, then nothing: closed once it has stalled for the idle time, with no answer and
    # nothing in the error log (the app saw a client that left).
    began = time.monotonic()
    with _put_name(quick, "127.0.0.6", body[:20], len(body)) as sock:
        assert until_closed(sock) == b""
    assert time.monotonic() - began >= BODY_IDLE_S * 0.9
    assert metric(quick, 'playground_connections_cut_total{phase="body"}') >= 1
    # The same body a byte at a time, for longer than the idle time in all: it keeps coming, it is read.
    with _put_name(quick, "127.0.0.6", b"", len(body)) as sock:
        for n in range(len(body)):
            sock.sendall(body[n : n + 1])
            time.sleep(BODY_IDLE_S * 2 / len(body))  # the client's pace
        said = until_closed(sock)
    assert status_of(said) == 200 and b'"display_name":"' + b"n" * 40 in said, said
    assert "Traceback" not in quick.log()


# --- caps ----------------------------------------------------------------------------------------


@contextmanager
def held(app: ServedApp, source: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections from `source`, kept open (and sending nothing) until the block ends."""
    sockets = []
    try:
        for _ in range(count):
            sock = connect(app, source)
            sockets.append(sock)
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def refused(app: ServedApp, source: str) -> bool:
    """A new connection from `source` is closed at once with a 503."""
    with connect(app, source) as sock:
        said = until_closed(sock)  # no request sent: only a refusal is answered before one comes
    return status_of(said) == 503 and b"Too many connections" in said


def open_connections(app: ServedApp) -> float:
    return metric(app, "playground_connections_open")


def test_one_address_holds_its_cap_and_no_more_and_others_still_get_in(capped: ServedApp) -> None:
    assert wait_until(lambda: open_connections(capped) <= 1, DEADLINE_S)
    with held(capped, "127.0.0.7", 8) as mine:
        assert refused(capped, "127.0.0.7")
        assert refused(capped, "127.0.0.7")
        assert status_of(get(capped, "127.0.0.8")) == 200  # another address is served meanwhile
        mine.pop().close()
        assert wait_until(lambda: open_connections(capped) <= 8, DEADLINE_S)
        assert status_of(get(capped, "127.0.0.7")) == 200  # room again
    assert wait_until(lambda: open_connections(capped) <= 1, DEADLINE_S)  # every one counted out
    assert metric(capped, 'playground_connections_refused_total{reason="address"}') >= 2


def test_the_total_counts_every_address_and_refusals_are_logged_once_a_minute(capped: ServedApp) -> None:
    assert wait_until(lambda: open_connections(capped) <= 1, DEADLINE_S)  # the tests before have let go
    with held(capped, "127.0.0.11", 8), held(capped, "127.0.0.12", 4):
        assert wait_until(lambda: refused(capped, "127.0.0.13"), DEADLINE_S)  # the 13th, from anyone
        for _ in range(20):
            assert refused(capped, "127.0.0.13")
    assert wait_until(lambda: status_of(get(capped, "127.0.0.13")) == 200, DEADLINE_S)
    assert metric(capped, 'playground_connections_refused_total{reason="total"}') >= 21
    assert capped.log().count("connection(s) over") <= 2  # one line a minute: this test's, the one before


async def test_a_websocket_counts_while_open_and_is_counted_out_when_it_closes(capped: ServedApp) -> None:
    assert wait_until(lambda: open_connections(capped) <= 1, DEADLINE_S)
    clients = [await McpClient.connect(f"{capped.ws_base}/ws/demo-orders", local_addr=("127.0.0.14", 0))
               for _ in range(2)]  # fmt: skip
    try:
        for client in clients:
            await client.initialize()
        with held(capped, "127.0.0.14", 6):
            assert refused(capped, "127.0.0.14")  # 2 consoles and 6 more are its 8
    finally:
        for client in clients:
            await client.ws.close()
    assert wait_until(lambda: status_of(get(capped, "127.0.0.14")) == 200, DEADLINE_S)
    assert wait_until(lambda: open_connections(capped) <= 1, DEADLINE_S)


def test_a_trusted_proxy_is_not_capped_per_address(capped: ServedApp) -> None:
    # 127.0.0.10 is this app's proxy: its clients are all behind it, and the proxy caps them. The
    # total still counts its connections: 11 of them (and the look at /metrics is the 12th), then
    # one more, and the next is over the total.
    assert wait_until(lambda: open_connections(capped) <= 1, DEADLINE_S)
    with held(capped, "127.0.0.10", 11):
        assert wait_until(lambda: open_connections(capped) == 12, DEADLINE_S)
        with held(capped, "127.0.0.10", 1):
            assert refused(capped, "127.0.0.10")


# --- each address's requests, paced -----------------------------------------------------------------


def in_a_row(app: ServedApp, source: str, count: int, extra: str = "") -> float:
    """`count` GETs of /healthz one after another on one connection from `source`; the seconds they
    took. (Not pipelined: uvicorn loses pipelined requests that span two reads, paced or not.)"""
    began = time.monotonic()
    with connect(app, source) as sock:
        request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\n{extra}\r\n".encode()
        for _ in range(count):
            sock.sendall(request)
            assert status_of(one_response(sock)) == 200
    return time.monotonic() - began


@pytest.mark.slow  # the request pace, on the real clock
def test_one_address_flooding_requests_is_paced_and_others_are_not(paced: ServedApp) -> None:
    burst, extra = int(REQUESTS_PER_S * 10), 60
    paced_before = metric(paced, "playground_requests_paced_total")
    with ThreadPoolExecutor(1) as flooding:
        # The burst goes at once; the rest at the pace, 3 s.
        started = time.monotonic()
        flood = flooding.submit(in_a_row, paced, "127.0.0.21", burst + extra)
        assert wait_until(lambda: metric(paced, "playground_requests_paced_total") > paced_before, DEADLINE_S)
        # While a busy machine sends the burst, the pace gives back REQUESTS_PER_S a second: that many
        # of the rest go through unpaced.
        given_back = REQUESTS_PER_S * (time.monotonic() - started)
        began = time.monotonic()
        assert status_of(get(paced, "127.0.0.22")) == 200  # meanwhile, another address is not held up
        other_took = time.monotonic() - began
        took = flood.result(timeout=DEADLINE_S * 2)
    assert other_took < extra / REQUESTS_PER_S / 2
    assert took >= extra / REQUESTS_PER_S * 0.8, f"{burst + extra} requests in {took:.2f} s: not paced"
    assert metric(paced, "playground_requests_paced_total") - paced_before >= (extra - given_back) * 0.8


def spend_burst(app: ServedApp, source: str) -> float:
    """Leave `source` no request to spare: its first 10 seconds' worth in a row, then a second's worth
    at a time until one is paced; when the last of them was answered. The pace gives back
    REQUESTS_PER_S a second meanwhile, and on a busy machine the burst alone took long enough to give
    back all that a test then counted on being paced."""
    paced_before = metric(app, "playground_requests_paced_total")
    count, deadline = int(REQUESTS_PER_S * 10), time.monotonic() + DEADLINE_S
    while True:
        in_a_row(app, source, count)
        spent = time.monotonic()
        if metric(app, "playground_requests_paced_total") > paced_before:
            return spent
        assert spent < deadline, f"{source} was never paced"
        count = int(REQUESTS_PER_S)


@pytest.mark.slow  # the request pace, on the real clock
async def test_a_websocket_handshake_waits_its_turn_and_then_works(paced: ServedApp) -> None:
    # From the moment the burst is spent, the pace gives back REQUESTS_PER_S a second: 10 handshakes
    # take at least 9 of those turns.
    began = spend_burst(paced, "127.0.0.23")
    clients = [await McpClient.connect(f"{paced.ws_base}/ws/demo-orders", local_addr=("127.0.0.23", 0))
               for _ in range(10)]  # fmt: skip
    try:
        took = time.monotonic() - began
        for client in clients:
            assert (await client.call(2, "ping"))["result"] == {}
    finally:
        for client in clients:
            await client.ws.close()
    assert took >= 10 / REQUESTS_PER_S * 0.8, f"10 handshakes in {took:.2f} s: not paced"


@pytest.mark.slow  # the request pace, on the real clock
def test_behind_a_trusted_proxy_each_forwarded_address_has_its_own_pace(paced: ServedApp) -> None:
    burst = int(REQUESTS_PER_S * 10)
    flooding = "X-Forwarded-For: 198.51.100.1\r\n"
    took = in_a_row(paced, "127.0.0.30", burst + 40, flooding)
    assert took >= 40 / REQUESTS_PER_S * 0.8
    # The proxy's other client is not held up by the first one's debt.
    assert in_a_row(paced, "127.0.0.30", 20, "X-Forwarded-For: 198.51.100.2\r\n") < 40 / REQUESTS_PER_S


# --- the counting itself -------------------------------------------------------------------------


def test_an_ipv6_client_is_counted_by_its_64_and_a_mapped_ipv4_as_itself() -> None:
    assert (
        address_key("2001:db8:1:2::1")
        == address_key("2001:db8:1:2:ffff:ffff:ffff:ffff")
        == "2001:db8:1:2::/64"
    )
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("::ffff:192.0.2.7") == address_key("192.0.2.7") == "192.0.2.7"
    assert address_key("") == ""  # a Unix socket's peer: one key for all of them
    # What every other per-address count uses too (session caps, new identities, wrong codes).
    one, other = ({"client": ("2001:db8:1:2::1", 5000)}, {"client_address": "2001:db8:1:2::99"})
    assert client_key(one) == client_key(other) == "2001:db8:1:2::/64"


def limits(total: int = 4, per_address: int = 2) -> ConnectionLimits:
    return ConnectionLimits(total, per_address, head_timeout_s=1, body_idle_s=1, max_head_bytes=4096,
                            requests_per_s=10)  # fmt: skip


def test_a_connection_is_counted_once_and_let_go_once() -> None:
    connections = Connections(limits(), TrustedProxies(["10.0.0.1"]))
    a, b, c, proxied = object(), object(), object(), object()  # transports, as far as counting goes
    assert connections.admit(a, "192.0.2.1") is None and connections.admit(b, "192.0.2.1") is None
    assert connections.admit(c, "192.0.2.1") == "address"
    connections.release(a)
    connections.release(a)  # the HTTP protocol and the WebSocket it became may both say so
    assert connections.held_by("192.0.2.1") == 1 and connections.open == 1
    assert connections.admit(c, "192.0.2.1") is None
    proxied_too = object()
    assert connections.admit(proxied, "10.0.0.1") is None  # a trusted proxy: past its per-address cap
    assert connections.admit(proxied_too, "10.0.0.1") is None
    assert connections.admit(object(), "10.0.0.1") == "total"  # but not past the total of 4
    for transport in (b, c, proxied, proxied_too):
        connections.release(transport)
    assert connections.open == 0 and connections.held_by("192.0.2.1") == 0


def test_an_address_may_start_its_burst_at_once_then_waits_at_its_pace() -> None:
    connections = Connections(limits(), TrustedProxies(["10.0.0.1"]))
    scope = {"client": ("192.0.2.9", 5000), "headers": []}
    assert [connections.request_wait(scope) for _ in range(100)] == [0.0] * 100  # 10 s at 10 a second
    assert 0.09 <= connections.request_wait(scope) <= 0.1
    assert 0.19 <= connections.request_wait(scope) <= 0.2  # side by side, they queue
    assert connections.request_wait({"client": ("192.0.2.10", 5000), "headers": []}) == 0.0
    proxied = {"client": ("10.0.0.1", 5000), "headers": [(b"x-forwarded-for", b"192.0.2.9")]}
    assert connections.request_wait(proxied) > 0.2  # the address behind the proxy: the same one


async def test_the_pacing_middleware_holds_an_address_past_its_pace_before_the_app_sees_it() -> None:
    # In process, on a frozen clock: the waits the middleware takes are recorded, not slept.
    seen: list[str] = []
    clock = FrozenClock()
    waits = clock.slept

    async def app(scope, receive, send) -> None:  # noqa: ANN001
        seen.append(scope["type"])
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})

    trusted = TrustedProxies(["10.0.0.1"])
    connections = Connections(limits(), trusted, clock=clock)
    paced = ClientMiddleware(RequestPacing(app, connections), trusted=trusted)
    clients = {peer: httpx.AsyncClient(transport=httpx.ASGITransport(paced, client=(peer, 5000)),
                                       base_url="http://playground")
               for peer in ("192.0.2.9", "192.0.2.10", "10.0.0.1")}  # fmt: skip
    for _ in range(100):  # 10 s at 10 a second: the burst
        assert (await clients["192.0.2.9"].get("/")).status_code == 200
    assert waits == []
    await clients["192.0.2.9"].get("/")
    await clients["192.0.2.10"].get("/")  # another address: its own pace
    await clients["10.0.0.1"].get("/", headers={"X-Forwarded-For": "192.0.2.9"})  # the same one, proxied
    assert [round(w, 3) for w in waits] == [0.1, 0.2]
    # A WebSocket handshake is a request too.
    await paced({"type": "websocket", "client": ("192.0.2.9", 5000), "headers": [], "path": "/ws/x"},
                None, None)  # fmt: skip
    assert round(waits[-1], 3) == 0.3 and seen[-1] == "websocket" and len(seen) == 104
    for client in clients.values():
        await client.aclose()


def test_a_small_open_file_limit_lowers_the_total_and_says_so(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    import app.web.connections as module

    monkeypatch.setattr(module, "raise_open_file_limit", lambda wanted: 3000)
    connections = Connections(limits(total=4096), TrustedProxies([]))
    connections.fit_open_files(reserved=2000)
    assert connections.total == 1000
    assert "leaves room for 1000 connections, not 4096" in caplog.text
    roomy = Connections(limits(total=100), TrustedProxies([]))
    roomy.fit_open_files(reserved=2000)
    assert roomy.total == 100
