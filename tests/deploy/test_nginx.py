"""deploy/nginx/playground.conf with Debian's nginx in front of two real replicas on one PostgreSQL.

nginx runs as an unprivileged master process (never the system service) with its own prefix, pid
file, logs and temporary folders in a private folder, on a free loopback port. Which replica served a
request is read from nginx's own access log: the configuration logs `$upstream_addr` and sends the
line's `$request_id` back as `X-Request-ID`.

The tests share one set-up and run in file order; the last one kills a replica.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from bs4 import BeautifulSoup
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageResult, TextContent

from app.web.learner import COOKIE
from tests.support.appserver import ROOT, AppProcess, free_port, learner_id_of
from tests.support.wsclient import EnvelopeClient, init_request

CONFIG = ROOT / "deploy" / "nginx" / "playground.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
TOKEN = "nginx-instructor-token-long-enough"
STEP = "initialize-handshake/versions"
CLASS_SIZE = 30
# Bounds on a broken test only (a busy 2-core machine is slow).
START_TIMEOUT_S = 30.0
LOG_WAIT_S = 10.0

pytestmark = pytest.mark.skipif(
    not os.access(NGINX, os.X_OK),
    reason="nginx is not installed (Debian package nginx; `make test` installs it)",
)


class Nginx:
    """One nginx master process with the repository's configuration, filled in for these replicas."""

    def __init__(self, replicas: list[int], tls: tuple[Path, Path] | None = None) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="playground-nginx-"))
        self.scheme = "https" if tls else "http"
        self.proc: subprocess.Popen | None = None
        self.user = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
        self.access_log = self.dir / "playground.access.log"
        if tls:  # copies nobody may read
            tls = (
                Path(shutil.copy(tls[0], self.dir / "cert.pem")),
                Path(shutil.copy(tls[1], self.dir / "key.pem")),
            )
        (self.dir / "nginx.conf").write_text(self._main_config())
        (self.dir / "playground.conf").write_text(self._site_config(replicas, tls))

    @property
    def base(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def _main_config(self) -> str:
        """What Debian's /etc/nginx/nginx.conf gives around conf.d, with every path in our folder."""
        d = self.dir
        temp = " ".join(
            f"{kind}_temp_path {d}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        return (
            f"daemon off;\npid {d}/nginx.pid;\nerror_log {d}/main-error.log warn;\nworker_processes 1;\n"
            f"events {{ worker_connections 512; }}\nhttp {{\n  {temp}\n  include {d}/playground.conf;\n}}\n"
        )

    def _site_config(self, replicas: list[int], tls: tuple[Path, Path] | None) -> str:
        text = CONFIG.read_text()
        replica_line = re.compile(r"^(\s*)server \S+(.*?)\s*# replica$", re.MULTILINE)
        first = replica_line.search(text)
        assert first is not None, "the configuration lost its `# replica` lines"
        ours = "".join(f"{first[1]}server 127.0.0.1:{port}{first[2]}\n" for port in replicas)
        text = replica_line.sub("", text, count=0)
        text = text[: first.start()] + ours.rstrip("\n") + text[first.start() :]
        listen = f"listen 127.0.0.1:{self.port}"
        if tls:
            listen += f" ssl;\n    ssl_certificate {tls[0]};\n    ssl_certificate_key {tls[1]}"
        text, count = re.subn(r"listen 80;\s*# the listen line", listen + ";", text)
        assert count == 1, "the configuration lost its listen line"
        return text.replace("/var/log/nginx/", f"{self.dir}/")

    def start(self) -> Nginx:
        if self.user is not None:  # an unprivileged master: nobody owns the folder and runs nginx
            for path in [self.dir, *self.dir.iterdir()]:
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        ids = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []} if self.user else {}
        self.proc = subprocess.Popen(
            [NGINX, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"), "-e", str(self.dir / "main-error.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **ids,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.proc.stderr.read().decode()}{self.main_errors()}")
            try:
                # Only nginx's answer counts (it adds the request id): one from whatever else holds the
                # port means nginx is about to exit for it, which the poll above then reports.
                if "x-request-id" in httpx.get(self.base + "/healthz", timeout=2, verify=False).headers:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)  # polling with a deadline
        raise RuntimeError("nginx did not answer: " + self.main_errors())

    def main_errors(self) -> str:
        path = self.dir / "main-error.log"
        return path.read_text() if path.exists() else ""

    def log_lines(self) -> list[str]:
        return self.access_log.read_text().splitlines() if self.access_log.exists() else []

    def logged(self, request_id: str) -> str:
        """The access-log line of one request (nginx writes it once the response is done)."""
        deadline = time.monotonic() + LOG_WAIT_S
        while time.monotonic() < deadline:
            for line in self.log_lines():
                if f" id={request_id} " in line:
                    return line
            time.sleep(0.02)
        raise AssertionError(f"no access-log line for request {request_id}")

    def served_by(self, response: httpx.Response) -> int:
        """The port of the replica that answered (the last one nginx tried)."""
        line = self.logged(response.headers["x-request-id"])
        upstream = re.search(r" upstream=(\S+(?:, \S+)*) upstream_status=", line)
        assert upstream, line
        return int(upstream[1].split(", ")[-1].rsplit(":", 1)[1])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: workers finish, then exit
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class Learner:
    name: str
    cookie: str
    replica: int  # the port of the replica the balancer gives them


@dataclass
class Cluster:
    replicas: dict[int, AppProcess]
    nginx: Nginx
    learners: list[Learner] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)  # what must never reach nginx's logs
    class_id: str = ""
    join_code: str = ""

    def browser(self, learner: Learner | None = None, **kwargs: object) -> httpx.Client:
        """A browser's page on the site behind nginx: this site's Origin, the learner's cookie."""
        cookies = {COOKIE: learner.cookie} if learner else None
        return httpx.Client(base_url=self.nginx.base, headers={"Origin": self.nginx.base}, cookies=cookies,
                            timeout=30, **kwargs)  # type: ignore[arg-type]  # fmt: skip

    def other(self, port: int) -> int:
        return next(p for p in self.replicas if p != port)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, postgres_server) -> Iterator[Cluster]:  # noqa: ANN001
    tmp = tmp_path_factory.mktemp("nginx-replicas")
    with postgres_server.fresh_database() as url:
        common = {"database_url": url, "instructor_token": TOKEN, "warm_pool_size": 1}
        apps = [AppProcess(tmp / "a", **common), AppProcess(tmp / "b", **common)]
        nginx = Nginx([app.port for app in apps])
        try:
            with ThreadPoolExecutor(2) as starting:  # two replicas starting together, as in a roll-out
                list(starting.map(AppProcess.start, apps))
            nginx.start()
            yield Cluster({app.port: app for app in apps}, nginx)
        finally:
            nginx.stop()
            for app in apps:
                app.stop()


def test_nginx_is_not_taken_as_started_when_something_else_answers_on_its_port() -> None:
    # What a port handed out twice looked like: a replica held nginx's port, answered its first
    # look, and every test went to that replica straight while nginx exited for the port.
    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    nginx = Nginx([free_port()])
    squatter = ThreadingHTTPServer(("127.0.0.1", nginx.port), Answer)
    serving = threading.Thread(target=squatter.serve_forever)
    serving.start()
    try:
        assert httpx.get(nginx.base + "/healthz", timeout=10).status_code == 200  # something answers there
        with pytest.raises(RuntimeError, match="nginx exited.*[Aa]ddress already in use"):
            nginx.start()
    finally:
        nginx.stop()
        squatter.shutdown()
        serving.join()
        squatter.server_close()


def test_a_class_of_30_is_spread_over_both_replicas_and_each_learner_stays_on_one(cluster: Cluster) -> None:
    with cluster.browser() as teacher:
        assert teacher.post("/instructor/login", data={"token": TOKEN}).status_code == 303
        made = teacher.post("/instructor/classes", data={"name": "Through nginx"})
        cluster.class_id = made.headers["location"].rsplit("/", 1)[1]
        page = BeautifulSoup(teacher.get(made.headers["location"]).text, "html.parser")
        code = cluster.join_code = page.select_one("[data-join-code]").get_text()
        cluster.secrets.add(code)

    for n in range(CLASS_SIZE):
        with cluster.browser() as browser:
            browser.post("/api/identity").raise_for_status()  # no cookie yet: any replica makes one
            served = []
            joined = browser.post("/join", data={"code": code, "display_name": f"Learner {n:02d}"})
            assert joined.status_code == 303, joined.text
            served.append(cluster.nginx.served_by(joined))
            for path in (f"/course/{STEP}", "/api/progress", "/course"):
                response = browser.get(path)
                response.raise_for_status()
                served.append(cluster.nginx.served_by(response))
            assert len(set(served)) == 1, f"learner {n} moved between replicas: {served}"
            cookie = browser.cookies[COOKIE]
            cluster.learners.append(Learner(f"Learner {n:02d}", cookie, served[0]))
            cluster.secrets.add(cookie)

    spread = Counter(learner.replica for learner in cluster.learners)
    assert set(spread) == set(cluster.replicas), f"one replica got the whole class: {spread}"

    with cluster.browser() as teacher:  # either replica shows the whole class
        teacher.post("/instructor/login", data={"token": TOKEN})
        page = BeautifulSoup(teacher.get(f"/instructor/classes/{cluster.class_id}").text, "html.parser")
        assert len(page.select("tr[data-learner]")) == CLASS_SIZE


def test_nginx_routes_by_the_learner_cookie_the_app_reads(cluster: Cluster) -> None:
    """A cookie re-signed after a new resume code (`<id>~<generation>.<signature>`) keeps its learner's
    replica; of two learner cookies in one header, the app reads the last, and nginx routes by it too
    (by the first, a learner could send their real cookie to any replica they chose)."""
    ada = cluster.learners[0]
    other = next(learner for learner in cluster.learners if learner.replica != ada.replica)
    ada_id = learner_id_of(ada.cookie)
    for header, replica in (
        (f"{COOKIE}={ada_id}~3.{ada.cookie.rpartition('.')[2]}", ada.replica),
        (f"{COOKIE}={learner_id_of(other.cookie)}.x; {COOKIE}={ada.cookie}", ada.replica),
        (f"{COOKIE}={ada.cookie}; theme=dark; {COOKIE}={other.cookie}", other.replica),
    ):
        with httpx.Client(base_url=cluster.nginx.base, headers={"Cookie": header}, timeout=30) as browser:
            for path in ("/course", "/api/progress"):
                response = browser.get(path)
                response.raise_for_status()
                assert cluster.nginx.served_by(response) == replica, (header, path)


async def test_a_class_cap_holds_when_30_consoles_open_at_once_through_nginx(cluster: Cluster) -> None:
    """Thirty learners of a class capped at 10 open their consoles together, spread over both
    replicas by the balancer: ten get a server, twenty are told the class is full, and the class page
    of either replica counts the ten."""
    cap = 10
    with cluster.browser() as teacher:
        teacher.post("/instructor/login", data={"token": TOKEN})
        made = teacher.post("/instructor/classes", data={"name": "Capped", "max_sessions": str(cap)})
        class_id = made.headers["location"].rsplit("/", 1)[1]
        code = BeautifulSoup(teacher.get(made.headers["location"]).text, "html.parser").select_one(
            "[data-join-code]").get_text()  # fmt: skip
        cluster.secrets.add(code)
    cookies = []
    for n in range(CLASS_SIZE):
        with cluster.browser() as browser:
            browser.get("/course").raise_for_status()
            assert (
                browser.post("/join", data={"code": code, "display_name": f"Capped {n:02d}"}).status_code
                == 303
            )
            cookies.append(browser.cookies[COOKIE])
            cluster.secrets.add(browser.cookies[COOKIE])

    async def open_console(cookie: str) -> tuple[EnvelopeClient, str]:
        console = await EnvelopeClient.connect(cluster.nginx.ws_base + "/ws/demo-orders", origin=cluster.nginx.base,
                                               additional_headers={"Cookie": f"{COOKIE}={cookie}"})  # fmt: skip
        first = await console.recv_type("state", "full", timeout=60)
        return console, "ready" if first["type"] == "state" and first["status"] == "ready" else first.get(
            "reason", ""
        )

    opened = await asyncio.gather(*(open_console(cookie) for cookie in cookies))
    try:
        outcomes = Counter(outcome for _, outcome in opened)
        assert outcomes == {"ready": cap, "class_full": CLASS_SIZE - cap}, outcomes
        for app in cluster.replicas.values():  # each replica's class page counts both replicas' consoles
            with httpx.Client(
                base_url=app.base, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}
            ) as client:
                grid = BeautifulSoup(client.get(f"/instructor/classes/{class_id}/grid").text, "html.parser")
                assert grid.select_one("[data-class-live]").get_text() == str(cap)
    finally:
        await asyncio.gather(*(console.close() for console, _ in opened), return_exceptions=True)


async def test_a_console_through_nginx_reattaches_on_its_learners_replica(cluster: Cluster) -> None:
    learner = cluster.learners[0]
    headers = {"Cookie": f"{COOKIE}={learner.cookie}", "Origin": cluster.nginx.base}
    url = f"{cluster.nginx.ws_base}/ws/demo-orders"
    console = await EnvelopeClient.connect(f"{url}?step={STEP}", additional_headers=headers)
    state = await console.recv_type("state")
    session = state["session"]
    cluster.secrets.add(session)
    await console.send(init_request())
    assert (await console.recv_type("received"))["message"]["result"]["serverInfo"]["name"] == "demo-orders"
    console.ws.transport.abort()  # a Wi-Fi blip: nginx sees the client go and drops its upstream connection
    await console.ws.wait_closed()

    again = await EnvelopeClient.connect(f"{url}?session={session}&last_seq=0", additional_headers=headers)
    try:
        resumed = await again.recv_type("state")
        assert resumed["session"] == session and resumed["resumed"] is True
        replayed = await again.recv_type("received")  # the transcript so far comes again
        assert replayed["replayed"] and replayed["message"]["id"] == 1
        await again.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await again.recv_type("received"))["message"] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        # The session lives on the replica that serves the learner's pages, and only there.
        cookies = {COOKIE: learner.cookie}
        for port, app in cluster.replicas.items():
            direct = httpx.get(f"{app.base}/api/sessions/{session}/transcript", cookies=cookies, timeout=30)
            assert direct.status_code == (200 if port == learner.replica else 404)
    finally:
        await again.close()


async def test_an_mcp_client_through_nginx_gets_server_sent_events(cluster: Cluster) -> None:
    learner = cluster.learners[1]
    with cluster.browser(learner) as browser:
        made = browser.post("/api/endpoints", json={"server": "demo-assistant"})
        assert made.status_code == 201, made.text
    endpoint = made.json()
    assert endpoint["url"].startswith(cluster.nginx.base + "/mcp/")  # the Host passed through, port and all
    cluster.secrets.add(endpoint["url"].rsplit("/", 1)[1])
    logged_before = len(cluster.nginx.log_lines())
    asked: list[str] = []

    async def sampling(context, params):  # noqa: ANN001, ANN202
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Walk the old town."),
                                   model="test-model")  # fmt: skip

    # The server's own request (sampling) arrives in the middle of the tools/call's event stream and the
    # reply waits for the answer: a buffering proxy would hold the stream until the call timed out.
    async with (
        streamable_http_client(endpoint["url"]) as (read, write),
        ClientSession(read, write, sampling_callback=sampling) as client,
    ):
        result = await client.initialize()
        assert result.server_info.name == "demo-assistant"
        call = await client.call_tool("suggest_trip", {"city": "Lisbon"})
    assert asked == ["Suggest a one-day trip in Lisbon."]
    assert "written by test-model: Walk the old town." in call.content[0].text

    lines = [line for line in cluster.nginx.log_lines()[logged_before:] if "/mcp/" in line]
    assert lines and all('"POST /mcp/[redacted] ' in line or " /mcp/[redacted] " in line for line in lines)
    upstreams = {re.search(r" upstream=(\S+) ", line)[1] for line in lines}  # type: ignore[index]
    assert len(upstreams) == 1, f"one endpoint's requests went to several replicas: {upstreams}"


def test_forwarded_headers_are_nginxs_own_and_tls_makes_cookies_secure(
    cluster: Cluster, tmp_path: Path
) -> None:
    # A client cannot claim HTTPS through nginx: X-Forwarded-Proto is set from nginx's own scheme.
    plain = httpx.post(cluster.nginx.base + "/api/identity", timeout=30,
                       headers={"X-Forwarded-Proto": "https", "Origin": cluster.nginx.base})  # fmt: skip
    assert "secure" not in plain.headers["set-cookie"].lower()
    assert "strict-transport-security" not in plain.headers

    # TLS ended at nginx, as the configuration's comment says: the replicas see https.
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    tls = Nginx(list(cluster.replicas), tls=(cert, key))
    try:
        tls.start()
        context = ssl.create_default_context(cafile=str(cert))
        secure = httpx.post(
            tls.base + "/api/identity", headers={"Origin": tls.base}, verify=context, timeout=30
        )
        assert secure.status_code == 204
        assert "; secure" in secure.headers["set-cookie"].lower()
        assert "strict-transport-security" in secure.headers
    finally:
        tls.stop()


def test_nginx_closes_a_connection_whose_request_head_does_not_come(cluster: Cluster) -> None:
    # The app caps nothing per address for its trusted proxy, and sees only whole requests from it:
    # a client's slow head is nginx's to cut, at the configuration's 15 s (nginx's default is 60).
    began = time.monotonic()
    idle = socket.create_connection(("127.0.0.1", cluster.nginx.port), timeout=60)
    slow = socket.create_connection(("127.0.0.1", cluster.nginx.port), timeout=60)
    with idle, slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and no more
        for sock in (idle, slow):
            try:
                while sock.recv(65536):  # nginx may say 408 first; then it closes
                    pass
            except ConnectionResetError:
                pass
    took = time.monotonic() - began
    assert 12 <= took < 45, f"closed after {took:.1f} s"


def test_the_access_log_holds_no_endpoint_token_resume_code_or_join_code(cluster: Cluster) -> None:
    learner = cluster.learners[2]
    with cluster.browser(learner) as browser:
        page = BeautifulSoup(browser.get("/resume").text, "html.parser")
        code = page.select_one("[data-resume-code]").get_text()
        cluster.secrets.add(code)
        link = browser.get(f"/resume/{code}")
        assert link.status_code == 200  # asks before switching
        assert browser.post("/resume", data={"code": code}).status_code == 303
        join = browser.get(f"/join/{cluster.join_code}")
        assert join.status_code == 200

    assert '"GET /resume/[redacted] ' in cluster.nginx.logged(link.headers["x-request-id"])
    assert '"GET /join/[redacted] ' in cluster.nginx.logged(join.headers["x-request-id"])
    log = cluster.nginx.access_log.read_text()
    assert "/mcp/[redacted]" in log
    assert "/ws/demo-orders?[redacted]" in log  # the console's reconnect: ?session=<id>
    assert_no_secrets(cluster)


def test_a_long_path_query_or_user_agent_is_cut_in_the_access_log(cluster: Cluster) -> None:
    """From the side of a visitor sending a request line and a User-Agent of nearly 8 KiB (nginx's
    limit) on every request: each access line held all of them, whatever the app answered."""
    with cluster.browser() as browser:
        answer = browser.get("/static/" + "p" * 4000 + "?q=" + "a" * 3000, headers={"User-Agent": "u" * 7000})
    line = cluster.nginx.logged(answer.headers["x-request-id"])
    assert len(line) < 2000, len(line)
    assert "/static/ppp" in line and "p...?q=aaa" in line and 'a... HTTP/1.1"' in line and '"uuu' in line
    assert line.rstrip().endswith('u..."')


def test_a_protected_endpoints_authorization_goes_through_nginx_and_leaves_no_secret_in_its_log(
    cluster: Cluster,
) -> None:
    owner = cluster.learners[2]
    base = cluster.nginx.base
    with cluster.browser(owner) as browser:
        made = browser.post("/api/endpoints", json={"server": "demo-orders", "auth": "oauth"})
        assert made.status_code == 201, made.text
        url = made.json()["url"]
        cluster.secrets.add(url.rsplit("/", 1)[1])
        refused = httpx.post(url, json=init_request(version="2025-11-25"), timeout=30)
        assert refused.status_code == 401
        metadata_url = re.search(r'resource_metadata="([^"]+)"', refused.headers["www-authenticate"])[1]  # type: ignore[index]
        assert metadata_url.startswith(
            base + "/.well-known/oauth-protected-resource/mcp/"
        )  # the site as reached
        issuer = httpx.get(metadata_url, timeout=30).json()["authorization_servers"][0]
        assert (
            issuer == base
            and httpx.get(base + "/.well-known/oauth-authorization-server", timeout=30).json()["issuer"]
            == base
        )
        client = httpx.post(base + "/register", json={"redirect_uris": ["http://127.0.0.1:9/cb"],
                                                     "token_endpoint_auth_method": "none"}, timeout=30).json()  # fmt: skip
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        asked = httpx.get(base + "/authorize", params={
            "response_type": "code", "client_id": client["client_id"], "redirect_uri": "http://127.0.0.1:9/cb",
            "state": "s", "code_challenge": challenge, "code_challenge_method": "S256", "resource": url}, timeout=30)  # fmt: skip
        consent = asked.headers["location"]
        cluster.secrets.add(consent.rsplit("/", 1)[1])
        assert (
            browser.get(consent).status_code == 200
        )  # the owner, on whichever replica the balancer gives them
        answered = browser.post(consent, data={"answer": "allow"})
    code = parse_qs(urlsplit(answered.headers["location"]).query)["code"][0]
    cluster.secrets.add(code)
    tokens = httpx.post(base + "/token", data={"grant_type": "authorization_code", "code": code,
                                               "redirect_uri": "http://127.0.0.1:9/cb", "client_id": client["client_id"],
                                               "code_verifier": verifier}, timeout=30).json()  # fmt: skip
    cluster.secrets.update({tokens["access_token"], tokens["refresh_token"]})
    headers = {
        "Authorization": f"Bearer {tokens['access_token']}",
        "Accept": "application/json, text/event-stream",
    }
    assert (
        httpx.post(url, json=init_request(version="2025-11-25"), headers=headers, timeout=30).status_code
        == 200
    )
    assert "/oauth/consent/[redacted]" in cluster.nginx.access_log.read_text()
    assert_no_secrets(cluster)


def assert_no_secrets(cluster: Cluster) -> None:
    logs = {path.name: path.read_text() for path in cluster.nginx.dir.glob("*.log")}
    for name, text in logs.items():
        for secret in cluster.secrets:
            assert secret not in text, f"{name} holds a secret"
            if "." in secret:  # a learner cookie: its id alone is a secret too
                assert learner_id_of(secret) not in text, f"{name} holds a learner id"


def mcp_initialize(url: str) -> httpx.Response:
    accept = {"Accept": "application/json, text/event-stream"}
    return httpx.post(url, json=init_request(version="2025-11-25"), headers=accept, timeout=30)


def endpoint_served_by(cluster: Cluster, port: int) -> tuple[str, str]:
    """A new endpoint whose token the balancer hashes to this replica: its URL, and an MCP session on it."""
    for learner in cluster.learners[3:23]:  # each token lands on either replica, as by a coin
        with cluster.browser(learner) as browser:
            made = browser.post("/api/endpoints", json={"server": "demo-orders"})
        assert made.status_code == 201, made.text
        url = made.json()["url"]
        cluster.secrets.add(url.rsplit("/", 1)[1])
        reply = mcp_initialize(url)
        assert reply.status_code == 200, reply.text
        if cluster.nginx.served_by(reply) == port:
            return url, reply.headers["mcp-session-id"]
    raise AssertionError("20 endpoints and none hashed to one of two replicas")


def test_a_replica_killed_with_sigkill_sends_its_learners_to_the_other_with_their_progress(
    cluster: Cluster,
) -> None:
    """Last in the file: it leaves one replica dead."""
    counts = Counter(learner.replica for learner in cluster.learners)
    victim = max(counts, key=lambda port: counts[port])
    survivor = cluster.other(victim)
    moved = [learner for learner in cluster.learners if learner.replica == victim]
    endpoint, mcp_session = endpoint_served_by(cluster, victim)  # its MCP client must move too

    assert cluster.replicas[victim].stop(signal.SIGKILL) == -signal.SIGKILL
    # First the MCP client of an endpoint that hashed to the dead replica (its URL, token and all, is
    # the request nginx fails to pass on): its MCP session is gone (404), and it starts a new one on the
    # survivor (the endpoint itself is in PostgreSQL).
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": mcp_session,
               "MCP-Protocol-Version": "2025-11-25"}  # fmt: skip
    gone = httpx.post(endpoint, json=ping, headers=headers, timeout=30)
    assert gone.status_code == 404  # answered by the survivor, after nginx found the dead one refusing
    assert re.search(rf" upstream=127.0.0.1:{victim}, 127.0.0.1:{survivor} upstream_status=502, 404 ",
                     cluster.nginx.logged(gone.headers["x-request-id"]))  # fmt: skip
    reply = mcp_initialize(endpoint)
    assert reply.status_code == 200 and reply.json()["result"]["serverInfo"]["name"] == "demo-orders"
    assert cluster.nginx.served_by(reply) == survivor

    for learner in moved:
        with cluster.browser(learner) as browser:
            progress = browser.get("/api/progress")
            assert progress.status_code == 200
            assert cluster.nginx.served_by(progress) == survivor
            body = progress.json()
            assert body["display_name"] == learner.name and body["steps"][STEP]["seen"] is True
    # The learners who were on the survivor stay there.
    stayed = next(learner for learner in cluster.learners if learner.replica == survivor)
    with cluster.browser(stayed) as browser:
        assert cluster.nginx.served_by(browser.get("/api/progress")) == survivor

    assert_no_secrets(cluster)  # the error log too: the failed connections carried tokens in their URLs
