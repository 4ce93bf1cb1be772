"""Capacity: the most live sessions that keep the p99 round trip <= 100 ms under a lesson-like load.

Each session sends one tools/call every 3 s (a learner reading, then trying something). The load
steps up until the p99 goes over the bound, memory runs short, or the time budget is spent.

The load generator shares the machine with what it measures, so it is kept lean: its learners are
callbacks on one connection each, with no task per call (bench/learners.py); it runs on uvloop
(`run_on_uvloop`, as the web process does); its collector is kept out of the measured windows; and
its learners send no WebSocket pings, as a browser sends none (they answer the server's).

The bound is absolute, and the machine's speed and its own background work (the kernel's DAMON, and
on these guests the agent at PID 1; bench/host.py) move it from run to run. So after the step-up,
the floor (bench/floor.py: the same stack and sandboxed servers with nothing of ours) carries the
load of the relay's last step, and the row shows it beside the relay's: a floor over the bound there
says the machine, not the relay, is what stopped the step-up that day.
"""

from __future__ import annotations

import asyncio
import gc
import resource
import time

import uvloop

from bench import floor as bare
from bench.host import INIT_PID, core_share, cpu_ticks, pids_named
from bench.learners import Learner, Step
from bench.stats import summary
from tests.support.appserver import AppProcess
from tests.support.procs import processes_in_uid_range, wait_until_async

TARGET_P99_MS = 100.0
INTERVAL_S = 3.0
STEPS = (100, 250, 500, 750, 1000, 1250, 1500, 1750, 2000)
QUICK_STEPS = (50, 100, 200)
MEASURE_S = 12.0
# A p99 needs enough calls to mean the same at every step: 12 s of 250 sessions is about 1000 calls,
# whose worst 1% one 240 ms stall of the machine fills (seen once). A small step measures for longer.
MIN_CALLS = 2000
MAX_MEASURE_S = 60.0
BUDGET_S = 600.0
# The floor's servers take uids this far above the app's, clear of the app's.
FLOOR_UID_OFFSET = 10_000
# Room in the floor's pool beyond the learners: a session's server is replaced as it ends.
FLOOR_SPARE = 50
# Before the floor's step, the relay's servers end: down to its warm pools and this many more, or
# until this long has passed.
SERVERS_LEFT = 10
SERVERS_END_S = 120.0
CALL = {"name": "get_order_status", "arguments": {"order_id": "481516"}}


async def measure(times: list[float], at_least_s: float, min_calls: int, at_most_s: float) -> None:
    """Wait `at_least_s`, then until `times` holds `min_calls` or `at_most_s` have passed."""
    began = time.monotonic()
    await asyncio.sleep(at_least_s)
    while len(times) < min_calls and time.monotonic() - began < at_most_s:
        await asyncio.sleep(min(0.5, max(at_most_s - (time.monotonic() - began), 0)))


async def open_learners(url: str, learners: list[Learner], target: int) -> None:
    """Open learners on `url` until `learners` holds `target`, 25 at a time, as a class arrives."""
    while len(learners) < target:
        batch = min(25, target - len(learners))
        learners.extend(await asyncio.gather(*(Learner.open(url) for _ in range(batch))))


async def close_learners(learners: list[Learner]) -> None:
    for i in range(0, len(learners), 100):
        await asyncio.gather(*(learner.close() for learner in learners[i : i + 100]), return_exceptions=True)


async def measure_step(learners: list[Learner], quick: bool) -> dict:
    """One step: every learner calls once an interval; its p50, p99, errors, and the shares of a core
    that the host's own workers took meanwhile (kdamond, PID 1: bench/host.py)."""
    # The load generator's own collector would stall every call in flight (a full collection
    # over 2000 clients took 80-150 ms here): its objects are set aside while it measures.
    gc.collect()
    gc.freeze()
    gc.disable()
    kdamonds = pids_named("kdamond")  # found before the load: reading all of /proc takes a while
    step = Step(CALL, INTERVAL_S)
    step.start(learners)
    try:
        # One interval first: every learner's first call of the step (the new sessions' first
        # ever, and the pool refilling after them) is left out; the step measures steady use.
        await asyncio.sleep(INTERVAL_S)
        step.open_window()
        damon_ticks, init_ticks = cpu_ticks(kdamonds), cpu_ticks([INIT_PID])
        await measure(step.times_ms, MEASURE_S, 0 if quick else MIN_CALLS, MAX_MEASURE_S)
        seconds = time.perf_counter() - step.window_opened
        damon_share = core_share(cpu_ticks(kdamonds) - damon_ticks, seconds)
        init_share = core_share(cpu_ticks([INIT_PID]) - init_ticks, seconds)
        await step.stop()
    finally:
        gc.enable()
        gc.unfreeze()
    times, errors = step.times_ms, step.errors
    stats = summary(times) if times else {"p50": float("nan"), "p99": float("inf"), "n": 0}
    ok = stats["p99"] <= TARGET_P99_MS and not errors
    return {"sessions": len(learners), "p50_ms": stats["p50"], "p99_ms": stats["p99"], "calls": stats["n"],
            "errors": len(errors), "ok": ok, "kdamond_core_share": damon_share,
            "pid1_core_share": init_share}  # fmt: skip


def describe(step: dict, who: str = "") -> str:
    return (f"  {who}{step['sessions']} sessions: p50 {step['p50_ms']:.1f} ms, p99 {step['p99_ms']:.1f} ms, "
            f"{step['errors']} errors; of a core, kdamond {step['kdamond_core_share']:.0%}, "
            f"PID 1 {step['pid1_core_share']:.0%}")  # fmt: skip


async def run(app: AppProcess, quick: bool) -> tuple[dict, list]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    learners: list[Learner] = []
    steps = []
    best = 0
    url = app.ws_base + "/ws/demo-orders"
    idle = len(servers(app.uid_base))  # the warm pools, before any learner comes
    began = time.monotonic()
    try:
        for target in QUICK_STEPS if quick else STEPS:
            if time.monotonic() - began > BUDGET_S:
                break
            await open_learners(url, learners, target)
            steps.append(await measure_step(learners, quick))
            print(describe(steps[-1]), flush=True)
            if not steps[-1]["ok"]:
                break
            best = target
    finally:
        await close_learners(learners)
    floor = None
    if steps:
        # The relay's servers end first: thousands exiting at once would load the floor's step.
        await servers_ended(app.uid_base, idle)
        floor = await floor_step(app.uid_base + FLOOR_UID_OFFSET, steps[-1]["sessions"], quick)
    figures = {"max_sessions_p99_under_100ms": best, "steps": steps, "floor": floor}
    return figures, [table_row(steps, floor)]


def servers(uid_base: int) -> list:
    """The sandboxed processes of the app, or of the floor, whose uids start at `uid_base`."""
    return processes_in_uid_range(uid_base, uid_base + FLOOR_UID_OFFSET)


async def servers_ended(uid_base: int, warm: int) -> bool:
    """Wait until the servers on uids from `uid_base` are down to their `warm` pool (and a few on
    their way out); say so if they are not by the deadline, since the next step is then loaded."""
    if await wait_until_async(lambda: len(servers(uid_base)) <= warm + SERVERS_LEFT, SERVERS_END_S, 0.5):
        return True
    print(f"  {len(servers(uid_base))} servers still running after {SERVERS_END_S:g} s; going on", flush=True)
    return False


async def floor_step(uid_base: int, sessions: int, quick: bool) -> dict:
    """The floor (bench/floor.py: the same stack and sandboxed servers, nothing of ours) under the
    load of the relay's last step, right after it: whether the machine held that step without us.

    The relay came to its last step through smaller ones, so its sessions had made their first calls
    (the dearest: each server's first writes to the pages it shares) long before; the floor's are all
    new at once, and the first of those calls spill past the step's first interval. So the floor
    runs the step twice and the second counts."""
    learners: list[Learner] = []
    async with bare.serving(uid_base, capacity=sessions + FLOOR_SPARE) as url:
        try:
            await open_learners(url, learners, sessions)
            warming = await measure_step(learners, quick)
            print(describe(warming, "the floor, its sessions' first calls: "), flush=True)
            step = await measure_step(learners, quick)
        finally:
            await close_learners(learners)
            # Its servers end on their own as their sessions do; stopping the floor under them
            # would only race them (and fill the output with signals for servers already gone).
            await servers_ended(uid_base, bare.WARM)
    print(describe(step, "the floor, "), flush=True)
    return step


def table_row(steps: list[dict], floor: dict | None = None) -> tuple[str, str, str, str]:
    """The capacity row: the last step that held, with its p99, and the step that did not, with its
    own, so that the margin on each side shows; beside it, the floor at the last step measured, and
    the host's workers' shares at that step for each."""
    held = [step for step in steps if step["ok"]]
    measured = f"{held[-1]['sessions']} (p99 {held[-1]['p99_ms']:.1f} ms)" if held else "0"
    if steps and not steps[-1]["ok"]:
        measured += f"; {steps[-1]['sessions']}: {outcome(steps[-1])}"
    last = steps[-1] if steps else None
    if last is None:
        baseline = "-"
    elif floor is None:
        baseline = f"at {last['sessions']}, {host_share(last)}"
    else:
        baseline = f"floor at {floor['sessions']}: {outcome(floor)}; {host_share(last, floor)}"
    return ("capacity: sessions with p99 <= 100 ms (1 call / 3 s each)", measured, baseline, ">= 2000")


def host_share(step: dict, floor: dict | None = None) -> str:
    """What the host's own workers took of a core during `step` (and the floor's, beside it)."""
    shares = []
    for name, key in (("kdamond", "kdamond_core_share"), ("PID 1", "pid1_core_share")):
        share = f"{name} {step[key]:.0%}"
        shares.append(share + (f" ({floor[key]:.0%} floor)" if floor else ""))
    return ", ".join(shares) + " of a core"


def outcome(step: dict) -> str:
    return f"{step['errors']} errors" if step["errors"] else f"p99 {step['p99_ms']:.1f} ms"


def run_on_uvloop(app: AppProcess, quick: bool) -> tuple[dict, list]:
    """`run` on uvloop, as the web process runs: at 2000 sessions the generator took a tenth of the CPU."""
    return uvloop.run(run(app, quick))
