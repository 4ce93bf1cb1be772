"""The registry of hands-on checks: names, goals, evaluation order, robustness."""

from __future__ import annotations

import pytest

from app.course import checks
from app.course.models import Step
from app.protocol.transcript import Transcript
from tests.course.checkhelp import init, init_result, run, transcript


def test_every_check_has_a_goal_and_a_reason_on_an_empty_transcript() -> None:
    for name, check in checks.REGISTRY.items():
        assert check.goal.strip()
        result = check.run(Transcript(server="demo-orders"))
        assert result.name == name and not result.passed and result.reason


def test_evaluate_runs_the_steps_checks_in_order() -> None:
    step = Step("l/s", "s", "S", "l", 4, 1, 1, 1, checks=("initialize-answered", "ping-answered"))  # type: ignore[arg-type]
    t = transcript((">", init()), ("<", init_result()))
    results = checks.evaluate(step, t)
    assert [(r.name, r.passed) for r in results] == [("initialize-answered", True), ("ping-answered", False)]


@pytest.mark.parametrize("name", sorted(set(checks.REGISTRY) - {"garbled-line-seen"}))
def test_unparseable_lines_do_not_break_a_check(name: str) -> None:
    t = Transcript(server="demo-orders")
    t.add_client("{bad", None)
    t.add_server("not json", None)
    t.add_client("[1]", [1])
    assert not run(name, t).passed


def test_a_check_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="two hands-on checks"):
        checks.check("ping-answered", "again")(lambda t: (True, ""))


def test_every_check_lives_in_a_lesson_module_and_get_finds_it() -> None:
    for name, registered in checks.REGISTRY.items():
        assert checks.get(name) is registered
        assert registered.predicate.__module__.startswith("app.course.checks.")
    assert checks.get("no-such-check") is None
