"""The editor's syntax checks from the attacker's side (app/web/file_checks.py): a server.ts check
starts a Node process, so an address saving text after text at once gets one check at a time, and
another address's save takes its turn beside the flood rather than after it; a file checked once is
not checked again when the editor opens."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest

from app.web.learner import COOKIE
from app.workspace import typescript
from tests.support.inprocess import ServedApp

FLOOD = 12


class Counted:
    """typescript.transpile, counting the Node processes it runs at once, and in all."""

    def __init__(self) -> None:
        self.real = typescript.transpile
        self.lock = threading.Lock()
        self.running = self.most = self.calls = 0

    def __call__(self, source: str) -> typescript.Transpiled:
        with self.lock:
            self.running += 1
            self.calls += 1
            self.most = max(self.most, self.running)
        try:
            return self.real.__wrapped__(source)  # no cache: every text runs Node, as a new text does
        finally:
            with self.lock:
                self.running -= 1


@pytest.mark.skipif(bool(typescript.missing()), reason="the TypeScript runtime is not installed")
async def test_an_address_saving_many_server_ts_at_once_gets_one_check_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted()
    monkeypatch.setattr(typescript, "transpile", counted)
    with ServedApp(tmp_path) as app:
        finished: list[str] = []
        flooder = httpx.AsyncClient(base_url=app.base, timeout=60, cookies={COOKIE: app.learner_cookie("flooder")},
                                    headers={"X-Forwarded-For": "203.0.113.1", "Origin": app.base})  # fmt: skip
        neighbour = httpx.AsyncClient(base_url=app.base, timeout=60, cookies={COOKIE: app.learner_cookie("next")},
                                      headers={"X-Forwarded-For": "203.0.113.2", "Origin": app.base})  # fmt: skip
        async with flooder, neighbour:

            async def save(who: str, client: httpx.AsyncClient, text: str) -> None:
                reply = await client.put("/api/workspace/server.ts", content=text)
                assert reply.status_code == 200, reply.text
                finished.append(who)

            flood = [
                asyncio.create_task(save("flood", flooder, f"const n{n} = {n};\n")) for n in range(FLOOD)
            ]
            await asyncio.sleep(0)
            await save("neighbour", neighbour, "const mine = 1;\n")
            await asyncio.gather(*flood)
            assert counted.most == 1  # one Node process at a time, whatever the flood
            assert finished.index("neighbour") < FLOOD  # its turn came before the flood's end
            # Opening the editor again checks nothing: the saved file's result is kept.
            calls = counted.calls
            state = await neighbour.get("/api/workspace", params={"file": "server.ts"})
            assert state.status_code == 200 and state.json()["diagnostics"] == []
            assert counted.calls == calls
