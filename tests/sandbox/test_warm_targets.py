"""How far a warm pool grows after a burst of arrivals, and when it goes back (WarmTargets alone)."""

from __future__ import annotations

from app.sandbox.pool import WarmTargets

SIZES = {"demo-orders": 4, "demo-tasks": 1, "kept-cold": 0}


def test_a_learner_who_finds_the_pool_empty_grows_it_by_one() -> None:
    targets = WarmTargets(SIZES, growth=48)
    targets.taken("demo-orders", 0.0, warm=True)
    assert targets.target("demo-orders") == 4  # a warm take is what the pool is for
    for _ in range(6):
        targets.taken("demo-orders", 0.1, warm=False)
    assert targets.target("demo-orders") == 10
    assert targets.target("demo-tasks") == 1


def test_a_visitor_bursting_on_every_server_grows_them_no_further_than_the_shared_budget() -> None:
    targets = WarmTargets(SIZES, growth=5)
    for _ in range(100):
        for server in SIZES:
            targets.taken(server, 0.0, warm=False)
    assert targets.grown == 5
    assert sum(targets.target(s) for s in SIZES) == sum(SIZES.values()) + 5
    assert targets.target("kept-cold") == 0  # a server kept without a pool never grows one


def test_no_growth_without_room_in_memory_or_without_a_budget() -> None:
    short = WarmTargets(SIZES, growth=48)
    short.taken("demo-orders", 0.0, warm=False, room=False)
    assert short.target("demo-orders") == 4
    off = WarmTargets(SIZES, growth=0)
    off.taken("demo-orders", 0.0, warm=False)
    assert off.target("demo-orders") == 4


def test_a_grown_pool_settles_once_nobody_has_taken_from_it_for_a_while() -> None:
    targets = WarmTargets(SIZES, growth=48, settle_s=600.0)
    assert targets.settle_in("demo-orders", 0.0) is None  # nothing to settle
    targets.taken("demo-orders", 100.0, warm=False)
    assert targets.settle_in("demo-orders", 100.0) == 600.0
    targets.taken("demo-orders", 400.0, warm=True)  # a class still coming: its pool stays grown
    assert targets.settle_in("demo-orders", 700.0) == 300.0
    assert targets.settle_in("demo-orders", 1000.0) == 0.0
    targets.settle("demo-orders")
    assert targets.target("demo-orders") == 4
    assert targets.settle_in("demo-orders", 1000.0) is None
    targets.taken("demo-tasks", 1000.0, warm=False)  # the budget it gave back is there for others
    assert targets.grown == 1


def test_it_knows_how_long_ago_a_server_was_last_taken_from() -> None:
    targets = WarmTargets(SIZES, growth=48)
    assert targets.since_taken("demo-orders", 50.0) == float("inf")
    targets.taken("demo-orders", 50.0, warm=True)
    assert targets.since_taken("demo-orders", 52.5) == 2.5
