"""The capacity benchmark's learners keep their own phase, so a slow moment cannot line them up."""

from __future__ import annotations

import pytest

from bench.capacity import next_due


def test_the_next_call_is_one_interval_after_the_last_one_was_due_not_after_its_reply() -> None:
    assert next_due(10.0, 10.4, 3.0) == 13.0
    assert next_due(10.0, 12.9, 3.0) == 13.0  # a reply late in its slot: the next call still at 13


@pytest.mark.parametrize(("now", "expected"), [(13.0, 16.0), (14.2, 16.0), (20.5, 22.0), (22.0, 25.0)])
def test_a_call_that_overran_its_slot_moves_to_the_next_slot_of_the_same_phase(
    now: float, expected: float
) -> None:
    # Not "now": every learner a stall held up would otherwise call at the same moment.
    assert next_due(10.0, now, 3.0) == pytest.approx(expected)


def test_two_learners_held_up_together_stay_apart() -> None:
    # Due at 10.0 and 11.0, both replies arrive at 18.3 after a stall: they keep their 1 s apart.
    assert next_due(11.0, 18.3, 3.0) - next_due(10.0, 18.3, 3.0) == pytest.approx(1.0)
