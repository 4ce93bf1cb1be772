"""The registry of hands-on checks: names, goals, evaluation order, robustness."""

from __future__ import annotations

import pytest

from app.course import checks
from app.course.models import Step
from app.protocol.jsonrpc import PARSE_ERROR, FrameError
from app.protocol.transcript import Transcript
from tests.course.checkhelp import init, init_result, run, transcript


def test_every_check_has_a_goal_and_a_reason_on_an_empty_transcript() -> None:
    for name, check in checks.REGISTRY.items():
        assert check.goal.strip()
        empty = Transcript(server="demo-orders") if check.reads == checks.TRANSCRIPT else []
        result = check.run(empty)
        assert result.name == name and not result.passed and result.reason


def test_a_steps_checks_run_in_the_lessons_order() -> None:
    step = Step("l/s", "s", "S", "l", 4, 1, 1, 1, checks=("initialize-answered", "ping-answered"))  # type: ignore[arg-type]
    t = transcript((">", init()), ("<", init_result()))
    results, complete = checks.StepChecker(step).run(t)
    assert complete
    assert [(r.name, r.passed) for r in results] == [("initialize-answered", True), ("ping-answered", False)]


# These two pass on exactly such lines: that is what they look for.
@pytest.mark.parametrize(
    "name",
    sorted(
        {name for name, check in checks.REGISTRY.items() if check.reads == checks.TRANSCRIPT}
        - {"garbled-line-seen", "relay-refused-bad-input"}
    ),
)
def test_lines_that_are_not_messages_do_not_break_a_check(name: str) -> None:
    # What the relay records of them: a refused frame as a relay entry with its error reply, and a
    # server line that is not JSON, or is JSON but not a message, as a server entry.
    t = Transcript(server="demo-orders")
    t.add_relay_error("{bad", FrameError(PARSE_ERROR, "bad JSON", "not JSON").reply())
    t.add_server("not json", None)
    t.add_server("[1]", [1])
    assert not run(name, t).passed


def test_a_check_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="two hands-on checks"):
        checks.check("ping-answered", "again")(lambda t: (True, ""))


def test_every_check_lives_in_a_lesson_module_under_its_own_name() -> None:
    for name, registered in checks.REGISTRY.items():
        assert registered.name == name
        assert registered.predicate.__module__.startswith("app.course.checks.")
