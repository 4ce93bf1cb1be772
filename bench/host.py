"""What this host charges for memory touched after a pause: most of the first reply's swing between
days.

On the Firecracker guests these benchmarks run on, reading pages that are already resident costs
microseconds each once they have gone unread for some milliseconds (whether the CPU slept or spun
meanwhile), with no page fault inside the guest: the time is the hypervisor's. Every figure that
follows an idle moment (a learner arriving, a first reply) pays it for each page its code and data
touch. Printed first, so that runs from different days can be read against each other.

The same guests run the kernel's DAMON (`kdamond`) to find memory to give back to the hypervisor.
It samples physical pages every half second and walks, for each, every mapping of it: a page of the
fork server's is mapped by every instance, so its cost grows with the sessions. Whether it runs is
printed here, and its CPU during each capacity step there.

Their PID 1 is not an init system but the guest's agent (`process_api`), whose CPU grows faster
than the number of network namespaces, one per instance: 3% of a core with 500 of them idle, 34%
with 2000. Its name is printed here, and its CPU, too, during each capacity step."""

from __future__ import annotations

import mmap
import os
import platform
import time
from pathlib import Path

from bench.stats import summary

PAGES = 2000
PAUSE_S = 0.05  # the startup benchmark's pause between two learners
DAMON_ADMIN = Path("/sys/kernel/mm/damon/admin/kdamonds")
INIT_PID = 1


def machine(cpuinfo: Path = Path("/proc/cpuinfo"), meminfo: Path = Path("/proc/meminfo")) -> dict:
    """What the figures came from: the CPU's model as the guest sees it, how many, the memory, the
    kernel and the Python, so that a table can name its machine."""
    model = "unknown CPU"
    for line in cpuinfo.read_text().splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("model name", "Model") and value.strip():  # "Model" on some ARM kernels
            model = value.strip()
            break
    memory_kib = 0
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory_kib = int(line.split()[1])
    return {"cpu": model, "cpus": os.cpu_count(), "memory_gib": round(memory_kib / 2**20, 1),
            "kernel": platform.release(), "python": platform.python_version()}  # fmt: skip


def pids_named(prefix: str) -> list[int]:
    """Every process whose name starts with `prefix` (`kdamond` for the kernel's DAMON threads). It
    reads all of /proc, so it is called before a load starts, not during one."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                name = (entry / "comm").read_text().rstrip("\n")
            except OSError:
                continue  # gone meanwhile
            if name.startswith(prefix):
                pids.append(int(entry.name))
    return pids


def cpu_ticks(pids: list[int]) -> int:
    """Clock ticks of CPU (user and system) used so far by these processes, those gone left out."""
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(") ")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (proc(5): fields 14 and 15)
    return total


def core_share(ticks: int, seconds: float) -> float:
    """Ticks used over `seconds`, as a share of one core."""
    return ticks / os.sysconf("SC_CLK_TCK") / seconds if seconds > 0 else 0.0


def process_name(pid: int) -> str:
    """The name a process gives itself (`comm`), or "unknown" when it cannot be read."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().rstrip("\n") or "unknown"
    except OSError:
        return "unknown"


def damon_states(admin: Path = DAMON_ADMIN) -> list[str]:
    """The state of each DAMON worker the kernel's sysfs interface lists ("on" or "off"); none listed
    when the kernel has no DAMON or nothing set it up."""
    try:
        return [
            (path / "state").read_text().strip() for path in sorted(admin.iterdir()) if path.name.isdigit()
        ]
    except OSError:
        return []


def read_pages(buf: mmap.mmap, pages: int) -> tuple[float, int]:
    """Read one byte of each page; (seconds, pages read)."""
    began = time.perf_counter()
    seen = 0
    for offset in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
        seen += buf[offset]
    return time.perf_counter() - began, seen


def touch_cost(
    pages: int = PAGES, pause_s: float = PAUSE_S, samples: int = 20
) -> dict[str, dict[str, float]]:
    """Milliseconds to read `pages` resident pages right after reading them (hot), and after a pause."""
    buf = mmap.mmap(-1, pages * mmap.PAGESIZE)
    try:
        for offset in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
            buf[offset] = 1  # resident from here on
        hot, paused = [], []
        for _ in range(samples):
            time.sleep(pause_s)
            elapsed, seen = read_pages(buf, pages)
            assert seen == pages
            paused.append(elapsed * 1000)
            elapsed, seen = read_pages(buf, pages)
            assert seen == pages
            hot.append(elapsed * 1000)
        return {"hot_ms": summary(hot), "after_pause_ms": summary(paused)}
    finally:
        buf.close()


def run(quick: bool) -> tuple[dict, list]:
    figures: dict = {**touch_cost(samples=10 if quick else 20), "pages": PAGES, "pause_s": PAUSE_S}
    paused, hot = figures["after_pause_ms"]["p50"], figures["hot_ms"]["p50"]
    figures["damon"] = damon_states()
    figures["pid1"] = process_name(INIT_PID)
    running = figures["damon"].count("on")
    box = figures["machine"] = machine()
    table = [
        (
            "host: the machine",
            f"{box['cpu']}, {box['cpus']} CPUs, {box['memory_gib']} GiB",
            f"Linux {box['kernel']}, Python {box['python']}",
            "",
        ),
        (
            f"host: {PAGES} resident pages read after {PAUSE_S * 1000:.0f} ms idle",
            f"{paused:.2f} ms ({paused / hot:.0f}x)",
            f"{hot:.2f} ms read again at once",
            "",
        ),
        (
            "host: the kernel's DAMON (kdamond) sampling memory",
            f"{running} of {len(figures['damon'])} running" if figures["damon"] else "not set up",
            "its CPU: the capacity steps",
            "",
        ),
        ("host: PID 1", figures["pid1"], "its CPU: the capacity steps", ""),
    ]
    return figures, table
