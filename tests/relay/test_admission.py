"""Admission as a hostile visitor meets it: which cap refuses, with which words, and who stays safe."""

from __future__ import annotations

import pytest

from app.relay.admission import Admission, Caps, Owner
from app.sandbox.errors import CapacityError


def visitor(n: int, address: str = "203.0.113.7") -> Owner:
    return Owner(f"minted-{n:04d}-0123456789", address)


def member(n: int, class_id: str = "class-a", cap: int = 50) -> Owner:
    return Owner(f"member-{n:04d}-0123456789", "198.51.100.1", class_id, cap)


def refusal(admission: Admission, owner: Owner) -> CapacityError:
    with pytest.raises(CapacityError) as refused:
        admission.admit(owner)
    return refused.value


def test_clients_without_identity_count_together_by_address() -> None:
    admission = Admission(Caps(total=100, per_owner=4, outside_classes=100))
    anonymous = Owner(None, "203.0.113.7")
    for _ in range(4):
        admission.admit(anonymous)
    error = refusal(admission, anonymous)
    assert error.reason == "owner_full" and "Your network address already has 4 consoles" in error.message
    admission.admit(Owner(None, "203.0.113.8"))  # another address is another owner


def test_a_learner_has_their_own_cap_whatever_their_address() -> None:
    admission = Admission(Caps(total=100, per_owner=2, outside_classes=100))
    ada = Owner("ada-0123456789abcdef", "203.0.113.7")
    admission.admit(ada)
    admission.admit(ada)
    error = refusal(admission, ada)
    assert error.reason == "owner_full" and "You already have 2 consoles" in error.message
    assert error.retry_after_s == 10
    admission.admit(Owner("bob-0123456789abcdef", "203.0.113.7"))  # same NAT address, another learner


def test_minted_identities_cannot_lock_out_a_class_member() -> None:
    admission = Admission(Caps.from_share(total=20, per_owner=4, outside_share=0.5))
    taken = 0
    for n in range(40):  # a visitor minting identity after identity
        try:
            admission.admit(visitor(n))
            taken += 1
        except CapacityError as exc:
            assert exc.reason == "visitors_full" and "kept for classes" in exc.message
    assert taken == 10
    for n in range(10):  # the class still gets every place that is left
        admission.admit(member(n))
    error = refusal(admission, member(99))
    assert error.reason == "full" and "all 20 places taken" in error.message and error.retry_after_s == 60


def test_a_class_cap_is_its_own() -> None:
    admission = Admission(Caps(total=100, per_owner=4, outside_classes=50))
    admission.admit(member(1, cap=2))
    admission.admit(member(2, cap=2))
    error = refusal(admission, member(3, cap=2))
    assert error.reason == "class_full" and "Your class has 2 consoles open" in error.message
    admission.admit(member(4, class_id="class-b", cap=2))
    assert admission.count_for_class("class-a") == 2 and admission.count_for_class("class-b") == 1


def test_a_slot_is_given_back_once_however_often_released() -> None:
    admission = Admission(Caps(total=2, per_owner=2, outside_classes=2))
    slot = admission.admit(visitor(1))
    admission.admit(visitor(1))
    slot.release()
    slot.release()
    assert admission.total == 1 and admission.count_for(visitor(1)) == 1
    admission.admit(visitor(2))
    refusal(admission, visitor(3))


def test_the_share_rounds_up_and_zero_keeps_everything_for_classes() -> None:
    assert Caps.from_share(total=1, per_owner=4, outside_share=0.5).outside_classes == 1
    assert Caps.from_share(total=250, per_owner=4, outside_share=0.5).outside_classes == 125
    closed = Admission(Caps.from_share(total=10, per_owner=4, outside_share=0.0))
    assert refusal(closed, visitor(1)).reason == "visitors_full"
    closed.admit(member(1))


def test_an_exercise_run_has_its_own_budget_and_counts_in_the_global_cap() -> None:
    admission = Admission(Caps(total=3, per_owner=1, outside_classes=3))
    ada = member(1)
    console = admission.admit(ada)  # her one console place is taken...
    run = admission.admit_exercise(ada)  # ...and an exercise still runs beside it
    with pytest.raises(CapacityError) as busy:
        admission.admit_exercise(ada)  # but one run at a time
    assert busy.value.reason == "exercise_busy" and "still going" in busy.value.message
    assert admission.count_for(ada) == 1 and admission.total == 2
    admission.admit(member(2))
    with pytest.raises(CapacityError) as full:  # the run holds a real instance: the global cap counts it
        admission.admit_exercise(member(3))
    assert full.value.reason == "full"
    run.release()
    run.release()  # once, however often
    assert admission.total == 2
    admission.admit_exercise(member(3))
    console.release()
    assert admission.count_for(ada) == 0


def test_exercise_runs_of_many_identities_at_one_address_count_with_its_consoles() -> None:
    """From the side of one address minting identity after identity, each starting an exercise run (a
    run at a time each): 29 of 30 places were held by one address capped at 5, and a new learner's
    console was told the playground was full."""
    admission = Admission(Caps(total=30, per_owner=4, outside_classes=20, per_address_outside=5))
    console = admission.admit(visitor(0))
    runs = []
    for n in range(1, 30):
        try:
            runs.append(admission.admit_exercise(visitor(n)))
        except CapacityError as exc:
            assert exc.reason == "address_full" and "5 consoles and exercise runs open" in exc.message
    assert len(runs) == 4 and admission.outside_classes == 5
    assert refusal(admission, visitor(99)).reason == "address_full"  # its consoles wait too
    others = [admission.admit_exercise(visitor(100 + n, f"198.51.100.{n}")) for n in range(15)]
    with pytest.raises(CapacityError) as visitors:  # the visitors' share holds runs too
        admission.admit_exercise(visitor(200, "192.0.2.1"))
    assert visitors.value.reason == "visitors_full"
    admission.admit_exercise(member(1))  # a class member's run takes no visitor's place
    for slot in (console, *runs, *others):
        slot.release()
    assert admission.outside_classes == 0 and admission.total == 1


def test_one_owner_opening_and_closing_in_a_loop_is_refused_past_its_rate() -> None:
    """Each new session starts a sandboxed server: a loop of open and close would take the machine's
    CPU from everyone else, while never holding more than one place."""
    admission = Admission(Caps(total=100, per_owner=4, outside_classes=100, new_per_owner_per_min=5))
    churner = Owner(None, "203.0.113.7")
    for _ in range(5):
        admission.admit(churner).release()
    error = refusal(admission, churner)
    assert error.reason == "too_often" and error.status_code == 429
    assert "Your network address has started 5 sessions in the last minute" in error.message
    assert 1 <= error.retry_after_s <= 60 and f"Try again in {error.retry_after_s} s." in error.message
    assert admission.total == 0 and admission.count_for(churner) == 0  # the refusal took no place
    with pytest.raises(CapacityError) as exercise:
        admission.admit_exercise(churner)  # an exercise run starts a server too
    assert exercise.value.reason == "too_often"
    ada = Owner("ada-0123456789abcdef", "203.0.113.7")  # same address, another owner: unaffected
    admission.admit(ada)


def test_the_rate_refusal_speaks_to_a_learner_as_to_a_learner() -> None:
    admission = Admission(Caps(total=10, per_owner=4, outside_classes=10, new_per_owner_per_min=1))
    ada = Owner("ada-0123456789abcdef", "203.0.113.7")
    admission.admit(ada)
    assert "You have started 1 session in the last minute" in refusal(admission, ada).message


def test_a_refusal_for_another_cap_does_not_use_up_the_rate() -> None:
    admission = Admission(Caps(total=100, per_owner=1, outside_classes=100, new_per_owner_per_min=2))
    ada = Owner("ada-0123456789abcdef", "203.0.113.7")
    held = admission.admit(ada)
    for _ in range(5):
        assert refusal(admission, ada).reason == "owner_full"
    held.release()
    admission.admit(ada).release()  # the second start of the minute: the refusals counted nothing
    assert refusal(admission, ada).reason == "too_often"


def test_every_refusal_says_what_is_taken_apart_from_when_to_try_again() -> None:
    """A raw client reads `message` once, so it names the wait; a console tries again by itself and
    says so, so it shows `situation` and `advice`, which must not name a wait of their own."""
    errors: list[CapacityError] = []
    owner = Admission(Caps(total=100, per_owner=1, outside_classes=100))
    owner.admit(visitor(1))
    errors.append(refusal(owner, visitor(1)))
    klass = Admission(Caps(total=100, per_owner=4, outside_classes=100))
    klass.admit(member(1, cap=1))
    errors.append(refusal(klass, member(2, cap=1)))
    full = Admission(Caps(total=1, per_owner=4, outside_classes=1))
    full.admit(member(1))
    errors.append(refusal(full, member(2)))
    visitors = Admission(Caps(total=10, per_owner=4, outside_classes=0))
    errors.append(refusal(visitors, visitor(1)))
    often = Admission(Caps(total=100, per_owner=4, outside_classes=100, new_per_owner_per_min=1))
    often.admit(visitor(1)).release()
    errors.append(refusal(often, visitor(1)))
    busy = Admission(Caps(total=100, per_owner=4, outside_classes=100))
    busy.admit_exercise(visitor(1))
    with pytest.raises(CapacityError) as exercise:
        busy.admit_exercise(visitor(1))
    errors.append(exercise.value)
    assert [e.reason for e in errors] == ["owner_full", "class_full", "full", "visitors_full", "too_often",
                                          "exercise_busy"]  # fmt: skip
    for error in errors:
        assert error.message.startswith(error.situation + " "), error.message
        assert error.message.endswith(f"ry again in {error.retry_after_s} s."), error.message
        assert "again" not in error.situation + error.advice, error.situation
        assert error.situation.endswith(".") and not error.advice.endswith(".")
    assert errors[0].message == (
        "You already have 1 console open, the most one person may have. Close one (another tab?), then try "
        "again in 10 s."
    )
    assert (
        errors[2].message
        == "The playground is full right now (all 1 place taken, by consoles and exercise runs). Try again in 60 s."
    )


def test_one_address_fills_no_more_than_its_cap_across_identities() -> None:
    """Identities are free to make: before, 33 of them x 4 consoles from one address took all 125
    visitors' places of a default playground. Now the address stops at its own cap."""
    admission = Admission(Caps.from_share(total=250, per_owner=4, outside_share=0.5, per_address_outside=40))
    taken, refusals = 0, []
    for n in range(33):
        for _ in range(4):
            try:
                admission.admit(visitor(n, "203.0.113.7"))
                taken += 1
            except CapacityError as exc:
                refusals.append(exc)
    assert taken == 40 and admission.outside_classes == 40
    error = refusals[0]
    assert error.reason == "address_full" and error.retry_after_s == 60
    assert error.message == (
        "Your network address already has 40 consoles open outside a class, the most one address may have. "
        "If you are in a class, join it with its code, then try again in 60 s."
    )
    admission.admit(visitor(99, "203.0.113.8"))  # another address still gets a place
    assert refusal(admission, Owner(None, "203.0.113.7")).reason == "address_full"  # a script there too
    for n in range(4):  # class members behind the same address are counted by their class instead
        admission.admit(Owner(f"member-{n:04d}-0123456789", "203.0.113.7", "class-a", 50))
    assert admission.count_for_class("class-a") == 4


def test_one_person_with_many_identities_in_a_class_runs_no_more_exercises_at_once_than_its_cap() -> None:
    """From the side of a class member who made 10 identities and joined each: every identity's run was
    admitted past a class cap of 3, and filled the playground for another class."""
    admission = Admission(Caps(total=10, per_owner=4, outside_classes=5))
    consoles = [admission.admit(member(n, cap=3)) for n in range(3)]  # the class's consoles, at its cap
    runs, refused = [], []
    for n in range(10):
        try:
            runs.append(admission.admit_exercise(member(n, cap=3)))
        except CapacityError as exc:
            refused.append(exc)
    assert len(runs) == 3 and len(refused) == 7  # beside the consoles, never in their place
    assert {exc.reason for exc in refused} == {"class_runs_full"}
    assert "Your class has 3 exercise runs going" in refused[0].message and refused[0].retry_after_s == 5
    other = [admission.admit(member(n, class_id="class-b", cap=3)) for n in range(20, 23)]  # another class
    admission.admit_exercise(member(20, class_id="class-b", cap=3))
    runs[0].release()
    runs[0].release()
    admission.admit_exercise(member(9, cap=3))  # a run ended: the class's next may start
    for slot in (*consoles, *other):
        slot.release()
