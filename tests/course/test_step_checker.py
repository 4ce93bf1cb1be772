"""StepChecker: a step's checks run incrementally, within a time budget, reporting only changes."""

from __future__ import annotations

import json
import time

import pytest
from markupsafe import Markup

from app.course import checks
from app.course.checks import StepChecker
from app.course.models import Step
from app.protocol.transcript import Transcript
from tests.course.checkhelp import init, init_result, transcript


def step(*names: str) -> Step:
    return Step(slug="t/step", short_slug="step", title=Markup("t"), lesson_slug="t", lesson_number=1, index=1,
                total=1, line=1, checks=names)  # fmt: skip


STEP = step("initialize-answered", "version-counter-offer")


def test_only_changes_are_reported_and_a_pass_stays() -> None:
    t = Transcript(server="demo-orders")
    checker = StepChecker(STEP, budget_s=60.0)  # every check each round, however busy the machine
    first, complete = checker.run(t)
    assert complete and [r.name for r in first] == list(STEP.checks) and not any(r.passed for r in first)
    assert checker.run(t) == ([], True)  # nothing new, nothing to say
    request = init(version="1999-01-01")
    t.add_client(json.dumps(request), request)
    t.add_server(json.dumps(init_result(version="2025-11-25")), init_result(version="2025-11-25"))
    changed, _ = checker.run(t)
    assert {r.name for r in changed if r.passed} == {"initialize-answered", "version-counter-offer"}
    assert checker.run(t) == ([], True)


def test_a_new_transcript_starts_over() -> None:
    t = Transcript(server="demo-orders")
    request = init()
    t.add_client(json.dumps(request), request)
    checker = StepChecker(STEP)
    checker.run(t)
    fresh, _ = checker.run(Transcript(server="demo-orders"))
    assert [r.name for r in fresh] == list(STEP.checks)


def test_a_round_stops_at_its_budget_and_the_next_goes_on_where_it_stopped(monkeypatch) -> None:  # noqa: ANN001
    ran: list[str] = []

    def slow(name: str):  # noqa: ANN202
        def predicate(t: Transcript) -> tuple[bool, str]:
            ran.append(name)
            time.sleep(0.03)  # a predicate slower than the whole round's budget
            return False, "not yet"

        return predicate

    for name in ("slow-a", "slow-b", "slow-c"):
        monkeypatch.setitem(checks.REGISTRY, name, checks.Check(name, name, slow(name)))
    checker = StepChecker(step("slow-a", "slow-b", "slow-c"), budget_s=0.01)
    t = Transcript(server="demo-orders")
    rounds = [checker.run(t) for _ in range(3)]
    assert [complete for _, complete in rounds] == [False, False, True]
    assert ran == ["slow-a", "slow-b", "slow-c"]  # each round ran one, and every check had its turn


def test_a_check_that_raises_fails_alone_and_the_others_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last guard behind each check's own reading: one that trips on a message fails with a plain
    reason, and the step's other checks still run and pass."""

    def trips(transcript: Transcript) -> checks.Outcome:
        raise TypeError("unhashable type: 'list'")

    monkeypatch.setitem(checks.REGISTRY, "ping-answered", checks.Check("ping-answered", "goal", trips))
    checker = StepChecker(step("ping-answered", "initialize-answered"), budget_s=60)
    results, complete = checker.run(transcript((">", init()), ("<", init_result())))
    assert complete
    assert {r.name: (r.passed, r.reason) for r in results} == {
        "ping-answered": (False, checks.UNREADABLE),
        "initialize-answered": (True, next(r.reason for r in results if r.name == "initialize-answered")),
    }
