"""The sample messages each demo server declares (the console's templates) work on that server."""

from __future__ import annotations

import pytest

from app.demos import GENERIC_SAMPLES, DemoServer, load_registry
from app.protocol import messages
from app.protocol.revisions import validate_message
from app.web.pages import DEFAULT_REVISION, PLAYGROUND_REVISIONS
from tests.support.rawclient import RawClient, envelope

REGISTRY = load_registry()
DEMOS = [demo for demo in REGISTRY.values() if demo.module is not None]  # not a learner's own


@pytest.mark.parametrize("demo", DEMOS, ids=lambda demo: demo.name)
def test_every_sample_gets_a_result_from_its_own_server(demo) -> None:  # noqa: ANN001
    assert demo.samples and demo.samples != GENERIC_SAMPLES, f"{demo.name} declares no samples of its own"
    assert demo.module is not None
    stateless = demo.name == "demo-stateless"
    with RawClient(demo.module) as client:
        if not stateless:
            client.initialize()
        for sample in demo.samples:
            params = dict(sample.get("params", {}))
            if stateless:
                params["_meta"] = envelope()
            reply, _notes = client.until_response(client.request(sample["method"], params))
            assert "result" in reply, (demo.name, sample, reply)


def test_a_server_that_declares_none_offers_the_generic_lists() -> None:
    # As for a learner's own server, whose tools nobody knows in advance.
    plain = DemoServer(name="x", title="X", description="x", module=None)  # type: ignore[arg-type]
    assert [s["method"] for s in plain.public()["samples"]] == [
        "tools/list",
        "resources/list",
        "prompts/list",
    ]


def test_a_malformed_samples_list_refuses_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.demos import orders

    monkeypatch.setitem(orders.INFO, "samples", [{"params": {}}])
    with pytest.raises(ValueError, match='INFO\\["samples"\\]'):
        load_registry()


def test_the_samples_are_valid_messages_in_the_servers_revision() -> None:
    for demo in DEMOS:
        stateless = demo.name == "demo-stateless"
        revision = PLAYGROUND_REVISIONS.get(demo.name, DEFAULT_REVISION)  # what its console starts in
        for sample in demo.samples:
            params = {**sample.get("params", {}), **({"_meta": envelope()} if stateless else {})}
            assert validate_message(messages.request(1, sample["method"], params), revision) == [], (
                demo.name,
                sample,
            )
