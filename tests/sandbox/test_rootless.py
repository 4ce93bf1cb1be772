"""Rootless mode: the sandbox built inside a user namespace, as the app does when not run as root.

Forced here with PLAYGROUND_ROOTLESS_SANDBOX (the tests run as root): the namespaces, the read-only
root (whose mounts are locked in a user namespace), the dropped capabilities and seccomp all go
through the user-namespace path. Only the per-instance uid is missing, and /healthz says so.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket

import httpx
import pytest

from app.config import Settings
from app.sandbox import confine, kernel
from tests.support.appserver import AppProcess
from tests.support.procs import descendants, wait_until
from tests.support.wsclient import McpClient

PROCESSES = Settings.model_fields["max_processes"].default
# An unprivileged uid for the kernel-level test below (outside every app's reserved range).
UNPRIVILEGED_UID = 3_600_000
BUDGET = 6
PR_SET_DUMPABLE = 4


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

        # A warm instance being made (the pool refills) is still root of its user namespace, running
        # the fork server's code only: look when every one seen has locked down (its filter goes on
        # last), and check those.
        servers: list = []

        def all_locked_down() -> bool:
            servers[:] = [p for p in descendants(app.proc.pid) if len(p.status.get("NSpid", "").split()) == 2]
            return bool(servers) and all(p.status.get("Seccomp") == "2" for p in servers)

        assert wait_until(all_locked_down, 30), "no sandboxed server below the app, or one never locked down"
        own_net = os.readlink("/proc/self/ns/net")
        for proc in servers:
            assert proc.status["CapEff"] == "0000000000000000"
            assert proc.status["CapBnd"] == "0000000000000000"
            assert proc.status["NoNewPrivs"] == "1" and proc.status["Seccomp"] == "2"
            assert proc.ns("net") != own_net
            assert proc.ns("user") != os.readlink("/proc/self/ns/user")
    finally:
        await client.close()


def test_each_instance_has_a_user_namespace_and_a_process_limit_of_its_own(app: AppProcess) -> None:
    """RLIMIT_NPROC counts per user namespace and uid: a namespace per instance makes the limit per
    instance although all share one uid (test_nested_user_namespaces_give_each_instance_its_own_budget
    shows the kernel counting so for an unprivileged user)."""
    assert app.proc is not None
    health = httpx.get(app.base + "/healthz", timeout=30).json()
    assert health["sandbox"]["layers"]["rlimits"] == "ok"
    assert "process limit still counts per instance" in health["sandbox"]["layers"]["uid"]
    forkserver = [p for p in descendants(app.proc.pid) if int(p.status["PPid"]) == app.proc.pid][0]

    def checked_instances() -> list[str]:
        """The user namespaces of the instances whose server shows the limit, each in a namespace of
        its own (made as it set up); one starting or ending meanwhile is left out."""
        found = []
        for server in [p for p in descendants(forkserver.pid) if int(p.status["PPid"]) == forkserver.pid]:
            if server.status.get("Seccomp") != "2":
                continue  # still setting up: the filter is loaded last
            try:
                with open(f"/proc/{server.pid}/limits") as handle:
                    limit = next(x for x in handle if x.startswith("Max processes")).split()[2:4]
            except (OSError, StopIteration):
                continue  # it ended while we looked
            assert server.ns("user") not in (None, forkserver.ns("user")), server
            assert limit == [str(PROCESSES)] * 2, limit
            found.append(server.ns("user") or "")
        return found

    assert wait_until(lambda: len(checked_instances()) >= 2, 60)  # the warm pool: one per server
    namespaces = checked_instances()
    assert len(set(namespaces)) == len(namespaces)  # one namespace each


def _instance(nested: bool, proc: int, report: int, hold: int) -> None:
    """One rootless 'instance': its own user namespace (or not), RLIMIT_NPROC = BUDGET, then as many
    children as it may start, each waiting on `hold`; writes how many it got to `report`."""
    if nested:
        confine.enter_instance_user_namespace(proc)
    resource.setrlimit(resource.RLIMIT_NPROC, (BUDGET, BUDGET))
    started = 0
    for _ in range(BUDGET * 4):
        try:
            child = os.fork()
        except BlockingIOError:  # EAGAIN: the process limit
            break
        if child == 0:
            os.read(hold, 1)  # until the test lets go
            os._exit(0)
        started += 1
    os.write(report, f"{started}\n".encode())
    os.read(hold, 1)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break


def _two_instances(nested: bool) -> list[int]:
    """As an unprivileged user in a user namespace of its own (what the rootless fork server is),
    start two instances one after the other, both alive at once; how many children each could start."""
    report_r, report_w = os.pipe()
    hold_r, hold_w = os.pipe()
    leader = os.fork()
    if leader == 0:  # the 'fork server'
        try:
            os.setpgid(0, 0)
            os.close(report_r)
            os.close(hold_w)
            os.setgroups([])
            os.setresgid(UNPRIVILEGED_UID, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
            os.setresuid(UNPRIVILEGED_UID, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
            # As if started by that user: a uid change leaves a process undumpable, its /proc files
            # root's, and the id maps unwritable.
            kernel.prctl(PR_SET_DUMPABLE, 1)
            confine.enter_user_namespace(UNPRIVILEGED_UID, UNPRIVILEGED_UID)
            proc = os.open("/proc", os.O_PATH | os.O_DIRECTORY)
            for _ in range(2):  # one after the other: the second starts once the first has forked
                mine_r, mine_w = os.pipe()
                if os.fork() == 0:
                    try:
                        _instance(nested, proc, mine_w, hold_r)
                    finally:
                        os._exit(0)
                os.close(mine_w)
                os.write(report_w, os.read(mine_r, 64))
                os.close(mine_r)
            while True:
                try:
                    os.wait()
                except ChildProcessError:
                    break
        finally:
            os._exit(0)
    os.close(report_w)
    os.close(hold_r)
    try:
        with os.fdopen(report_r) as reports:
            counts = [int(reports.readline()) for _ in range(2)]  # each once it is done forking
    finally:
        os.close(hold_w)  # every waiting process reads EOF and exits
        deadline_ok = wait_until(lambda: os.waitpid(leader, os.WNOHANG)[0] != 0, 60)
        if not deadline_ok:
            os.killpg(leader, signal.SIGKILL)
            os.waitpid(leader, 0)
    return counts


@pytest.mark.skipif(os.geteuid() != 0, reason="becomes an unprivileged uid to show the kernel's count")
def test_nested_user_namespaces_give_each_instance_its_own_budget() -> None:
    """Run as an unprivileged user (root is exempt from RLIMIT_NPROC, so the app's rootless tests as
    root cannot show it): with one shared user namespace, the first instance's children use up the
    budget of the second; with a namespace per instance (what the fork server does), each has its own."""
    shared = _two_instances(nested=False)
    assert shared[0] > 0 and shared[1] == 0, shared  # one budget for both: the gap this closes
    assert _two_instances(nested=True) == [BUDGET - 1, BUDGET - 1]  # each: itself and BUDGET-1 children
