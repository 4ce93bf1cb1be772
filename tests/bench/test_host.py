"""The host figures: every page read as meant, both readings reported, the CPU of processes found by
name, and DAMON's state read from its sysfs interface."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

from bench.host import (
    core_share,
    cpu_ticks,
    damon_states,
    machine,
    pids_named,
    process_name,
    read_pages,
    touch_cost,
)


def test_every_page_is_read_once() -> None:
    buf = mmap.mmap(-1, 8 * mmap.PAGESIZE)
    for i in range(8):
        buf[i * mmap.PAGESIZE] = 1
    buf[3 * mmap.PAGESIZE + 1] = 1  # not at a page's start: not read
    _, seen = read_pages(buf, 8)
    assert seen == 8


def test_the_figure_has_a_hot_and_a_paused_reading_of_every_sample() -> None:
    figures = touch_cost(pages=16, pause_s=0.001, samples=3)
    assert figures["hot_ms"]["n"] == figures["after_pause_ms"]["n"] == 3
    assert figures["hot_ms"]["p50"] > 0 and figures["after_pause_ms"]["p50"] > 0


def test_processes_are_found_by_the_start_of_their_name_and_their_cpu_counted() -> None:
    """A child that names itself, spends CPU, and then waits: its ticks count under its name."""
    name = f"spin{os.getpid()}"[:15]
    with subprocess.Popen(
        [sys.executable, "-c", SPINNER, name], stdout=subprocess.PIPE, stdin=subprocess.PIPE
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == b"spent\n"
            assert pids_named(name[:6]) == [child.pid]
            ticks = cpu_ticks([child.pid])
            assert ticks >= 0.2 * os.sysconf("SC_CLK_TCK")
            assert pids_named(f"none{os.getpid()}") == []
            assert cpu_ticks([child.pid, 2**22 + 1]) == ticks  # a pid that is gone counts nothing
            assert core_share(ticks, 2.0) == ticks / os.sysconf("SC_CLK_TCK") / 2.0
            assert process_name(child.pid) == name
            assert process_name(2**22 + 1) == "unknown"  # gone, or never was
        finally:
            child.kill()


# Names itself, spends 0.25 s of CPU by its own clock (not the wall's), says so, and waits for stdin.
SPINNER = """
import os, sys
with open("/proc/self/comm", "w") as comm:
    comm.write(sys.argv[1])
while os.times().user + os.times().system < 0.25:
    pass
print("spent", flush=True)
sys.stdin.read()
"""


def test_damon_states_are_read_from_its_sysfs_interface(tmp_path: Path) -> None:
    for index, state in (("0", "on\n"), ("1", "off\n")):
        (tmp_path / index).mkdir()
        (tmp_path / index / "state").write_text(state)
    (tmp_path / "nr_kdamonds").write_text("2\n")
    assert damon_states(tmp_path) == ["on", "off"]
    assert damon_states(tmp_path / "missing") == []


def test_the_machine_is_named_from_proc(tmp_path: Path) -> None:
    cpuinfo, meminfo = tmp_path / "cpuinfo", tmp_path / "meminfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14\n\nprocessor\t: 1\n"
    )
    meminfo.write_text("MemTotal:       24624504 kB\nMemFree:        21000000 kB\n")
    box = machine(cpuinfo, meminfo)
    assert box["cpu"] == "AMD EPYC 9B14"
    assert box["memory_gib"] == 23.5
    assert box["cpus"] == os.cpu_count()
    assert box["kernel"] and box["python"].count(".") == 2


def test_a_machine_whose_cpuinfo_names_no_model_is_still_named(tmp_path: Path) -> None:
    cpuinfo, meminfo = tmp_path / "cpuinfo", tmp_path / "meminfo"
    cpuinfo.write_text("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n")
    meminfo.write_text("MemTotal:       2048 kB\n")
    box = machine(cpuinfo, meminfo)
    assert box["cpu"] == "unknown CPU"
    assert box["memory_gib"] == 0.0


def test_this_machine_is_named() -> None:
    box = machine()
    assert box["cpu"] and box["cpus"] >= 1 and box["memory_gib"] > 0
