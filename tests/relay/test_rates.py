"""app/relay/rates.py: a sliding window per key, that forgets keys gone quiet."""

from __future__ import annotations

import pytest

from app.relay import rates
from app.relay.rates import KeyedRate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(rates.time, "monotonic", made)
    return made


def test_a_key_goes_again_once_its_oldest_leaves_the_window(clock: Clock) -> None:
    rate = KeyedRate(2, window_s=60)
    assert rate.wait("a") is None
    clock.now += 10
    assert rate.wait("a") is None
    assert rate.wait("a") == pytest.approx(50)  # refused, and not counted
    assert rate.wait("b") is None  # another key has its own window
    clock.now += 50.5
    assert rate.wait("a") is None  # the first has left the window
    assert rate.wait("a") is not None


def test_quiet_keys_are_forgotten_once_many_are_kept(clock: Clock) -> None:
    rate = KeyedRate(1, window_s=60, keys_kept=3)
    for key in ("a", "b", "c"):
        rate.wait(key)
    clock.now += 30
    rate.wait("d")  # three kept, none quiet yet: nothing to forget
    assert len(rate) == 4
    clock.now += 31  # a, b and c are quiet now; d is not
    assert rate.wait("e") is None
    assert len(rate) == 2 and rate.wait("d") is not None
