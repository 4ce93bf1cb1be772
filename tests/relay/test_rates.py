"""app/relay/rates.py: a sliding window per key, that forgets keys gone quiet; and a pace for work."""

from __future__ import annotations

import pytest

from app.relay import rates
from app.relay.rates import KeyedBudget, KeyedRate, Pace
from tests.support.clocks import FrozenClock


class Clock(FrozenClock):
    """A frozen clock a test moves by hand (`clock.t += 10`), which `time.monotonic` reads too."""


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock(1000.0)
    monkeypatch.setattr(rates.time, "monotonic", made.now)
    return made


def test_a_key_goes_again_once_its_oldest_leaves_the_window(clock: Clock) -> None:
    rate = KeyedRate(2, window_s=60)
    assert rate.wait("a") is None
    clock.t += 10
    assert rate.wait("a") is None
    assert rate.wait("a") == pytest.approx(50)  # refused, and not counted
    assert rate.wait("b") is None  # another key has its own window
    clock.t += 50.5
    assert rate.wait("a") is None  # the first has left the window
    assert rate.wait("a") is not None


def test_a_table_keeps_so_many_keys_and_forgets_the_one_used_longest_ago(clock: Clock) -> None:
    """From the attacker's side: a visitor with more addresses than the table keeps (an IPv6 /48 has
    65,536 /64s) can neither grow it nor make each new key cost a look at all the others."""
    rate = KeyedRate(1, window_s=60, keys_kept=3)
    for key in ("a", "b", "c"):
        assert rate.wait(key) is None
    clock.t += 30
    assert rate.wait("a") is not None  # a is used again (and still refused): now the newest
    assert rate.wait("d") is None  # one more: b, used longest ago, is forgotten
    assert len(rate) == 3
    assert rate.wait("a") is not None and rate.wait("c") is not None  # remembered, still counted
    assert rate.wait("b") is None  # forgotten: a fresh window (as a fresh address would have)
    for n in range(10_000):  # a flood of new keys: the table stays at its size
        rate.wait(f"flood-{n}")
    assert len(rate) == 3


def test_a_budget_takes_what_fits_and_says_when_enough_has_aged_out(clock: Clock) -> None:
    budget = KeyedBudget(100, window_s=60)
    assert budget.spend("a", 60) is None
    clock.t += 10
    assert budget.spend("a", 30) is None
    assert budget.spend("a", 20) == pytest.approx(50)  # refused and not counted: the 60 must go first
    assert budget.spend("a", 10) is None  # what still fits goes
    assert budget.spend("b", 100) is None  # another key has its own budget
    assert budget.spend("a", 1000) == 60  # more than the whole budget never fits
    clock.t += 50.5
    assert budget.spend("a", 60) is None  # the first 60 have left the window
    assert budget.spend("a", 1) is not None


def test_a_budget_keeps_so_many_keys_and_forgets_the_one_used_longest_ago(clock: Clock) -> None:
    budget = KeyedBudget(10, window_s=60, keys_kept=2)
    budget.spend("a", 10)
    budget.spend("b", 10)
    assert budget.spend("a", 1) is not None  # a is the newest now
    assert budget.spend("c", 10) is None  # b is forgotten, c kept
    assert len(budget) == 2 and budget.spend("c", 1) is not None and budget.spend("a", 1) is not None


def test_a_pace_lets_a_burst_through_then_the_rate() -> None:
    clock = Clock()
    pace = Pace(rate=100, burst=300, clock=clock)
    assert [pace.charge(100) for _ in range(3)] == [0.0, 0.0, 0.0]  # the burst
    assert pace.charge(50) == pytest.approx(0.5)  # 50 units in debt: half a second at 100 a second
    clock.t += 0.5
    assert pace.charge(100) == pytest.approx(1.0)
    clock.t += 10  # a long quiet spell refills no more than the burst
    assert [pace.charge(150) for _ in range(2)] == [0.0, 0.0]
    assert pace.charge(1) > 0


def test_a_piece_bigger_than_the_burst_still_goes_and_pays_after() -> None:
    clock = Clock()
    pace = Pace(rate=100, burst=50, clock=clock)
    assert pace.charge(250) == pytest.approx(2.0)
    clock.t += 2.0
    assert pace.charge(0) == 0.0
