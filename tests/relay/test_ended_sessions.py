"""The ended HTTP sessions kept for a learner's traffic view: bounded in number and in their
transcripts' bytes, whatever one address does."""

from __future__ import annotations

from types import SimpleNamespace

from app.config import Settings
from app.protocol.jsonrpc import to_line
from app.protocol.transcript import Transcript
from app.relay.httpwire import ENDED_KEPT, ENDED_KEPT_BYTES, HttpListener, HttpSessions
from app.relay.wire import WireLimits

LIMITS = WireLimits.from_settings(Settings())


def full_session(number: int, endpoint_id: str) -> HttpListener:
    """A session whose client filled its transcript (2 MiB of lines) before it ended."""
    transcript = Transcript("demo-orders")
    for n in range(4):
        message = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "ping",
            "params": {"_meta": {"pad": "p" * (512 * 1024)}},
        }
        transcript.add_client(to_line(message), message)
    session = SimpleNamespace(id=f"session-{number}", transcript=transcript, client_pace=None)
    return HttpListener(session, endpoint_id, LIMITS)  # type: ignore[arg-type]


def test_one_address_ending_session_after_session_holds_a_bounded_number_of_bytes() -> None:
    """From the side of a client that fills a session's transcript, ends it, and goes on with the next,
    on endpoint after endpoint: 200 ended sessions of 2 MiB each were kept for the traffic view."""
    sessions = HttpSessions()
    for n in range(60):
        listener = full_session(n, f"endpoint-{n // ENDED_KEPT}")
        sessions.add(listener)
        sessions.remove(listener)
    kept = sum(item.session.transcript.size_bytes for item in sessions.ended)
    assert kept <= ENDED_KEPT_BYTES, kept
    newest = sessions.recently_ended(f"endpoint-{59 // ENDED_KEPT}")
    assert newest and newest[-1].session.id == "session-59"  # the newest stay
    assert sessions.recently_ended("endpoint-0") == []  # the oldest went


def test_an_ended_session_keeps_nothing_for_its_stream() -> None:
    sessions = HttpSessions()
    listener = full_session(1, "endpoint")
    sessions.add(listener)
    listener._keep_for_stream("x" * 1000)
    sessions.remove(listener)
    assert listener._stream_bytes == 0 and not listener._stream
