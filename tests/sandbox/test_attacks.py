"""Every attack in tests/sandbox/attacks.py, tried from inside a real instance, as root and in
rootless mode: each is denied. And ordinary learner code still works there.

The attacker is tests/fixtures/attack_server.py, registered only here; it runs each attempt in a
forked child, so an attempt the filter kills ends only that child.
"""

from __future__ import annotations

import json
from pathlib import Path

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


async def test_an_extra_demo_module_shows_only_its_own_file(attack_app: AppProcess) -> None:
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    client = await _attacker(attack_app)
    try:
        own = json.loads(
            await client.tool(
                2, "attempt", code=f"result = len(open({str(fixtures / 'attack_server.py')!r}).read())"
            )
        )
        sibling = json.loads(
            await client.tool(
                3, "attempt", code=f"result = open({str(fixtures / 'learner_code.py')!r}).read(10)"
            )
        )
        folder = json.loads(await client.tool(4, "attempt", code=f"result = os.listdir({str(fixtures)!r})"))
    finally:
        await client.close()
    assert "ok" in own, own  # its own module file is there (read-only)
    assert sibling == {"errno": "ENOENT"}, sibling  # a file beside it is not
    assert folder == {"ok": repr(["attack_server.py"])}, folder
