"""Rootless mode: the sandbox built inside a user namespace, as the app does when not run as root.

Forced here with PLAYGROUND_ROOTLESS_SANDBOX (the tests run as root): the namespaces, the read-only
root (whose mounts are locked in a user namespace), the dropped capabilities and seccomp all go
through the user-namespace path. Only the per-instance uid is missing, and /healthz says so.
"""

from __future__ import annotations

import json
import os
import socket

import httpx
import pytest

from tests.support.appserver import AppProcess
from tests.support.procs import descendants
from tests.support.wsclient import McpClient


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    settings = {
        "rootless_sandbox": True,
        "extra_demo_modules": ["tests.fixtures.probe_server"],
        "warm_pool_size": 1,
    }
    with AppProcess(tmp_path_factory.mktemp("rootless"), **settings) as app:
        yield app


def test_health_names_the_one_missing_layer(app: AppProcess) -> None:
    health = httpx.get(app.base + "/healthz", timeout=30).json()
    layers = health["sandbox"]["layers"]
    assert health["status"] == "degraded"
    assert {name for name, why in layers.items() if why != "ok"} == {"uid"}
    assert "rootless mode" in layers["uid"]


async def test_instances_are_confined_without_a_uid_of_their_own(app: AppProcess) -> None:
    client = await McpClient.connect(app.ws_base + "/ws/test-probe")
    try:
        await client.initialize()
        assert json.loads(await client.tool(2, "whoami"))["pid"] == 1
        assert (await client.tool(3, "exec_shell")).startswith("failed: errno=1 ")
        assert (await client.tool(4, "open_socket", family="AF_INET")).startswith("failed")
        assert (await client.tool(5, "read_file", path="/etc/passwd")).startswith("failed")
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            port = listener.getsockname()[1]
            assert (await client.tool(6, "connect", host="127.0.0.1", port=port)).startswith("failed")
        servers = [p for p in descendants(app.proc.pid) if len(p.status.get("NSpid", "").split()) == 2]
        assert servers, "no sandboxed server below the app"
        own_net = os.readlink("/proc/self/ns/net")
        for proc in servers:
            assert proc.status["CapEff"] == "0000000000000000"
            assert proc.status["CapBnd"] == "0000000000000000"
            assert proc.status["NoNewPrivs"] == "1" and proc.status["Seccomp"] == "2"
            assert proc.ns("net") != own_net
            assert proc.ns("user") != os.readlink("/proc/self/ns/user")
    finally:
        await client.close()
