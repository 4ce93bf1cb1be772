"""A cgroup per instance (this machine: cgroup v1 memory, pids and cpu hierarchies), made and
removed with the instance; a memory hog and a fork bomb stop at its limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from app.sandbox.cgroups import host_memory_bytes, memory_budget_bytes
from tests.support.appserver import ROOT, AppProcess
from tests.support.procs import descendants, processes_in_uid_range, wait_until
from tests.support.wsclient import McpClient

ATTACKER = {"extra_demo_modules": ["tests.fixtures.attack_server"], "warm_pool_size": 1}
MODES = {"root": {}, "rootless": {"rootless_sandbox": True}}
MEMORY_MB = 512
PROCESSES = 32
V1 = Path("/sys/fs/cgroup")

pytestmark = pytest.mark.skipif(
    not (V1 / "memory").is_dir() or os.geteuid() != 0, reason="cgroup v1 hierarchies, and root, needed"
)


@pytest.fixture(scope="module", params=sorted(MODES))
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    settings = {**ATTACKER, **MODES[request.param], "memory_limit_mb": MEMORY_MB, "max_processes": PROCESSES}
    with AppProcess(tmp_path_factory.mktemp(f"cgroups-{request.param}"), **settings) as app:
        app.mode = request.param  # type: ignore[attr-defined]
        yield app


def instance_cgroup(pid: int, hierarchy: str) -> Path | None:
    """The instance cgroup a process is in, in one v1 hierarchy, or None when not in one."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if hierarchy in controllers.split(",") and "/playground-" in path:
            return V1 / hierarchy / path.lstrip("/")
    return None


def instance_cgroups(app: AppProcess, hierarchy: str) -> set[Path]:
    found = set()
    for proc in descendants(app.proc.pid):
        try:
            path = instance_cgroup(proc.pid, hierarchy)
        except OSError:
            continue  # gone meanwhile
        if path is not None:
            found.add(path)
    return found


async def attacker(app: AppProcess) -> McpClient:
    client = await McpClient.connect(app.ws_base + "/ws/test-attack")
    await client.initialize()
    return client


def test_health_reports_the_cgroups_layer(app: AppProcess) -> None:
    layers = httpx.get(app.base + "/healthz", timeout=30).json()["sandbox"]["layers"]
    assert layers["cgroups"] == "ok"


async def test_an_instance_has_its_own_cgroup_while_it_runs(app: AppProcess) -> None:
    if app.mode != "root":  # type: ignore[attr-defined]
        pytest.skip("found by its uid, which rootless instances share")
    client = await attacker(app)
    try:
        uid = int(json.loads(await client.tool(2, "attempt", code="result = os.getuid()"))["ok"])
        procs = processes_in_uid_range(uid, uid + 1)
        assert len(procs) == 1  # the server, which moved itself in as it set up
        paths = {
            hierarchy: {instance_cgroup(p.pid, hierarchy) for p in procs}
            for hierarchy in ("memory", "pids", "cpu")
        }
        assert all(len(found) == 1 and None not in found for found in paths.values()), paths
        memory, pids, cpu = (next(iter(paths[h])) for h in ("memory", "pids", "cpu"))
        assert memory is not None and pids is not None and cpu is not None
        assert int((memory / "memory.limit_in_bytes").read_text()) == MEMORY_MB * 1024 * 1024
        assert int((pids / "pids.max").read_text()) == PROCESSES
        assert int((cpu / "cpu.cfs_quota_us").read_text()) > 0
        members = {int(pid) for pid in (memory / "cgroup.procs").read_text().split()}
        assert members == {p.pid for p in procs}
        # Another instance (the warm pool's) has a cgroup of its own.
        assert len(instance_cgroups(app, "memory")) >= 2
    finally:
        await client.close()
    for path in (memory, pids, cpu):
        assert wait_until(lambda path=path: not path.exists(), 30), f"{path} outlived its instance"


_MEMORY_HOG = """
import select
children, ready_read, ready_write = [], *os.pipe()
hold_read, hold_write = os.pipe()
for _ in range(6):
    pid = os.fork()
    if pid == 0:
        os.close(hold_write)
        block = bytearray(b"x") * (120 * 1024 * 1024)  # each well under the per-process RLIMIT_AS
        os.write(ready_write, b"1")
        os.read(hold_read, 1)
        os._exit(0)
    children.append(pid)
    while True:  # until this child has its memory, or has been killed for it
        if select.select([ready_read], [], [], 0.05)[0]:
            os.read(ready_read, 1)
            break
        if os.waitpid(pid, os.WNOHANG)[0]:
            children.remove(pid)
            break
os.close(hold_write)
statuses = [os.waitpid(pid, 0)[1] for pid in children]
result = 6 - len(children) + sum(1 for status in statuses if os.WIFSIGNALED(status))  # killed
"""


async def test_a_memory_hog_is_stopped_by_the_cgroup(app: AppProcess) -> None:
    client = await attacker(app)
    try:
        outcome = json.loads(await client.tool(2, "attempt", code=_MEMORY_HOG))
        assert (await client.call(3, "ping"))["result"] == {}  # the server itself lives on
    finally:
        await client.close()
    # Six times 120 MiB held at once cannot fit in 512 MiB: the cgroup's OOM killer ended some.
    assert "ok" in outcome and int(outcome["ok"]) >= 1, outcome


_FORK_BOMB = """
children, error = [], None
hold_read, hold_write = os.pipe()
for _ in range(500):
    try:
        pid = os.fork()
    except OSError as exc:
        error = exc.errno
        break
    if pid == 0:
        os.close(hold_write)
        os.read(hold_read, 1)
        os._exit(0)
    children.append(pid)
os.close(hold_write)
for pid in children:
    os.waitpid(pid, 0)
result = (len(children), error)
"""


async def test_a_fork_bomb_stops_at_the_pids_limit(app: AppProcess) -> None:
    client = await attacker(app)
    try:
        outcome = json.loads(await client.tool(2, "attempt", code=_FORK_BOMB))
        assert (await client.call(3, "ping"))["result"] == {}
        events = [int((p / "pids.events").read_text().split()[1]) for p in instance_cgroups(app, "pids")]
    finally:
        await client.close()
    forked, error = eval(outcome["ok"])  # a repr of two ints
    assert forked < PROCESSES and error == 11, outcome  # EAGAIN
    if app.mode == "rootless":  # type: ignore[attr-defined]
        assert max(events) > 0  # no per-uid process limit there: the cgroup stopped it


def test_the_default_memory_budget_is_half_of_the_apps_own_cgroup_limit_where_that_is_lower(
    tmp_path: Path,
) -> None:
    """An app in a container (a memory cgroup of 1 GiB on a larger host) must not promise its instances
    half the host: its default budget is half of what its own cgroup allows."""
    own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
               if "memory" in line.split(":", 2)[1].split(","))  # fmt: skip
    box = V1 / "memory" / own.lstrip("/") / f"budget-test-{os.getpid()}"
    box.mkdir()
    try:
        (box / "memory.limit_in_bytes").write_text(str(1024 * 1024 * 1024))
        code = (
            f"open({str(box / 'cgroup.procs')!r}, 'w').write('0');"
            "from app.sandbox.cgroups import memory_budget_bytes;"
            "print(memory_budget_bytes(None), memory_budget_bytes(300))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             cwd=ROOT, check=True).stdout.split()  # fmt: skip
    finally:
        wait_until(lambda: _removed(box), 30)
    assert [int(n) for n in out] == [512 * 1024 * 1024, 300 * 1024 * 1024]
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    host = int(next(line for line in meminfo if line.startswith("MemTotal:")).split()[1]) * 1024
    half = min(host, host_memory_bytes()) // 2
    assert memory_budget_bytes(None) == half - half % os.sysconf("SC_PAGE_SIZE")  # in whole pages
    assert memory_budget_bytes(None) > 512 * 1024 * 1024  # here, outside the box: the host's half


def _removed(path: Path) -> bool:
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True
