"""Run the real app (`python -m app`) on a free loopback port, as a user would, and end it."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
# The fork server imports the SDK and every demo server first; a busy 2-core machine is slow.
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
# One TLS context for every HTTP client made here. httpx builds a new one for each client that is not
# given one (about 30 ms of CPU: it reads every CA certificate), and a start polls /healthz many times.
TLS = ssl.create_default_context()


# Every port free_port has handed out in this run. A port is bound only later, by the process it is
# for (a replica, nginx, PostgreSQL), and until then the kernel may offer it again: a run once gave
# nginx a replica's port, and nginx's tests then talked to the replica straight.
_HANDED_OUT: set[int] = set()
_HANDING_OUT = threading.Lock()


def free_port() -> int:
    """A loopback port nothing listens on now and that this run has not handed out before."""
    with _HANDING_OUT:
        while True:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            if port not in _HANDED_OUT:
                _HANDED_OUT.add(port)
                return port


def learner_id_of(cookie: str) -> str:
    """The learner id inside a signed learner cookie (`<id>.<signature>`, or `<id>~<generation>.<signature>`)."""
    return cookie.rpartition(".")[0].partition("~")[0]


class Pages:
    """What a test does as a visitor of an app served on `self.port`: pages, APIs, WebSockets."""

    port: int
    log_path: Path
    _learners: dict[str, str]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def client(self, **kwargs: Any) -> httpx.Client:
        """An HTTP client that acts as a page of this site does: its state changes carry this site's
        Origin (the app refuses them from anywhere else)."""
        kwargs["headers"] = {"Origin": self.base, **kwargs.get("headers", {})}
        kwargs.setdefault("timeout", 30)
        kwargs.setdefault("verify", TLS)
        return httpx.Client(base_url=self.base, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        """One POST from a page of this site (see `client`)."""
        kwargs["headers"] = {"Origin": self.base, **kwargs.get("headers", {})}
        kwargs.setdefault("timeout", 30)
        kwargs.setdefault("verify", TLS)
        return httpx.post(self.base + path, **kwargs)

    def learner_cookie(self, name: str = "learner") -> str:
        """A learner identity as a browser gets one: the signed cookie from a console page's first
        request for one (reading pages makes none), made once per `name` and kept, so a test can be
        the same learner again (or a different one)."""
        if name not in self._learners:
            from app.web.learner import COOKIE

            response = self.post("/api/identity")
            response.raise_for_status()
            self._learners[name] = response.cookies[COOKIE]
        return self._learners[name]

    def save_server(self, learner: str, source: str | bytes) -> None:
        """Save `source` as `learner`'s server.py through the workspace API, as the page's editor does."""
        from app.web.learner import COOKIE

        with self.client(cookies={COOKIE: self.learner_cookie(learner)}) as page:
            reply = page.put("/api/workspace/server.py", content=source)
        assert reply.status_code == 200, reply.text

    def learner_headers(self, learner: str) -> dict[str, str]:
        """The Cookie header of `learner`, for a WebSocket client."""
        from app.web.learner import COOKIE

        return {"Cookie": f"{COOKIE}={self.learner_cookie(learner)}"}

    def log(self) -> str:
        """The end of what the app has logged (nothing yet: empty)."""
        try:
            return self.log_path.read_text(errors="replace")[-8000:]
        except OSError:
            return ""


class AppProcess(Pages):
    """`python -m app` as a subprocess: the sandbox, root's drop, every layer as deployed."""

    def __init__(self, data_dir: Path, **settings: object) -> None:
        self.port = free_port()
        self.data_dir = data_dir
        self.host = str(settings.pop("host")) if "host" in settings else None  # --host, not a setting
        self.settings = settings
        self.proc: subprocess.Popen | None = None
        self._learners: dict[str, str] = {}
        self.log_path = data_dir / f"app-{self.port}.log"
        self.uid_base = int(settings.pop("uid_base", 1_000_000 + self.port * 1000))  # type: ignore[call-overload]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYGROUND_")}
        env["PLAYGROUND_DATA_DIR"] = str(self.data_dir)
        # Each test app gets its own uid range, so apps running side by side never share a uid.
        env["PLAYGROUND_UID_BASE"] = str(self.uid_base)
        for key, value in self.settings.items():
            env[f"PLAYGROUND_{key.upper()}"] = value if isinstance(value, str) else json.dumps(value)
        env["PYTHONPATH"] = str(ROOT)
        return env

    def start(self) -> AppProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        host = ["--host", self.host] if self.host else []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", "--port", str(self.port), *host],
            cwd=ROOT, env=self.env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        with httpx.Client(timeout=2, verify=TLS) as probe:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the app exited with {self.proc.returncode}:\n{self.log()}")
                try:
                    if probe.get(self.base + "/healthz").status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)  # polling with a deadline, not a fixed wait
        self.stop()
        raise RuntimeError(f"the app did not answer /healthz in {START_TIMEOUT_S} s:\n{self.log()}")

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT_S)
        return self.proc.returncode

    def __enter__(self) -> AppProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
