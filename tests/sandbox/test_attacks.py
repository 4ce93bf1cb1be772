"""Every attack in tests/sandbox/attacks.py, tried from inside a real instance, as root and in
rootless mode: each is denied. And ordinary learner code still works there.

The attacker is tests/fixtures/attack_server.py, registered only here; it runs each attempt in a
forked child, so an attempt the filter kills ends only that child.
"""

from __future__ import annotations

import json

import pytest

from tests.fixtures.learner_code import EXPECTED
from tests.sandbox.attacks import ATTACKS, is_denied
from tests.support.appserver import AppProcess
from tests.support.wsclient import McpClient

ATTACKER = {"extra_demo_modules": ["tests.fixtures.attack_server"], "warm_pool_size": 1}
MODES = {"root": {}, "rootless": {"rootless_sandbox": True}}


@pytest.fixture(scope="module", params=sorted(MODES))
def attack_app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    with AppProcess(
        tmp_path_factory.mktemp(f"attack-{request.param}"), **ATTACKER, **MODES[request.param]
    ) as app:
        yield app


async def _attacker(app: AppProcess) -> McpClient:
    client = await McpClient.connect(app.ws_base + "/ws/test-attack")
    await client.initialize()
    return client


async def test_every_attack_is_denied_inside_an_instance(attack_app: AppProcess) -> None:
    client = await _attacker(attack_app)
    try:
        outcomes = json.loads(await client.tool(2, "attempts", codes={a.name: a.code for a in ATTACKS}))
        # The instance itself lives on: a killed attempt ended only its own child.
        assert (await client.call(3, "ping"))["result"] == {}
    finally:
        await client.close()
    got_through = {a.name: outcomes[a.name] for a in ATTACKS if not is_denied(a, outcomes[a.name])}
    assert got_through == {}


async def test_ordinary_learner_code_works_inside_an_instance(attack_app: AppProcess) -> None:
    client = await _attacker(attack_app)
    try:
        report = json.loads(await client.tool(2, "learner_code"))
    finally:
        await client.close()
    assert {key: report.get(key) for key in EXPECTED} == EXPECTED, report
