"""A class from the attacker's side: one address joining again and again with the join code fills the
class only up to its expected size (the rest wait for the instructor), the instructor approves or denies
each waiting join, locking joining refuses even the right code, and no number in a class form reaches
the store unchecked (docs/hosting.md, "Running a class")."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest
from bs4 import BeautifulSoup

from tests.support.inprocess import InProcessApp

TOKEN = "instructor-token-for-class-joins"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
JOINED = "/course?joined=1"
WAITING = "/join/waiting"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessApp]:
    with InProcessApp(tmp_path_factory.mktemp("class-joins"), instructor_token=TOKEN) as app:
        yield app


@pytest.fixture
def people() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def teacher(app: InProcessApp) -> httpx.Client:
    return app.plain_client(headers=BEARER)


def make_class(app: InProcessApp, name: str, size: int) -> tuple[str, str]:
    with teacher(app) as client:
        made = client.post("/instructor/classes", data={"name": name, "expected_size": str(size)})
        assert made.status_code == 303, made.text
        class_id = made.headers["location"].rsplit("/", 1)[1]
        page = BeautifulSoup(client.get(f"/instructor/classes/{class_id}").text, "html.parser")
        return class_id, page.select_one("[data-join-code]").get_text()


def join(app: InProcessApp, people: ExitStack, code: str, name: str) -> tuple[httpx.Client, httpx.Response]:
    """A new identity (a new client, no cookie) joining from the same address as every other."""
    client = people.enter_context(app.client())
    return client, client.post("/join", data={"code": code, "display_name": name})


def class_page(app: InProcessApp, class_id: str) -> BeautifulSoup:
    with teacher(app) as client:
        return BeautifulSoup(client.get(f"/instructor/classes/{class_id}").text, "html.parser")


def members(app: InProcessApp, class_id: str) -> list[str]:
    return [row.th.get_text() for row in class_page(app, class_id).select("tr[data-learner]")]


def pending(app: InProcessApp, class_id: str) -> dict:
    with teacher(app) as client:
        reply = client.get(f"/api/instructor/classes/{class_id}/joins")
        assert reply.status_code == 200, reply.text
        return reply.json()


def join_status(client: httpx.Client) -> tuple[str, str]:
    """What the learner's waiting page says: its state and its sentence."""
    reply = client.get(WAITING)
    assert reply.status_code == 200, reply.text
    page = BeautifulSoup(reply.text, "html.parser")
    return page.select_one("[data-join-status]")["data-join-status"], page.select_one(
        "[data-join-notice]"
    ).get_text()


def test_one_address_joining_again_and_again_fills_only_the_expected_size(app: InProcessApp, people) -> None:  # noqa: ANN001
    class_id, code = make_class(app, "Crowded", size=3)
    replies = [join(app, people, code, f"Mallory {n}") for n in range(8)]
    assert [reply.status_code for _, reply in replies] == [303] * 8
    assert [reply.headers["location"] for _, reply in replies] == [JOINED] * 3 + [WAITING] * 5

    assert members(app, class_id) == ["Mallory 0", "Mallory 1", "Mallory 2"]
    listed = pending(app, class_id)
    assert (listed["members"], listed["expected_size"], listed["locked"]) == (3, 3, False)
    assert [p["name"] for p in listed["pending"]] == [f"Mallory {n}" for n in range(3, 8)]
    assert len(class_page(app, class_id).select("tr[data-waiting]")) == 5  # the dashboard's list

    state, sentence = join_status(replies[5][0])
    assert state == "waiting" and "waits for the instructor's approval" in sentence
    state, _ = join_status(replies[0][0])
    assert state == "member"  # the positive control: the same page for a member says so


def test_the_instructor_approves_one_and_denies_one_and_each_sees_the_answer(
    app: InProcessApp, people
) -> None:  # noqa: ANN001
    class_id, code = make_class(app, "One seat", size=1)
    join(app, people, code, "Ada")
    bea, _ = join(app, people, code, "Bea")
    cy, _ = join(app, people, code, "Cy")
    waiting = {p["name"]: p["id"] for p in pending(app, class_id)["pending"]}
    assert set(waiting) == {"Bea", "Cy"}
    assert app.request("GET", f"/api/instructor/classes/{class_id}/joins").status_code == 401

    with teacher(app) as client:  # approved through the API
        approved = client.post(f"/api/instructor/classes/{class_id}/joins/{waiting['Bea']}/approve")
        assert approved.status_code == 200 and approved.json()["status"] == "member"
    with app.client() as signed_in:  # denied with the class page's button (a sign-in session)
        assert signed_in.post("/instructor/login", data={"token": TOKEN}).status_code == 303
        button = class_page(app, class_id).select_one(
            f"tr[data-waiting='{waiting['Cy']}'] form[action$='/deny']"
        )
        assert signed_in.post(button["action"]).status_code == 303

    state, sentence = join_status(bea)  # Bea reloads her page: a member now
    assert state == "member" and "You are a member of the class “One seat”" in sentence
    notice = BeautifulSoup(bea.get(JOINED).text, "html.parser").select_one("[data-notice]").get_text()
    assert "You joined the class “One seat”" in notice
    state, sentence = join_status(cy)
    assert state == "denied" and "did not accept your join" in sentence
    assert members(app, class_id) == ["Ada", "Bea"]
    assert pending(app, class_id)["pending"] == []
    with teacher(app) as client:  # answered once: nothing waits any more
        again = client.post(f"/api/instructor/classes/{class_id}/joins/{waiting['Cy']}/approve")
        assert again.status_code == 404
        assert client.post(f"/api/instructor/classes/{class_id}/joins/not-a-row/deny").status_code == 404


def test_locked_joining_refuses_the_right_code_and_members_keep_their_place(
    app: InProcessApp, people
) -> None:  # noqa: ANN001
    class_id, code = make_class(app, "Locked", size=1)
    ada, _ = join(app, people, code, "Ada")
    with teacher(app) as client:
        assert client.post(f"/instructor/classes/{class_id}/lock").status_code == 303
        page = BeautifulSoup(client.get("/instructor").text, "html.parser")
        assert page.select_one(f"tr[data-class='{class_id}'] [data-joining]").get_text() == "locked"

    _, refused = join(app, people, code, "Mallory")
    assert refused.status_code == 400
    error = BeautifulSoup(refused.text, "html.parser").select_one(".form-error").get_text()
    assert "Joining the class “Locked” is locked" in error and "closed to new learners" in error
    assert pending(app, class_id)["pending"] == []  # not even a waiting join
    assert members(app, class_id) == ["Ada"]
    assert join_status(ada)[0] == "member"
    again = ada.post("/join", data={"code": code, "display_name": "Ada L."})  # a member is no new join
    assert again.status_code == 303 and again.headers["location"] == JOINED

    with teacher(app) as client:
        assert client.post(f"/api/instructor/classes/{class_id}/joining", json={"locked": False}).json() == {
            "class": class_id, "locked": False}  # fmt: skip
    _, after = join(app, people, code, "Bea")  # the positive control: unlocked, the code works again
    assert after.status_code == 303 and after.headers["location"] == WAITING
    assert members(app, class_id) == ["Ada L."]


def test_whom_the_instructor_turns_away_cannot_come_back_with_the_code(app: InProcessApp, people) -> None:  # noqa: ANN001
    """From the side of someone with a projected code: denied, they cannot ask again; removed, they
    cannot join again; a new code locks out whoever saw the old one, and members stay."""
    class_id, code = make_class(app, "Projected", size=1)
    ada, _ = join(app, people, code, "Ada")
    spam, _ = join(app, people, code, "Spam 1")
    with teacher(app) as client:
        spam_id = pending(app, class_id)["pending"][0]["id"]
        assert client.post(f"/api/instructor/classes/{class_id}/joins/{spam_id}/deny").status_code == 200
    again = spam.post("/join", data={"code": code, "display_name": "Spam 2"})
    assert again.status_code == 400 and "has not let you into the class" in again.text
    assert pending(app, class_id)["pending"] == []  # not back on the waiting list
    # Removed from the learner's page: out, and the code no longer lets them in.
    row = class_page(app, class_id).select_one("tr[data-learner]")["data-learner"]
    with teacher(app) as client:
        assert client.post(f"/instructor/classes/{class_id}/learners/{row}/remove").status_code == 303
    back = ada.post("/join", data={"code": code, "display_name": "Ada"})
    assert back.status_code == 400 and "has not let you into the class" in back.text
    assert members(app, class_id) == []
    away = class_page(app, class_id).select("[data-turned-away] li")
    assert [li.get_text(" ", strip=True).removesuffix(" Let them join again") for li in away] == [
        "Spam 1",
        "Ada",
    ]
    # A new code: the old one finds no class; members stay; the instructor lets Ada join again.
    with teacher(app) as client:
        made = client.post(f"/api/instructor/classes/{class_id}/join-code").json()
    assert made["join_code"] != code
    let_in = class_page(app, class_id).select_one(f"[data-turned-away-row='{row}'] form")
    for status in (303, 404):  # once
        with teacher(app) as client:
            assert client.post(let_in["action"]).status_code == status
    assert [t["name"] for t in pending(app, class_id)["turned_away"]] == ["Spam 1"]
    _, stale = join(app, people, code, "Late")
    assert stale.status_code == 400 and "There is no class with that code" in stale.text
    assert (
        ada.post("/join", data={"code": made["join_code"], "display_name": "Ada"}).headers["location"]
        == JOINED
    )
    assert members(app, class_id) == ["Ada"]
    assert class_page(app, class_id).select_one("[data-join-code]").get_text() == made["join_code"]


def test_turning_away_and_new_codes_are_the_instructors_alone(app: InProcessApp, people) -> None:  # noqa: ANN001
    class_id, code = make_class(app, "Guarded", size=5)
    mallory, _ = join(app, people, code, "Mallory")
    for path in (f"/instructor/classes/{class_id}/join-code", f"/api/instructor/classes/{class_id}/join-code",
                 f"/api/instructor/classes/{class_id}/turned-away/x/let-in"):  # fmt: skip
        assert mallory.post(path).status_code == 401
    assert class_page(app, class_id).select_one("[data-join-code]").get_text() == code


def test_a_name_that_shows_as_nothing_joins_no_class(app: InProcessApp, people) -> None:  # noqa: ANN001
    class_id, code = make_class(app, "Names", size=5)
    _, hidden = join(app, people, code, "\u3164\u3164\u3164")  # Hangul fillers: an empty-looking row
    assert hidden.status_code == 400 and "needs a letter or a digit that shows" in hidden.text
    assert members(app, class_id) == []


NOT_NUMBERS = {"9" * 30: "at most", "9" * 5000: "at most", "9223372036854775808": "at most", "10001": "at most",
               "0": "at least 1", "-3": "at least 1", "abc": "a whole number", "1e3": "a whole number",
               "4.5": "a whole number", "٣": "a whole number"}  # fmt: skip


@pytest.mark.parametrize("field", ["expected_size", "max_sessions"])
def test_huge_or_wrong_numbers_in_the_class_forms_answer_400(app: InProcessApp, field: str) -> None:
    what = "The expected class size" if field == "expected_size" else "The session cap"
    class_id, _ = make_class(app, f"Numbers {field}", size=5)
    with teacher(app) as client:
        for typed, why in NOT_NUMBERS.items():
            made = client.post("/instructor/classes", data={"name": f"Bad {field}", field: typed})
            assert made.status_code == 400, (typed, made.status_code)
            assert f"{what} is {why}" in made.text, typed
            edited = client.post(
                f"/instructor/classes/{class_id}/settings", data={"expected_size": "5", field: typed}
            )
            assert edited.status_code == 400, (typed, edited.status_code)
            assert f"{what} is {why}" in edited.text, typed
        assert f"Bad {field}" not in client.get("/instructor").text
        # The positive control: numbers in range are kept and shown.
        edited = client.post(
            f"/instructor/classes/{class_id}/settings", data={"expected_size": "7", "max_sessions": "9"}
        )
        assert edited.status_code == 303
        row = BeautifulSoup(client.get("/instructor").text, "html.parser").select_one(
            f"tr[data-class='{class_id}']"
        )
        assert (row.select_one("[data-members]").get_text(), row.select_one("[data-consoles]").get_text()) == (
            "0 of 7", "0 of 9")  # fmt: skip


def test_a_learner_cannot_join_as_or_rename_to_a_classmate_and_is_told_why(
    app: InProcessApp, people: ExitStack
) -> None:
    """From the side of a learner who takes a classmate's name, by joining under it or by renaming
    themselves after joining: the instructor saw two rows of one name."""
    class_id, code = make_class(app, "Same names", 10)
    _, grace = join(app, people, code, "Grace Hopper")
    assert grace.status_code == 303
    mallory, joined = join(app, people, code, "Mallory")
    assert joined.status_code == 303
    renamed = mallory.put("/api/progress/name", json={"display_name": "grace hopper"})
    assert renamed.status_code == 422 and "Another member of the class is already called" in renamed.text
    _, again = join(app, people, code, "Grace  Hopper")
    assert again.status_code == 400
    error = BeautifulSoup(again.text, "html.parser").get_text(" ", strip=True)
    assert "Another member of the class is already called “Grace Hopper”" in error
    assert sorted(members(app, class_id)) == ["Grace Hopper", "Mallory"]
    form = mallory.post("/course/name", data={"display_name": "Grace Hopper"})  # the course page's form
    page = BeautifulSoup(form.text, "html.parser")
    assert form.status_code == 400 and "is already called" in page.select_one("[data-name-error]").get_text()
    assert page.select_one("#display-name")["value"] == "Grace Hopper"  # what was typed, to change
    assert mallory.put("/api/progress/name", json={"display_name": "Grace Hopper II"}).status_code == 200
