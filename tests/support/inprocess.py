"""The app built in this process (create_app over PlainSource: plain subprocesses, no sandbox), for
tests of pages and JSON APIs. Its lifespan runs once, in Starlette's TestClient; every client a test
asks for shares that lifespan's event loop and keeps its own cookies, as separate browsers do.

Starts in well under a second, against seconds for `python -m app` (tests/support/appserver.py),
which stays for what needs the real process: the sandbox, the privilege drop, the process's memory.
ServedApp serves the same app on a real port, for clients that need a socket."""

from __future__ import annotations

import itertools
import logging
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from starlette.testclient import TestClient

from app import logs
from app.__main__ import server_config
from app.config import Settings
from app.demos import load_registry
from app.main import create_app
from tests.support.appserver import START_TIMEOUT_S, STOP_TIMEOUT_S, Pages, free_port
from tests.support.lessons import LESSONS, course
from tests.support.plainproc import PlainSource

BASE = "http://127.0.0.1:8000"  # a loopback name: the Host rule (app/web/guard.py) accepts it
_ports = itertools.count(40000)  # each client its own source port, on one loopback address


def build(data_dir: Path, **settings: Any) -> tuple[Settings, PlainSource, FastAPI]:
    """The app for `settings` over plain subprocesses (every demo server of its registry), its data
    folder made, and the course parsed once per test process when it reads lessons/ (half a second a
    parse; another folder the app parses itself)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    built = Settings(data_dir=data_dir, **settings)
    demos = load_registry(built.extra_demo_modules)
    source = PlainSource({name: demo.module for name, demo in demos.items() if demo.module})
    catalog = course() if built.lessons_dir.resolve() == LESSONS.resolve() else None
    return built, source, create_app(built, process_source=source, catalog=catalog)


class SharedClient(TestClient):
    """A TestClient that uses the app's running lifespan: entering it (`with`) only closes it at the
    end, as an httpx.Client's does, and never starts a second lifespan."""

    def __enter__(self) -> SharedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InProcessApp:
    """Mirrors AppProcess's client side (`base`, `client`, `post`, `learner_cookie`), so a test reads
    the same either way."""

    def __init__(self, data_dir: Path, **settings: Any) -> None:
        self.data_dir = data_dir
        self.settings, self.source, self.app = build(data_dir, **settings)
        self.base = BASE
        self._lifespan = TestClient(self.app, base_url=BASE)
        self._clients: list[SharedClient] = []
        self._learners: dict[str, str] = {}

    @property
    def state(self) -> Any:
        return self.app.state.playground

    def start(self) -> InProcessApp:
        self._lifespan.__enter__()  # runs the lifespan's start-up, in the portal's event loop
        return self

    def stop(self) -> None:
        for client in self._clients:
            client.close()
        self._lifespan.__exit__(None, None, None)
        self.source.remove_files()

    def __enter__(self) -> InProcessApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def client(self, **kwargs: Any) -> SharedClient:
        """A client acting as a page of this site (its state changes carry this site's Origin), with
        httpx's defaults: redirects are not followed, cookies are its own. The app closes every client
        when it stops, so a test may leave one open."""
        kwargs["headers"] = {"Origin": self.base, **kwargs.get("headers", {})}
        return self.plain_client(**kwargs)

    def plain_client(self, address: str = "127.0.0.1", **kwargs: Any) -> SharedClient:
        """A client that sends only the headers given (no Origin), as an httpx.Client does, from
        `address` (as the app sees the peer)."""
        kwargs.pop("timeout", None)  # nothing to wait on: the app answers in this process
        client = SharedClient(self.app, base_url=self.base, follow_redirects=False,
                              client=(address, next(_ports)), **kwargs)  # fmt: skip
        # The lifespan's event loop: the app's sessions, processes and timers live there. TestClient
        # sends a request through its `portal` when one is set, else through a new loop per request.
        client.portal = self._lifespan.portal
        self._clients.append(client)
        return client

    def request(self, method: str, path: str, cookies: Any = None, **kwargs: Any) -> httpx.Response:
        """One request with only the headers given (no Origin), as `httpx.request` sends it."""
        kwargs.pop("timeout", None)
        return self.plain_client(cookies=cookies).request(method, path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        """One GET from a client of its own (no cookies unless given)."""
        return self.client(headers=kwargs.pop("headers", {}), cookies=kwargs.pop("cookies", None)).get(
            path, **kwargs
        )

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        """One POST from a page of this site (see `client`)."""
        return self.client(headers=kwargs.pop("headers", {}), cookies=kwargs.pop("cookies", None)).post(
            path, **kwargs
        )

    def learner_cookie(self, name: str = "learner") -> str:
        """A learner identity as a browser gets one (see AppProcess.learner_cookie)."""
        if name not in self._learners:
            from app.web.learner import COOKIE

            response = self.post("/api/identity")
            response.raise_for_status()
            self._learners[name] = response.cookies[COOKIE]
        return self._learners[name]

    def metric(self, name: str, labels: str = "") -> float:
        """One sample of the app's /metrics (`labels` as written there: `{what="saves"}`); 0 when absent."""
        text = self.get("/metrics").text
        found = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.M)
        return float(found.group(1)) if found else 0.0


class ServedApp(Pages):
    """The app built in this process over PlainSource and served by a real uvicorn (the settings
    `python -m app` serves it with) on a free loopback port, in a thread: real sockets, WebSockets and
    streams for a test's clients, without the sandbox, root's drop or a process to start (about 0.5 s
    of CPU, against 4 for `python -m app`). For tests of the relay, the endpoints and the pages that
    are not about the sandbox or the process itself."""

    def __init__(self, data_dir: Path, **settings: Any) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self._learners: dict[str, str] = {}
        self.settings, self.source, self.app = build(data_dir, port=self.port, **settings)
        self._config = server_config(self.app, self.settings)
        self._server = uvicorn.Server(self._config)
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self.log_path = data_dir / f"app-{self.port}.log"
        self._log = logging.FileHandler(self.log_path, encoding="utf-8", delay=True)
        self._log.setFormatter(logs.TextFormatter())
        # The tests' own clients log in this thread; the app logs in its server's thread (and its
        # executors'), as its own process would. Two apps served side by side share their records.
        self._log.addFilter(lambda record: record.thread != threading.main_thread().ident)
        self._root_level = logging.getLogger().level

    @property
    def state(self) -> Any:
        return self.app.state.playground

    def _serve(self, sock: socket.socket) -> None:
        try:
            self._server.run(sockets=[sock])
        except BaseException as exc:  # start() reports it
            self._failure = exc
        finally:
            sock.close()

    def log(self) -> str:
        """What the app logged while it ran, as `python -m app` writes it."""
        self._log.flush()
        return super().log()

    def start(self) -> ServedApp:
        root = logging.getLogger()
        root.addHandler(self._log)
        root.setLevel(logging.INFO)  # as logs.configure leaves it
        logs.redact_uvicorn()
        sock = self._config.bind_socket()
        self._thread = threading.Thread(
            target=self._serve, args=(sock,), name=f"app-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the app did not start: {self._failure!r}\n{self.log()}")
            time.sleep(0.01)  # polling with a deadline, not a fixed wait
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(STOP_TIMEOUT_S)
            assert not self._thread.is_alive(), "the app did not stop"
            self._thread = None
        root = logging.getLogger()
        root.removeHandler(self._log)
        root.setLevel(self._root_level)
        self._log.close()
        self.source.remove_files()

    def __enter__(self) -> ServedApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
