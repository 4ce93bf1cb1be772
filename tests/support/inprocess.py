"""The app built in this process (create_app over PlainSource: plain subprocesses, no sandbox), for
tests of pages and JSON APIs. Its lifespan runs once, in Starlette's TestClient; every client a test
asks for shares that lifespan's event loop and keeps its own cookies, as separate browsers do.

Starts in well under a second, against seconds for `python -m app` (tests/support/appserver.py),
which stays for what needs the real process: the sandbox, privilege drop, connection guards."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import httpx
from starlette.testclient import TestClient

from app.config import Settings
from app.demos import load_registry
from app.main import create_app
from tests.support.plainproc import PlainSource

BASE = "http://127.0.0.1:8000"  # a loopback name: the Host rule (app/web/guard.py) accepts it
_ports = itertools.count(40000)  # each client its own source port, on one loopback address


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
        data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = data_dir
        self.settings = Settings(data_dir=data_dir, **settings)
        demos = load_registry(self.settings.extra_demo_modules)
        self.source = PlainSource({name: demo.module for name, demo in demos.items() if demo.module})
        self.app = create_app(self.settings, process_source=self.source)
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

    def plain_client(self, **kwargs: Any) -> SharedClient:
        """A client that sends only the headers given (no Origin), as an httpx.Client does."""
        kwargs.pop("timeout", None)  # nothing to wait on: the app answers in this process
        client = SharedClient(self.app, base_url=self.base, follow_redirects=False,
                              client=("127.0.0.1", next(_ports)), **kwargs)  # fmt: skip
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
