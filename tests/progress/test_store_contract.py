"""The progress store's behaviour, run against every database behind the interface:
SQLite on disk and a real PostgreSQL server."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.fleet.store import FleetStore, LiveSession
from app.progress import ProgressStore, SQLiteProgressStore, oauth_sql, sql
from app.progress.migrations import SCHEMA_VERSION
from app.progress.postgres import PostgresProgressStore
from app.progress.store import (
    CODE_ALPHABET,
    DEFAULT_CLASS_SIZE,
    ENDPOINT_KEPT_S,
    JOIN_CODE_LENGTH,
    MAX_CLASS_NUMBER,
    MAX_PENDING_JOINS,
    OAUTH_CLIENT_IDLE_S,
    OAUTH_CLIENT_UNUSED_S,
    OAUTH_EVENTS_KEPT,
    OAUTH_GRANTS_KEPT,
    OAuthGrant,
    ProgressError,
)

ADA, BOB, CY = "learner-ada-0000000000", "learner-bob-0000000000", "learner-cy-00000000000"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        s: ProgressStore = SQLiteProgressStore(tmp_path / "p.sqlite3")
        s.open()
        yield s
        s.close()
    else:
        with request.getfixturevalue("postgres_server").fresh_database() as url:
            s = PostgresProgressStore(url)
            s.open()
            yield s
            s.close()


def test_schema_is_current(store) -> None:  # noqa: ANN001
    assert store.schema_version == SCHEMA_VERSION


def test_records_and_reads_a_learner(store) -> None:  # noqa: ANN001
    store.record_seen(ADA, "l/a")
    store.record_seen(ADA, "l/a")
    store.record_check(ADA, "l/a", "ping-answered")
    store.record_check(ADA, "l/a", "ping-answered")
    store.record_quiz_answer(ADA, "l/b", "q", ["c"], False)
    store.record_quiz_answer(ADA, "l/b", "q", ["a"], True)
    store.set_display_name(ADA, "  Ada   Lovelace ")
    progress = store.learner(ADA)
    assert progress.seen == {"l/a"}
    assert progress.checks == {"l/a": {"ping-answered"}}
    quiz = progress.quiz("l/b", "q")
    assert quiz.choices == ("a",) and quiz.correct and quiz.attempts == 2 and quiz.ever_correct
    assert progress.display_name == "Ada Lovelace"
    assert store.learner("nobody-0000000000000").seen == set()


def test_reset_forgets_work_but_keeps_name_and_class(store) -> None:  # noqa: ANN001
    klass = store.create_class("Tuesday group")
    store.join_class(ADA, klass.id, "Ada")
    store.record_seen(ADA, "l/a")
    store.record_check(ADA, "l/a", "x")
    store.record_quiz_answer(ADA, "l/a", "q", ["a"], True)
    store.reset_learner(ADA)
    progress = store.learner(ADA)
    assert (progress.seen, progress.checks, progress.quizzes) == (set(), {}, {})
    assert progress.display_name == "Ada" and progress.class_id == klass.id


def test_classes_codes_and_membership(store) -> None:  # noqa: ANN001
    first = store.create_class("Monday", max_sessions=30)
    second = store.create_class("Friday")
    assert len(first.join_code) == JOIN_CODE_LENGTH and set(first.join_code) <= set(CODE_ALPHABET)
    assert first.join_code != second.join_code
    assert [c.name for c in store.classes()] == ["Monday", "Friday"]
    assert store.get_class(first.id) == first and first.max_sessions == 30
    # People type codes loosely.
    loose = first.join_code.lower()[:3] + "-" + first.join_code.lower()[3:]
    assert store.class_by_code(loose) == first
    assert store.class_by_code("ZZZZZZ") is None
    store.join_class(ADA, first.id, "Ada")
    store.join_class(BOB, first.id, "Bob")
    store.join_class(CY, second.id, "Cy")
    store.record_check(BOB, "l/a", "ping-answered")
    learners = store.class_learners(first.id)
    assert [p.display_name for p in learners] == ["Ada", "Bob"]
    assert learners[1].checks == {"l/a": {"ping-answered"}}
    store.lock_joining(first.id, True)
    assert store.get_class(first.id).locked and not store.get_class(second.id).locked
    store.lock_joining(first.id, False)
    assert not store.get_class(first.id).locked
    store.delete_class(first.id)
    assert store.get_class(first.id) is None
    assert store.learner(BOB).checks == {}  # the class's learners went with it
    assert [p.display_name for p in store.class_learners(second.id)] == ["Cy"]


def test_bad_class_input_is_refused_with_a_reason(store) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="needs a name"):
        store.create_class("   ")
    wrong = {0: "at least 1", -1: "at least 1", MAX_CLASS_NUMBER + 1: "at most", 10**30: "at most",
             True: "a whole number"}  # fmt: skip
    for number, why in wrong.items():
        with pytest.raises(ValueError, match=f"^The session cap is {why}"):
            store.create_class("x", max_sessions=number)
        with pytest.raises(ValueError, match=f"^The expected class size is {why}"):
            store.create_class("x", expected_size=number)
    klass = store.create_class("y", max_sessions=MAX_CLASS_NUMBER, expected_size=MAX_CLASS_NUMBER)
    with pytest.raises(ValueError, match="expected class size"):
        store.update_class(klass.id, None, 10**30)
    assert store.get_class(klass.id).expected_size == MAX_CLASS_NUMBER
    with pytest.raises(ValueError, match="at most 40"):
        store.join_class(ADA, klass.id, "n" * 41)
    assert store.classes() == [klass]


@pytest.mark.parametrize(
    ("typed", "why"),
    [("", "a whole number"), ("abc", "a whole number"), ("1.5", "a whole number"), ("1e3", "a whole number"),
     ("٣", "a whole number"), ("²", "a whole number"), ("0", "at least 1"), ("-5", "at least 1"),
     ("10001", "at most"), ("9" * 5000, "at most"), ("0" * 50 + "7", None), (" 40 ", None)],
)  # fmt: skip
def test_a_typed_class_number_is_read_or_refused_with_a_reason(typed: str, why: str | None) -> None:
    from app.progress.store import parse_class_number

    if why is None:
        assert parse_class_number(typed, "The expected class size") == int(typed)
    else:
        with pytest.raises(ValueError, match=f"^The expected class size is {why}"):
            parse_class_number(typed, "The expected class size")


def test_joins_past_the_expected_size_wait_for_the_instructor(store) -> None:  # noqa: ANN001
    klass = store.create_class("Small", expected_size=2)
    assert (klass.expected_size, store.create_class("Default").expected_size) == (2, DEFAULT_CLASS_SIZE)
    learners = [f"learner-{n:02d}-000000000000" for n in range(6)]
    outcomes = [store.join_class(learner, klass.id, f"L{n}") for n, learner in enumerate(learners)]
    assert outcomes == ["joined", "joined", "pending", "pending", "pending", "pending"]
    assert store.class_size(klass.id) == 2
    assert [p.display_name for p in store.class_learners(klass.id)] == ["L0", "L1"]
    assert store.join_class(learners[0], klass.id, "L0 again") == "joined"  # a member stays one
    waiting = store.pending_joins(klass.id)
    assert [(w.learner_id, w.display_name, w.denied) for w in waiting] == [
        (learner, f"L{n}", False) for n, learner in enumerate(learners) if n >= 2
    ]
    assert store.learner(learners[2]).class_id is None and store.join_request(learners[0]) is None

    assert store.decide_join(klass.id, learners[2], approve=True)
    assert store.learner(learners[2]).class_id == klass.id and store.join_request(learners[2]) is None
    assert store.learner(learners[2]).display_name == "L2"
    assert store.decide_join(klass.id, learners[3], approve=False)
    assert store.join_request(learners[3]).denied and store.learner(learners[3]).class_id is None
    assert not store.decide_join(klass.id, learners[3], approve=True)  # denied: nothing waits
    assert [t.learner_id for t in store.turned_away(klass.id)] == [learners[3]]
    assert not store.decide_join(klass.id, learners[0], approve=True)  # a member: nothing waits
    assert not store.decide_join(store.create_class("Other").id, learners[4], approve=True)
    assert [w.learner_id for w in store.pending_joins(klass.id)] == learners[4:]
    assert store.class_size(klass.id) == 3

    store.lock_joining(klass.id, True)
    late = "learner-late-0000000000"
    assert store.join_class(late, klass.id, "Late") == "locked"
    assert store.join_request(late) is None and store.learner(late).class_id is None
    assert store.join_class(learners[0], klass.id, "L0") == "joined"  # members keep their place
    assert store.class_size(klass.id) == 3
    store.lock_joining(klass.id, False)
    assert store.join_class(late, klass.id, "Late") == "pending"
    store.update_class(klass.id, max_sessions=9, expected_size=5)
    assert (store.get_class(klass.id).max_sessions, store.get_class(klass.id).expected_size) == (9, 5)
    assert store.join_class("learner-next-0000000000", klass.id, "Next") == "joined"

    store.delete_class(klass.id)
    assert store.join_request(learners[4]) is None and store.join_request(learners[3]) is None


def test_whom_the_instructor_turns_away_stays_out_whatever_the_code_until_let_in(store) -> None:  # noqa: ANN001
    """From the side of a learner denied or removed who still has the code (it was projected): asking
    again, by way of another class, or with a new code, leaves them out; the instructor lets them in."""
    klass = store.create_class("Firm", expected_size=1)
    other = store.create_class("Other")
    assert store.join_class(ADA, klass.id, "Ada") == "joined"
    assert store.join_class(BOB, klass.id, "Bob") == "pending"
    assert store.decide_join(klass.id, BOB, approve=False)
    assert store.join_class(BOB, klass.id, "Bob again") == "denied"  # not waiting again
    assert store.pending_joins(klass.id) == []
    assert store.remove_from_class(klass.id, ADA)
    assert not store.remove_from_class(klass.id, ADA)  # not a member now
    assert store.join_class(ADA, klass.id, "Ada") == "denied" and store.class_size(klass.id) == 0
    assert store.join_class(ADA, other.id, "Ada") == "joined"  # elsewhere, welcome
    assert store.join_class(ADA, klass.id, "Ada") == "denied"  # ... and still out here
    old_code = store.get_class(klass.id).join_code
    code = store.new_join_code(klass.id)
    assert code != old_code and store.class_by_code(old_code) is None
    assert store.class_by_code(code).id == klass.id
    assert store.join_class(BOB, klass.id, "Bob") == "denied"
    assert [(t.learner_id, t.display_name) for t in store.turned_away(klass.id)] == [
        (BOB, "Bob"),
        (ADA, "Ada"),
    ]
    assert store.let_in_again(klass.id, ADA) and not store.let_in_again(klass.id, ADA)
    assert store.join_class(ADA, klass.id, "Ada") == "joined"
    assert store.learner(ADA).class_id == klass.id
    assert [t.learner_id for t in store.turned_away(klass.id)] == [BOB]
    store.delete_class(klass.id)
    assert store.turned_away(klass.id) == []


def test_a_member_may_not_take_another_members_name_but_the_instructor_may_give_it(store) -> None:  # noqa: ANN001
    """From the side of a learner who renames themselves after a classmate: the instructor saw two rows
    of one name, and any rename of theirs could be undone the same way."""
    klass = store.create_class("Names")
    assert store.join_class(ADA, klass.id, "Grace Hopper") == "joined"
    assert store.join_class(BOB, klass.id, "Bob") == "joined"
    for taken in ("Grace Hopper", "grace  HOPPER"):
        with pytest.raises(ValueError, match="Another member of the class is already called"):
            store.set_display_name(BOB, taken)
        with pytest.raises(ValueError, match="Another member of the class is already called"):
            store.join_class(BOB, klass.id, taken)  # joining again under it, too
        with pytest.raises(ValueError, match="Another member"):
            store.join_class(CY, klass.id, taken)
    assert store.learner(BOB).display_name == "Bob" and store.learner(CY).display_name is None
    store.set_display_name(ADA, "Grace Hopper")  # one's own name again: fine
    store.set_display_name(BOB, "Grace Hopper B.")
    other = store.create_class("Another class")
    assert store.join_class(CY, other.id, "Grace Hopper") == "joined"  # another class's members differ
    store.rename_learner(BOB, "Grace Hopper")  # the instructor's word goes


def test_a_new_resume_code_moves_the_learners_sign_in_generation_on(store) -> None:  # noqa: ANN001
    assert store.sign_in_generation(ADA) == 0  # no row yet
    store.set_display_name(ADA, "Ada")
    first = store.resume_code(ADA)
    assert store.sign_in_generation(ADA) == 0
    second = store.new_resume_code(ADA)
    assert second != first and store.sign_in_generation(ADA) == 1
    store.new_resume_code(ADA)
    assert store.sign_in_generation(ADA) == 2 and store.sign_in_generation(BOB) == 0


def test_removing_a_learner_frees_the_seat_they_took_and_its_identifier(store) -> None:  # noqa: ANN001
    """From the side of a learner who took another's seat by typing their name: removed, they lose its
    student identifier, and the real owner takes it when they join."""
    klass = store.create_class("Seated")
    store.add_seats(klass.id, [("Alice Smith", "S-1001")])
    assert store.join_class(BOB, klass.id, "alice   SMITH") == "joined"
    assert store.learner(BOB).student_id == "S-1001"
    store.rename_learner(BOB, "Eve")
    assert store.remove_from_class(klass.id, BOB)
    assert store.learner(BOB).student_id is None
    assert [(s.name, s.claimed) for s in store.seats(klass.id)] == [("Alice Smith", False)]
    assert store.join_class(ADA, klass.id, "Alice Smith") == "joined"
    assert store.learner(ADA).student_id == "S-1001"
    # An identifier the instructor gave by hand is theirs to keep: only the seat's goes.
    store.join_class(CY, klass.id, "Cy")
    store.set_student_id(CY, "S-7")
    assert store.remove_from_class(klass.id, CY) and store.learner(CY).student_id == "S-7"


def test_waiting_joins_are_bounded_per_class(store) -> None:  # noqa: ANN001
    klass = store.create_class("Crowded", expected_size=1)
    assert store.join_class(ADA, klass.id, "Ada") == "joined"
    for n in range(MAX_PENDING_JOINS):
        assert store.join_class(f"learner-{n:04d}-0000000000", klass.id, None) == "pending"
    assert store.join_class(BOB, klass.id, "Bob") == "too_many_waiting"
    assert store.join_request(BOB) is None
    assert store.join_class("learner-0000-0000000000", klass.id, "Again") == "pending"  # already waiting
    assert len(store.pending_joins(klass.id)) == MAX_PENDING_JOINS


def test_two_replicas_joining_at_once_fill_the_expected_size_exactly(store, tmp_path: Path) -> None:  # noqa: ANN001
    """Ten joins at once from two connections (two replicas) into a class of 3: three become members."""
    import threading

    if isinstance(store, SQLiteProgressStore):
        other: ProgressStore = SQLiteProgressStore(tmp_path / "p.sqlite3")
    else:
        other = PostgresProgressStore(store.url)
    other.open()
    klass = store.create_class("Rush", expected_size=3)
    outcomes: list[str] = []
    try:

        def join(n: int) -> None:
            outcomes.append(
                (store if n % 2 else other).join_class(f"learner-{n:02d}-00000000000", klass.id, None)
            )

        threads = [threading.Thread(target=join, args=(n,)) for n in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        other.close()
    assert sorted(outcomes) == ["joined"] * 3 + ["pending"] * 7
    assert store.class_size(klass.id) == 3 and len(store.pending_joins(klass.id)) == 7


def test_resume_codes(store) -> None:  # noqa: ANN001
    code = store.resume_code(ADA)
    assert store.resume_code(ADA) == code  # stable
    assert store.learner_for_resume_code(code.lower()) == ADA
    assert store.learner_for_resume_code("NOPE") is None
    assert store.resume_code(BOB) != code


def test_timestamps_keep_sub_second_precision(store) -> None:  # noqa: ANN001
    klass = store.create_class("precise")
    assert abs(store.get_class(klass.id).created_at - time.time()) < 60
    assert store.get_class(klass.id).created_at == klass.created_at


def test_a_steps_status_and_quizzes_right_are_answered_by_the_progress() -> None:
    from app.progress.store import LearnerProgress, QuizRecord

    progress = LearnerProgress("ada-0123456789abcdef")
    assert progress.step_status("l/s", ("a-check",), ("q1",)) == "new"
    progress.seen.add("l/s")
    assert progress.step_status("l/s", ("a-check",), ("q1",)) == "started"
    progress.checks["l/s"] = {"a-check"}
    progress.quizzes[("l/s", "q1")] = QuizRecord(("b",), correct=False, attempts=2, ever_correct=True)
    assert progress.quizzes_right("l/s", ["q1", "q2"]) == 1 and progress.quiz_right("l/s", "q1")
    assert progress.step_status("l/s", ("a-check",), ("q1",)) == "done"
    assert progress.step_status("l/s", ("a-check",), ("q1", "q2")) == "started"


def test_a_learners_server_file_keeps_its_last_versions(store) -> None:  # noqa: ANN001
    from app.progress.store import SERVER_FILE_VERSIONS

    assert store.server_file(ADA) is None and store.server_file_history(ADA) == []
    first = store.save_server_file(ADA, "print('é')\n")
    assert (first.version, first.size) == (1, len("print('é')\n".encode()))
    for n in range(2, SERVER_FILE_VERSIONS + 3):
        store.save_server_file(ADA, f"version = {n}\n")
    latest = store.server_file(ADA)
    assert latest is not None and latest.source == f"version = {SERVER_FILE_VERSIONS + 2}\n"
    history = store.server_file_history(ADA)
    assert [v.version for v in history] == list(range(SERVER_FILE_VERSIONS + 2, 2, -1))
    assert all(v.source == "" for v in history)
    assert store.server_file(ADA, 1) is None  # beyond the kept versions
    assert store.server_file(ADA, 3).source == "version = 3\n"
    assert store.server_file(BOB) is None  # one learner's file is nobody else's


def test_each_file_of_a_workspace_has_its_own_versions(store) -> None:  # noqa: ANN001
    store.save_server_file(ADA, "server = 1\n")
    store.save_server_file(ADA, "server = 2\n")
    tests = store.save_server_file(ADA, "def test_it(): pass\n", name="test_server.py")
    assert tests.version == 1  # numbered apart from server.py's
    assert store.server_file(ADA).source == "server = 2\n"
    assert store.server_file(ADA, name="test_server.py").source == "def test_it(): pass\n"
    assert store.server_file(ADA, 2, name="test_server.py") is None
    assert [v.version for v in store.server_file_history(ADA, name="test_server.py")] == [1]
    assert [v.version for v in store.server_file_history(ADA)] == [2, 1]
    assert store.server_file(BOB, name="test_server.py") is None


def test_a_deleted_class_takes_its_learners_files_with_it(store) -> None:  # noqa: ANN001
    klass = store.create_class("Files")
    store.join_class(BOB, klass.id, "Bob")
    store.save_server_file(BOB, "x = 1\n")
    store.delete_class(klass.id)
    assert store.server_file(BOB) is None


def _live(session_id: str, class_id: str | None = "c1", learner: str = ADA):  # noqa: ANN202
    now = time.time()
    return LiveSession(session_id, "", learner, class_id, "demo-orders", now, now)


def test_live_sessions_count_across_replicas_only_while_their_replica_beats(store) -> None:  # noqa: ANN001
    fleet = FleetStore(store)
    fleet.register_replica("r1")
    fleet.register_replica("r2")
    assert fleet.add_live_session("r1", _live("s1"), 3, 30) is None
    assert fleet.add_live_session("r2", _live("s2", learner=BOB), 3, 30) is None
    assert fleet.add_live_session("r2", _live("s3", class_id=None), None, 30) is None
    assert [s.id for s in fleet.live_sessions(30, "c1")] == ["s1", "s2"]
    assert {s.replica_id for s in fleet.live_sessions(30)} == {"r1", "r2"}
    assert fleet.live_sessions(0, "c1") == []  # no heartbeat is that fresh: nothing counts
    s1 = next(s for s in fleet.live_sessions(30) if s.id == "s1")
    assert fleet.heartbeat("r1", [replace(s1, last_active_at=12345.0)]) is True
    assert next(s for s in fleet.live_sessions(30) if s.id == "s1").last_active_at == 12345.0
    fleet.end_live_sessions(["s2"])
    assert [s.id for s in fleet.live_sessions(30, "c1")] == ["s1"]


def test_a_full_class_refuses_and_says_how_full(store) -> None:  # noqa: ANN001
    fleet = FleetStore(store)
    fleet.register_replica("r1")
    for n in range(2):
        assert fleet.add_live_session("r1", _live(f"s{n}"), 2, 30) is None
    assert fleet.add_live_session("r1", _live("s9"), 2, 30) == "class"
    assert len(fleet.live_sessions(30, "c1")) == 2


def test_one_learners_sessions_count_across_replicas(store) -> None:  # noqa: ANN001
    """A learner routed to each replica in turn (nginx hashes a cookie the app alone can check) holds
    the per-learner cap once, not once a replica; in a class or not."""
    fleet = FleetStore(store)
    for replica in ("r1", "r2", "r3"):
        fleet.register_replica(replica)
    assert fleet.add_live_session("r1", _live("a1", class_id=None), None, 30, learner_cap=2) is None
    assert fleet.add_live_session("r2", _live("a2", class_id="c1"), 10, 30, learner_cap=2) is None
    for replica in ("r1", "r2", "r3"):
        assert fleet.add_live_session(replica, _live(f"x-{replica}"), 10, 30, learner_cap=2) == "learner"
    assert fleet.add_live_session("r3", _live("b1", learner=BOB), 10, 30, learner_cap=2) is None
    assert sorted(s.id for s in fleet.live_sessions(30)) == ["a1", "a2", "b1"]
    fleet.end_live_sessions(["a1"])
    assert fleet.add_live_session("r3", _live("a3"), 10, 30, learner_cap=2) is None


def test_a_forgotten_replica_is_back_with_its_sessions_at_its_next_heartbeat(store) -> None:  # noqa: ANN001
    """The others forget a replica silent for FORGET_S (stopped, or cut off from the database); one that
    was only cut off beats again, and its live sessions count once more (else its class's cap and its
    learners' would hold without them)."""
    fleet = FleetStore(store)
    fleet.register_replica("r1")
    fleet.register_replica("r2")
    fleet.add_live_session("r1", _live("s1"), 2, 30)
    held = fleet.live_sessions(30)
    with store.writing() as db:
        store.execute(db, "UPDATE replicas SET heartbeat_at = 0 WHERE id = ?", ("r1",))
    assert fleet.drop_stale_replicas(300) == 1 and fleet.live_sessions(30) == []
    assert fleet.add_live_session("r2", _live("s2"), 2, 30) is None
    assert fleet.heartbeat("r1", held) is False  # forgotten: its row and its sessions are back
    assert sorted(s.id for s in fleet.live_sessions(30, "c1")) == ["s1", "s2"]
    assert fleet.add_live_session("r2", _live("s3"), 2, 30) == "class"
    assert fleet.heartbeat("r1", held) is True


def test_ending_a_session_held_by_another_replica_goes_through_its_commands(store) -> None:  # noqa: ANN001
    fleet = FleetStore(store)
    fleet.register_replica("r1")
    fleet.add_live_session("r1", _live("s1"), None, 30)
    assert fleet.request_session_end("nobody", 30) is None
    assert fleet.request_session_end("s1", 30) == "r1"
    assert fleet.request_session_end("s1", 30) == "r1"  # asked twice: one command
    assert fleet.take_session_commands("r2") == []
    assert fleet.take_session_commands("r1") == [("s1", "end")]
    assert fleet.take_session_commands("r1") == []


def test_a_retired_or_silent_replica_takes_its_sessions_with_it(store) -> None:  # noqa: ANN001
    fleet = FleetStore(store)
    fleet.register_replica("r1")
    fleet.register_replica("r2")
    fleet.add_live_session("r1", _live("s1"), None, 30)
    fleet.add_live_session("r2", _live("s2"), None, 30)
    fleet.retire_replica("r1")
    assert [s.id for s in fleet.live_sessions(30)] == ["s2"]
    assert fleet.drop_stale_replicas(3600) == 0
    assert fleet.drop_stale_replicas(-1) == 1  # every heartbeat is older than a second from now
    assert fleet.live_sessions(30) == []


def test_a_class_cap_holds_when_replicas_open_at_once(
    store, tmp_path: Path, request: pytest.FixtureRequest
) -> None:  # noqa: ANN001
    """Ten opens at once from two connections (two replicas) into a class capped at 3: three get in."""
    import threading

    fleet = FleetStore(store)
    if isinstance(store, SQLiteProgressStore):
        other: ProgressStore = SQLiteProgressStore(tmp_path / "p.sqlite3")
    else:
        other = PostgresProgressStore(store.url)
    other.open()
    try:
        fleet.register_replica("r1")
        other_fleet = FleetStore(other)
        other_fleet.register_replica("r2")
        results: list[int | None] = []
        lock = threading.Lock()

        def open_one(n: int) -> None:
            mine = fleet if n % 2 else other_fleet
            outcome = mine.add_live_session("r1" if n % 2 else "r2", _live(f"s{n}", learner=f"l{n}"), 3, 30)
            with lock:
                results.append(outcome)

        threads = [threading.Thread(target=open_one, args=(n,)) for n in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        other.close()
    assert results.count(None) == 3 and len(results) == 10
    assert len(fleet.live_sessions(30, "c1")) == 3


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_class_from_before_expected_sizes_gets_the_default_and_keeps_its_members(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlib import ExitStack
    from functools import partial

    from app.progress import migrations

    with ExitStack() as stack:
        if kind == "sqlite":
            make = partial(SQLiteProgressStore, tmp_path / "old.sqlite3")
        else:
            url = stack.enter_context(request.getfixturevalue("postgres_server").fresh_database())
            make = partial(PostgresProgressStore, url)
        with monkeypatch.context() as before:  # the schema as it was: version 7
            before.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:7])
            before.setattr(migrations, "SCHEMA_VERSION", 7)
            old = make()
            old.open()
            with old._write() as db:
                old._exec(db, "INSERT INTO classes (id, name, join_code, created_at) VALUES (?, ?, ?, ?)",
                          ("c-old", "Before", "OLDCDE", time.time()))  # fmt: skip
            old.close()
        new = stack.enter_context(closing_store(make()))
        assert new.schema_version == SCHEMA_VERSION
        klass = new.get_class("c-old")
        assert klass is not None and (klass.expected_size, klass.locked) == (DEFAULT_CLASS_SIZE, False)
        assert new.join_class(ADA, "c-old", "Ada") == "joined"


def closing_store(store):  # noqa: ANN001, ANN201
    from contextlib import closing

    store.open()
    return closing(store)


def test_an_ended_or_expired_endpoints_flow_and_grants_go_and_the_endpoint_a_day_later(
    store, monkeypatch
) -> None:  # noqa: ANN001
    clock = [time.time()]
    monkeypatch.setattr(sql, "time", SimpleNamespace(time=lambda: clock[0]))
    ended = store.create_endpoint(ADA, "demo-orders", "ended", 3600, auth="oauth")
    expired = store.create_endpoint(ADA, "demo-orders", "expired", 60, auth="oauth")
    live = store.create_endpoint(BOB, "demo-orders", "live", 10 * ENDPOINT_KEPT_S, auth="oauth")
    for info in (ended, expired, live):
        store.add_oauth_event(info.id, "{}")
        store.add_oauth_grant(OAuthGrant(f"grant-{info.id}", "refresh", "c", info.id, "{}", clock[0] + 1e6))
    store.end_endpoint(ended.id)
    assert store.oauth_events(ended.id) == [] and store.any_oauth_grant(f"grant-{ended.id}") is None
    assert store.oauth_events(expired.id)  # not expired yet
    clock[0] += ENDPOINT_KEPT_S - 120  # not yet a day since either went
    store.create_endpoint(CY, "demo-orders", "next", 3600)
    assert (
        store.endpoint_by_token_hash("ended") is not None
        and store.endpoint_by_token_hash("expired") is not None
    )
    assert store.oauth_events(expired.id) == [] and store.any_oauth_grant(f"grant-{expired.id}") is None
    clock[0] += 240
    store.create_endpoint(CY, "demo-orders", "later", 3600)
    for gone, token in ((ended, "ended"), (expired, "expired")):
        assert store.endpoint_by_token_hash(token) is None
        assert store.oauth_events(gone.id) == [] and store.any_oauth_grant(f"grant-{gone.id}") is None
    assert store.endpoint_by_token_hash("live") is not None and store.oauth_events(live.id)
    assert store.any_oauth_grant(f"grant-{live.id}") is not None


def test_clients_nobody_uses_are_let_go_as_new_ones_register(store, monkeypatch) -> None:  # noqa: ANN001
    """Anyone may register a client: one never used goes after OAUTH_CLIENT_UNUSED_S, one used after
    OAUTH_CLIENT_IDLE_S from its last grant, each when a later client registers."""
    clock = [time.time()]
    monkeypatch.setattr(oauth_sql, "time", SimpleNamespace(time=lambda: clock[0]))
    info = store.create_endpoint(ADA, "demo-orders", "hash-of-token", 3600 * 24 * 10, auth="oauth")
    store.save_oauth_client("never-used", "{}")
    store.save_oauth_client("by-hand", "{}", info.id)
    store.save_oauth_client("used", "{}")
    store.add_oauth_grant(OAuthGrant("code", "code", "used", info.id, "{}", clock[0] + 60))
    assert store.oauth_clients_of(info.id) == 1 and store.oauth_clients_of("another") == 0
    clock[0] += OAUTH_CLIENT_UNUSED_S + 1
    assert store.oauth_client("never-used") == "{}"  # nothing is let go until a client registers
    store.save_oauth_client("next", "{}")
    assert store.oauth_client("never-used") is None and store.oauth_client("by-hand") is None
    assert store.oauth_clients_of(info.id) == 0
    assert store.oauth_client("used") == "{}" and store.oauth_client("next") == "{}"
    store.add_oauth_grant(OAuthGrant("refresh", "refresh", "used", info.id, "{}", clock[0] + 60))
    clock[0] += OAUTH_CLIENT_IDLE_S - 60  # two days on from the last grant, less a minute
    store.save_oauth_client("later", "{}")
    assert store.oauth_client("used") == "{}"
    clock[0] += 120
    store.save_oauth_client("later still", "{}")
    assert store.oauth_client("used") is None and store.oauth_client("next") is None


def test_a_protected_endpoint_and_its_grants_are_kept_by_hash_used_once_and_revoked(store) -> None:  # noqa: ANN001
    info = store.create_endpoint(ADA, "demo-orders", "hash-of-token", 3600, auth="oauth")
    assert info.auth == "oauth" and store.endpoint_by_token_hash("hash-of-token").auth == "oauth"
    assert store.create_endpoint(ADA, "demo-orders", "another", 3600).auth == "none"
    store.save_oauth_client("client-1", '{"client_id": "client-1"}')
    store.save_oauth_client("client-1", '{"client_id": "client-1", "client_name": "again"}')
    assert store.oauth_client("client-1") == '{"client_id": "client-1", "client_name": "again"}'
    assert store.oauth_client("nobody") is None
    now = time.time()
    code = OAuthGrant("code-hash", "code", "client-1", info.id, '{"scopes": ["mcp:read"]}', now + 60)
    store.add_oauth_grant(code)
    store.add_oauth_grant(OAuthGrant("old-hash", "access", "client-1", info.id, "{}", now - 1))
    assert store.oauth_grant("code-hash", "code") == code
    assert store.oauth_grant("code-hash", "access") is None  # a kind is part of the key's meaning
    assert store.oauth_grant("old-hash", "access") is None  # expired
    assert store.use_oauth_grant("code-hash", "code") == code
    assert store.use_oauth_grant("code-hash", "code") is None  # once only
    assert store.oauth_grant("code-hash", "code") is None
    store.add_oauth_grant(OAuthGrant("token-hash", "access", "client-1", info.id, "{}", now + 60))
    store.revoke_oauth_grants(["token-hash", "not-there"])
    assert store.oauth_grant("token-hash", "access") is None
    with pytest.raises(ProgressError):
        store.add_oauth_grant(OAuthGrant("x", "password", "client-1", None, "{}", now + 60))


def test_the_tokens_issued_from_one_code_are_revoked_together_and_only_they(store) -> None:  # noqa: ANN001
    info = store.create_endpoint(ADA, "demo-orders", "hash-family", 3600, auth="oauth")
    other = store.create_endpoint(ADA, "demo-orders", "hash-family-2", 3600, auth="oauth")
    later = time.time() + 60
    for key, endpoint, family in (("a1", info.id, "f00d"), ("r1", info.id, "f00d"), ("a2", info.id, "beef"),
                                  ("a3", other.id, "f00d")):  # fmt: skip
        kind = "refresh" if key.startswith("r") else "access"
        store.add_oauth_grant(OAuthGrant(key, kind, "c", endpoint, json.dumps({"family": family}), later))
    assert store.revoke_oauth_family(info.id, "f00d") == 2
    assert store.oauth_grant("a1", "access") is None and store.oauth_grant("r1", "refresh") is None
    assert store.oauth_grant("a2", "access") is not None  # another line
    assert store.oauth_grant("a3", "access") is not None  # another endpoint's
    assert store.revoke_oauth_family(info.id, "f00d") == 0
    with pytest.raises(ProgressError):
        store.revoke_oauth_family(info.id, "%")  # no pattern of one's own


def test_an_endpoints_flow_steps_are_kept_in_order_the_newest_only(store) -> None:  # noqa: ANN001
    info = store.create_endpoint(ADA, "demo-orders", "hash-events", 3600, auth="oauth")
    for n in range(OAUTH_EVENTS_KEPT + 5):
        store.add_oauth_event(info.id, f'{{"n": {n}}}')
    events = store.oauth_events(info.id)
    assert len(events) == OAUTH_EVENTS_KEPT and events[0][2] == '{"n": 5}' and events[-1][2].endswith(" 204}")
    assert store.oauth_events(info.id, after=events[-2][0]) == [events[-1]]
    assert store.oauth_events("another") == []
    store.add_oauth_grant(OAuthGrant("used", "code", "c", info.id, "{}", time.time() + 60))
    store.use_oauth_grant("used", "code")
    assert store.oauth_grant("used", "code") is None and store.any_oauth_grant("used").endpoint_id == info.id


def test_an_endpoints_grants_of_a_kind_are_bounded_the_used_then_the_oldest_going_first(store) -> None:  # noqa: ANN001
    """A client refreshing in a loop makes a used refresh token each time: they are bounded per
    endpoint and kind, and a neighbour's grants, or another kind, are not what makes room."""
    info = store.create_endpoint(ADA, "demo-orders", "hash-bounded", 3600, auth="oauth")
    other = store.create_endpoint(BOB, "demo-orders", "hash-other", 3600, auth="oauth")
    now = time.time()
    store.add_oauth_grant(OAuthGrant("neighbours", "refresh", "c", other.id, "{}", now + 10))
    store.add_oauth_grant(OAuthGrant("access", "access", "c", info.id, "{}", now + 10))
    for n in range(OAUTH_GRANTS_KEPT):
        store.add_oauth_grant(OAuthGrant(f"r{n}", "refresh", "c", info.id, "{}", now + 100 + n))
    for n in (50, 60):
        assert store.use_oauth_grant(f"r{n}", "refresh") is not None
    store.add_oauth_grant(OAuthGrant("next", "refresh", "c", info.id, "{}", now + 1000))
    assert store.any_oauth_grant("r50") is None and store.any_oauth_grant("r60") is not None  # used first
    assert store.oauth_grant("r0", "refresh") is not None
    store.add_oauth_grant(OAuthGrant("next2", "refresh", "c", info.id, "{}", now + 1000))
    store.add_oauth_grant(OAuthGrant("next3", "refresh", "c", info.id, "{}", now + 1000))
    assert store.any_oauth_grant("r60") is None and store.any_oauth_grant("r0") is None  # then the oldest
    assert (
        store.oauth_grant("r1", "refresh") is not None and store.oauth_grant("next3", "refresh") is not None
    )
    assert (
        store.oauth_grant("neighbours", "refresh") is not None
        and store.oauth_grant("access", "access") is not None
    )


def test_a_consent_shown_to_the_owner_is_the_last_to_make_room(store) -> None:  # noqa: ANN001
    info = store.create_endpoint(ADA, "demo-orders", "hash-shown", 3600, auth="oauth")
    now = time.time()
    store.add_oauth_grant(OAuthGrant("owners", "consent", "c", info.id, "{}", now + 10))  # the soonest to go
    store.show_oauth_grant("owners")
    for n in range(OAUTH_GRANTS_KEPT + 5):
        store.add_oauth_grant(OAuthGrant(f"pushed{n}", "consent", "c", info.id, "{}", now + 100 + n))
    assert store.oauth_grant("owners", "consent") is not None
    assert store.oauth_grant("pushed0", "consent") is None  # the unshown ones made room


def test_a_protected_endpoints_tool_scopes_are_kept(store) -> None:  # noqa: ANN001
    info = store.create_endpoint(ADA, "my-server", "hash-scopes", 3600, auth="oauth")
    assert info.tool_scopes == "{}" and store.endpoint_by_token_hash("hash-scopes").tool_scopes == "{}"
    store.set_tool_scopes(info.id, '{"delete_order": "orders:write"}')
    assert store.endpoint_by_token_hash("hash-scopes").tool_scopes == '{"delete_order": "orders:write"}'


def test_the_roster_changes_what_the_class_shows_and_not_the_learners_activity(store) -> None:  # noqa: ANN001
    klass = store.create_class("Roster")
    store.join_class(ADA, klass.id, "Ada")
    before = store.class_learners(klass.id)[0].last_seen_at
    store.set_class_message(klass.id, "Quiz at 3")
    store.rename_learner(ADA, "Ada L.")
    store.set_student_id(ADA, "s-1815")
    assert store.get_class(klass.id).message == "Quiz at 3"
    [ada] = store.class_learners(klass.id)
    assert (ada.display_name, ada.student_id, ada.last_seen_at) == ("Ada L.", "s-1815", before)
    old = store.resume_code(ADA, touch=False)  # the instructor's view of it
    new = store.new_resume_code(ADA)
    assert store.class_learners(klass.id)[0].last_seen_at == before  # neither is the learner's activity
    assert (
        new != old
        and store.learner_for_resume_code(old) is None
        and store.learner_for_resume_code(new) == ADA
    )
    assert store.remove_from_class(klass.id, ADA) is True
    assert store.remove_from_class(klass.id, ADA) is False  # no longer a member
    assert store.class_learners(klass.id) == [] and store.learner_class(ADA) is None
    store.set_class_message(klass.id, None)
    assert store.get_class(klass.id).message is None


def test_a_class_learners_current_step_is_the_one_opened_last(store) -> None:  # noqa: ANN001
    klass = store.create_class("Current")
    store.join_class(BOB, klass.id, "Bob")
    store.record_seen(BOB, "l/a")
    store.record_seen(BOB, "l/b")
    [bob] = store.class_learners(klass.id)
    assert bob.current_step is not None and bob.current_step[0] == "l/b"
    assert bob.current_step[1] <= bob.current_step[2]


def test_a_roster_seat_is_taken_by_the_learner_who_joins_under_its_name(store) -> None:  # noqa: ANN001
    klass = store.create_class("Seats")
    assert (
        store.add_seats(klass.id, [("Ada  Lovelace", "s-1"), ("Alan Turing", None), ("ada lovelace", "dup")])
        == 2
    )
    assert store.add_seats(klass.id, [("Alan Turing", "s-2")]) == 0  # already seated: left as it is
    store.join_class(ADA, klass.id, "ADA LOVELACE")  # case and spaces do not matter
    store.join_class(BOB, klass.id, "Bob")  # no seat of that name: a member without one
    seats = store.seats(klass.id)
    assert [(s.name, s.student_id, s.claimed) for s in seats] == [
        ("Ada Lovelace", "s-1", True),
        ("Alan Turing", None, False),
    ]
    by_name = {p.display_name: p for p in store.class_learners(klass.id)}
    assert by_name["ADA LOVELACE"].student_id == "s-1" and by_name["Bob"].student_id is None
    store.delete_class(klass.id)
    assert store.seats(klass.id) == []


def test_a_learners_latest_exercise_run_of_each_step_is_kept(store) -> None:  # noqa: ANN001
    klass = store.create_class("Runs")
    store.join_class(ADA, klass.id, "Ada")
    store.record_exercise_run(ADA, "l/a", False, '{"passed": false}')
    store.record_exercise_run(ADA, "l/b", False, '{"passed": false}')
    store.record_exercise_run(ADA, "l/a", True, '{"passed": true}')  # replaces the earlier run of l/a
    runs = store.exercise_runs(ADA)
    assert [(r.step_slug, r.passed) for r in runs] == [("l/a", True), ("l/b", False)]
    assert store.failing_exercises(klass.id) == {(ADA, "l/b")}
    assert store.exercise_runs(BOB) == []
