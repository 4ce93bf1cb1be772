"""bench/profile.py's split of py-spy samples into the parts of a round trip."""

from bench.profile import OTHER, categorize

RAW = "\n".join(
    [
        # our validation runs inside the framing's callbacks: the more specific part wins
        "run (uvicorn/protocols/websockets/x.py:1);on_text (app/relay/wire.py:5);parse (app/protocol/jsonrpc.py:9) 7",
        "run (uvicorn/protocols/websockets/x.py:1);send (websockets/frames.py:3) 5",
        "data_received (app/web/wsprotocol.py:130);text_now (app/relay/wire.py:5) 2",
        "pump (app/relay/session.py:2);add_server (app/protocol/transcript.py:4) 3",
        "write_line (app/sandbox/instance.py:101) 2",
        # as py-spy names the sandbox's files in the web process: without their folder
        "pump (app/relay/session.py:153);Instance.read_line (instance.py:109) 6",
        "run_once (asyncio/base_events.py:1) 4",
        "not a sample line",
    ]
)


def test_each_sample_counts_once_under_the_most_specific_part() -> None:
    counts = categorize(RAW)
    assert counts == {
        "validation": 7,
        "framing (WebSocket and ASGI)": 7,
        "transcript": 3,
        "pipe (write and read the server's stdio)": 8,
        OTHER: 4,
    }


def test_no_samples_gives_nothing() -> None:
    assert categorize("") == {}
