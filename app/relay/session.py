"""A relay session: one sandboxed instance, its transcript, and the pumps that read its output.

A session outlives a dropped connection for a grace period (see hub.py); whoever is attached
(a Listener, one of the wire modes) hears every line, stderr chunk and state change.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any, Protocol

from app.metrics import Metrics
from app.protocol.jsonrpc import Frame, FrameError, parse_json, server_exited_error
from app.protocol.transcript import Entry, Transcript
from app.sandbox.errors import OutputLimitError, SandboxError
from app.sandbox.instance import Instance
from app.sandbox.launcher import ExitStatus
from app.sandbox.manager import SessionManager

log = logging.getLogger(__name__)


class Listener(Protocol):
    async def on_server_entry(self, entry: Entry) -> None: ...
    async def on_stderr(self, text: str, at_ms: float) -> None: ...
    async def on_state(self) -> None: ...
    async def on_ended(self, code: int, reason: str) -> None: ...
    async def on_bad_frame(self, error: FrameError, seq: int | None = None) -> None: ...


class RelaySession:
    def __init__(self, manager: SessionManager, server: str, learner: str, metrics: Metrics, *,
                 class_id: str | None = None, class_cap: int | None = None) -> None:  # fmt: skip
        self.id = secrets.token_urlsafe(12)
        self.manager = manager
        self.server = server
        self.learner = learner
        self.metrics = metrics
        self.class_id = class_id
        self.class_cap = class_cap
        self.transcript = Transcript(server=server)
        self.instance: Instance | None = None
        self.status = "starting"
        self.exit_status: ExitStatus | None = None
        self.reason: str | None = None
        self.listener: Listener | None = None
        self.closed = False
        self.created_at = time.monotonic()
        self._pumps: list[asyncio.Task] = []
        self._end_reason: tuple[int, str] | None = None  # set when we end it on purpose (reaped, limits)

    def state_frame(self) -> dict[str, Any]:
        return {
            "type": "state",
            "session": self.id,
            "server": self.server,
            "status": self.status,
            "exit_status": self.exit_status.to_json() if self.exit_status else None,
            "reason": self.reason,
            "revision": self.transcript.revision,
        }

    async def open(self) -> None:
        """Take an instance (raises SandboxError/CapacityError) and start reading it."""
        self.status, self.exit_status, self.reason, self._end_reason = "starting", None, None, None
        instance = await self.manager.acquire(
            self.server, self.learner, on_reap=self._reaped, class_id=self.class_id, class_cap=self.class_cap
        )
        self.instance = instance
        self.status = "ready"
        self._pumps = [
            asyncio.create_task(self._pump_stdout(instance), name=f"stdout-{self.id}"),
            asyncio.create_task(self._pump_stderr(instance), name=f"stderr-{self.id}"),
        ]

    async def send(self, frame: Frame) -> Entry:
        """Record a validated client message and write its line to the server's stdin."""
        if self.instance is None or self.status != "ready":
            raise SandboxError("The demo server is not running.", reason="not_running", status_code=409)
        entry = self.transcript.add_client(frame.line, frame.message)  # before the write: replies pair up
        await self.instance.write_line(frame.line)
        self.metrics.relay_messages.labels("client").inc()
        return entry

    async def restart(self) -> None:
        """End this instance and start a fresh one with an empty transcript."""
        await self._stop_instance()
        self.transcript = Transcript(server=self.server)
        await self.open()

    async def close(self) -> None:
        self.closed = True
        await self._stop_instance()

    async def _stop_instance(self) -> None:
        instance, self.instance = self.instance, None
        for task in self._pumps:
            task.cancel()
        self._pumps = []
        if instance is not None:
            await self.manager.release(instance)

    def _reaped(self, reason: str) -> None:
        self._end_reason = (1000, f"session {reason}")

    async def _pump_stdout(self, instance: Instance) -> None:
        try:
            while (line := await instance.read_line()) is not None:
                message, error = parse_json(line)
                entry = self.transcript.add_server(line, None if error else message)
                self.metrics.relay_messages.labels("server").inc()
                if self.listener is not None:
                    await self.listener.on_server_entry(entry)
        except OutputLimitError as exc:
            self._end_reason = (1011, exc.message)
            instance.kill()
        except asyncio.CancelledError:
            return
        await instance.exited.wait()
        await self._exited(instance)

    async def _pump_stderr(self, instance: Instance) -> None:
        try:
            while (text := await instance.read_stderr()) is not None:
                if self.listener is not None:
                    await self.listener.on_stderr(text, self.transcript.now_ms())
        except asyncio.CancelledError:
            return

    async def _exited(self, instance: Instance) -> None:
        status = instance.poll()
        self.status, self.exit_status = "exited", status
        code, reason = self._end_reason or (1011, f"the demo server {status}")
        self.reason = reason
        self.metrics.sessions_ended.labels("reaped" if code == 1000 else "exited").inc()
        log.info("session %s: %s", self.id, reason, extra={"session": self.id, "server": self.server})
        await self.manager.release(instance)
        if self.instance is instance:
            self.instance = None
        if self.listener is not None:
            # Requests left hanging get an answer from the relay, so no client waits forever.
            for request in self.transcript.unanswered():
                await self.listener.on_bad_frame(server_exited_error(request.message["id"], str(status)))
            await self.listener.on_state()
            await self.listener.on_ended(code, reason)
