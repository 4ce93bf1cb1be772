"""The progress interface: SQLite (app/progress/sqlite.py) and PostgreSQL (postgres.py) implement it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

StepStatus = Literal["done", "started", "new"]


class ProgressError(Exception):
    """The store cannot be used (for example: its database was written by a newer version)."""


@dataclass(frozen=True)
class QuizRecord:
    """A learner's latest answer to one quiz, and whether any attempt was right."""

    choices: tuple[str, ...]
    correct: bool
    attempts: int
    ever_correct: bool


# A class's expected size (members) unless the instructor gives another; joins past it wait.
DEFAULT_CLASS_SIZE = 40
# The largest expected size or session cap a class may have: a sane bound, far above any real class.
MAX_CLASS_NUMBER = 10_000
# Joins waiting for the instructor in one class; past it a join is refused (the list stays readable).
MAX_PENDING_JOINS = 100
# What the two numbers are called in the sentences that refuse them.
EXPECTED_SIZE = "The expected class size"
SESSION_CAP = "The session cap"
JoinOutcome = Literal["joined", "pending", "locked", "too_many_waiting", "denied"]


@dataclass(frozen=True)
class ClassInfo:
    """A class an instructor hosts: learners join it with its short code."""

    id: str
    name: str
    join_code: str
    created_at: float
    locked: bool = False  # joining is locked: no new member, no new waiting join; members stay
    max_sessions: int | None = None  # live sessions for the whole class; None: only the global caps
    expected_size: int = DEFAULT_CLASS_SIZE  # members; joins past it wait for the instructor
    message: str | None = None  # shown on every member's course and step pages


@dataclass(frozen=True)
class Seat:
    """A place on a class's roster, made by the instructor; a learner who joins under its name takes it."""

    name: str
    student_id: str | None
    claimed: bool


def seat_key(name: str) -> str:
    """A name as seats compare it: without case, and with single spaces."""
    return " ".join(name.split()).casefold()


@dataclass(frozen=True)
class ExerciseRun:
    """A learner's latest exercise run of a step (`report`: the runner's JSON, as the learner saw it)."""

    step_slug: str
    at: float
    passed: bool
    report: str


@dataclass(frozen=True)
class JoinRequest:
    """A join past the class's expected size, waiting for the instructor (or denied by them)."""

    learner_id: str
    class_id: str
    display_name: str | None
    requested_at: float
    denied: bool = False


@dataclass(frozen=True)
class EndpointInfo:
    """A learner's Streamable HTTP endpoint (the token itself is never stored, only its hash)."""

    id: str
    learner_id: str
    server: str
    created_at: float
    expires_at: float
    ended: bool = False
    auth: str = "none"  # "none", or "oauth": a protected endpoint (an access token in every request)
    tool_scopes: str = "{}"  # JSON {tool name: scope}: the scope a protected endpoint's tool needs besides

    def live(self, now: float) -> bool:
        return not self.ended and now < self.expires_at


# What the authorization server keeps: a consent waiting for the owner's answer, an authorization
# code, an access token, a refresh token, and a one-time approval code (the owner's way to answer a
# consent in a browser that is not theirs, without handing it their identity).
OAUTH_KINDS = ("consent", "code", "access", "refresh", "approval")
# The steps of one endpoint's authorization flows kept for its owner to watch: the newest.
OAUTH_EVENTS_KEPT = 200
# Grants of one kind kept for one endpoint: a new one past it lets the used ones go first, then the
# oldest. Used refresh tokens are kept (to tell whose a refused one is), and a client refreshing in a
# loop makes ~190 a second from one address; a learner's clients hold a few at a time.
OAUTH_GRANTS_KEPT = 100
# An endpoint ended or expired this long ago goes, with its flow and grants: nobody can reach it, and
# anyone may make endpoints (each identity a few at a time).
ENDPOINT_KEPT_S = 24 * 3600.0
# Anyone may register a client, so a client is kept only while it is used: one that never had a grant
# made for it goes after a day (a client authorizes minutes after it registers); one that did, two
# days after the last (its refresh token lasts one; clients keep a registration per server URL, and
# an endpoint's URL lasts hours).
OAUTH_CLIENT_UNUSED_S = 24 * 3600.0
OAUTH_CLIENT_IDLE_S = 2 * 24 * 3600.0


@dataclass(frozen=True)
class OAuthGrant:
    """Something the authorization server issued, stored by the hash of its secret only."""

    key_hash: str
    kind: str  # one of OAUTH_KINDS
    client_id: str
    endpoint_id: str | None
    data: str  # JSON: what the kind needs (scopes, redirect URI, PKCE challenge, the pair's hash...)
    expires_at: float


@dataclass(frozen=True)
class ServerFile:
    """One saved version of a file of the learner's workspace (`source` is "" in a history listing)."""

    version: int  # 1, 2, ... per learner and file; a restore saves the old text as a new version
    saved_at: float
    size: int  # bytes of UTF-8
    source: str = ""


# Saved versions kept per learner: enough to undo a bad afternoon, not a version-control system.
SERVER_FILE_VERSIONS = 10


@dataclass
class LearnerProgress:
    learner_id: str
    display_name: str | None = None
    class_id: str | None = None
    seen: set[str] = field(default_factory=set)  # step slugs
    checks: dict[str, set[str]] = field(default_factory=dict)  # step slug -> check names passed
    quizzes: dict[tuple[str, str], QuizRecord] = field(default_factory=dict)  # (step slug, quiz id)
    last_seen_at: float | None = None  # the last thing recorded of them (a step seen, an answer, a check)
    student_id: str | None = None  # the instructor's identifier for them (the grade book's)
    server_exit: str | None = None  # how their own server last ended by itself (JSON), for a class
    # The step they opened last: (its slug, when they first opened it, when they last did), for a class.
    current_step: tuple[str, float, float] | None = None

    def checks_passed(self, step_slug: str) -> set[str]:
        return self.checks.get(step_slug, set())

    def quiz(self, step_slug: str, quiz_id: str) -> QuizRecord | None:
        return self.quizzes.get((step_slug, quiz_id))

    def quiz_right(self, step_slug: str, quiz_id: str) -> bool:
        """Whether any attempt at this quiz was right."""
        record = self.quizzes.get((step_slug, quiz_id))
        return record is not None and record.ever_correct

    def quizzes_right(self, step_slug: str, quiz_ids: Iterable[str]) -> int:
        return sum(1 for quiz_id in quiz_ids if self.quiz_right(step_slug, quiz_id))

    def step_status(self, step_slug: str, checks: Iterable[str], quiz_ids: Iterable[str]) -> StepStatus:
        """ "done": seen, every check passed and every quiz answered right once; "started": seen."""
        if step_slug not in self.seen:
            return "new"
        quiz_ids = list(quiz_ids)
        done = set(checks) <= self.checks_passed(step_slug) and self.quizzes_right(
            step_slug, quiz_ids
        ) == len(quiz_ids)
        return "done" if done else "started"


class ProgressStore(Protocol):
    """Every method is quick and synchronous; recording the same fact twice is harmless."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def set_display_name(self, learner_id: str, name: str | None) -> None:
        """The learner's own name for the instructor; ValueError says why not (another member's, or
        not a name)."""
        ...

    def record_seen(self, learner_id: str, step_slug: str) -> None: ...

    def record_quiz_answer(
        self, learner_id: str, step_slug: str, quiz_id: str, choices: Sequence[str], correct: bool
    ) -> None: ...

    def record_check(self, learner_id: str, step_slug: str, check_name: str) -> None: ...

    def learner(self, learner_id: str) -> LearnerProgress: ...

    def learner_exists(self, learner_id: str) -> bool:
        """Whether the store has ever recorded anything of this learner."""
        ...

    def learner_class(self, learner_id: str) -> ClassInfo | None:
        """The learner's class, in one small query (asked at every console's handshake)."""
        ...

    def unavailable_since(self) -> float | None: ...  # see SQLDatabase.unavailable_since

    def shared_secret(self, name: str) -> str:
        """A random secret by name, made on first use and the same for every app sharing the store."""
        ...

    def reset_learner(self, learner_id: str) -> None:
        """Forget what the learner has done (seen, quizzes, checks); keep their name and class."""
        ...

    # Classes (hosting).
    def create_class(
        self, name: str, max_sessions: int | None = None, expected_size: int = DEFAULT_CLASS_SIZE
    ) -> ClassInfo: ...

    def update_class(self, class_id: str, max_sessions: int | None, expected_size: int) -> None:
        """New numbers for the class; members beyond a lowered expected size keep their place."""
        ...

    def new_join_code(self, class_id: str) -> str:
        """A fresh join code: the old one (and its link) stops working; members stay."""
        ...

    def classes(self) -> list[ClassInfo]: ...

    def get_class(self, class_id: str) -> ClassInfo | None: ...

    def class_by_code(self, join_code: str) -> ClassInfo | None: ...

    def lock_joining(self, class_id: str, locked: bool) -> None: ...

    def delete_class(self, class_id: str) -> None:
        """Delete the class and the progress of every learner in it."""
        ...

    def join_class(self, learner_id: str, class_id: str, display_name: str | None) -> JoinOutcome:
        """A member already, or one while the class has fewer members than its expected size:
        "joined"; past it the join waits for the instructor ("pending"), up to MAX_PENDING_JOINS.
        One the instructor turned away is "denied", with any code. Decided for one class at a time
        across replicas. ValueError: no such class, or the name is another member's."""
        ...

    def class_learners(self, class_id: str) -> list[LearnerProgress]: ...

    def class_size(self, class_id: str) -> int:
        """How many members the class has."""
        ...

    def pending_joins(self, class_id: str) -> list[JoinRequest]:
        """The joins waiting for the instructor, oldest first."""
        ...

    def decide_join(self, class_id: str, learner_id: str, approve: bool) -> bool:
        """Approve (the learner becomes a member at once) or deny a waiting join (the learner is turned
        away); False when none waits."""
        ...

    def join_request(self, learner_id: str) -> JoinRequest | None:
        """The learner's waiting or denied join, if any (an approved one is gone: they are a member)."""
        ...

    # Instructor sign-in sessions: keyed by a hash of the id the cookie holds.
    def start_instructor_session(self, id_hash: str, lifetime_s: float) -> None: ...

    def instructor_session_valid(self, id_hash: str) -> bool: ...

    def end_instructor_session(self, id_hash: str) -> None: ...

    # Streamable HTTP endpoints.
    def create_endpoint(
        self, learner_id: str, server: str, token_hash: str, lifetime_s: float, auth: str = "none"
    ) -> EndpointInfo:
        """A new endpoint; those ended or expired more than ENDPOINT_KEPT_S ago go."""
        ...

    def endpoint_by_token_hash(self, token_hash: str) -> EndpointInfo | None: ...

    def learner_endpoints(self, learner_id: str) -> list[EndpointInfo]:
        """The learner's endpoints that have not ended or expired, oldest first."""
        ...

    def end_endpoint(self, endpoint_id: str) -> None:
        """It stops working, and its authorization flow and grants go (an expired one's go as the next
        endpoint is made); the endpoint itself is kept ENDPOINT_KEPT_S."""
        ...

    def set_tool_scopes(self, endpoint_id: str, tool_scopes: str) -> None:
        """Which tools of a protected endpoint need a scope of the owner's choosing (JSON)."""
        ...

    # The authorization server of protected endpoints: its clients, and its grants by kind
    # (OAUTH_KINDS), each keyed by the hash of its secret.
    def save_oauth_client(self, client_id: str, info: str, endpoint_id: str | None = None,
                          registered_by: str | None = None, unused_kept: int = 0) -> int:  # fmt: skip
        """Keep a client (`endpoint_id`: the owner's, for one registered by hand); those unused for long
        go (OAUTH_CLIENT_UNUSED_S, OAUTH_CLIENT_IDLE_S), and past `unused_kept` never used of the client
        address `registered_by`, its oldest: how many of those went."""
        ...

    def oauth_clients_of(self, endpoint_id: str) -> int:
        """How many clients the endpoint's owner has registered by hand, and still kept."""
        ...

    def oauth_client(self, client_id: str) -> str | None: ...

    def add_oauth_grant(self, grant: OAuthGrant) -> None:
        """Keep a grant; the expired go, and those of its endpoint and kind past OAUTH_GRANTS_KEPT."""
        ...

    def oauth_grant(self, key_hash: str, kind: str) -> OAuthGrant | None:
        """The grant, if it exists, has not expired and was not used."""
        ...

    def use_oauth_grant(self, key_hash: str, kind: str) -> OAuthGrant | None:
        """As `oauth_grant`, and marks it used in the same step: only one caller ever gets it."""
        ...

    def show_oauth_grant(self, key_hash: str) -> None: ...  # shown to the owner: the last to make room

    def revoke_oauth_grants(self, key_hashes: Sequence[str]) -> None: ...

    def revoke_oauth_family(self, endpoint_id: str, family: str) -> int: ...  # tokens of one code: how many

    def any_oauth_grant(self, key_hash: str) -> OAuthGrant | None:
        """The grant by its hash, used or expired too (to tell whose a refused secret was)."""
        ...

    def add_oauth_event(self, endpoint_id: str, data: str) -> None:
        """One step of an endpoint's authorization flows (JSON); the oldest beyond OAUTH_EVENTS_KEPT go."""
        ...

    def oauth_events(self, endpoint_id: str, after: int = 0) -> list[tuple[int, float, str]]:
        """The endpoint's steps numbered above `after`, oldest first: (number, time, JSON)."""
        ...

    # The learner's workspace: server.py (the default `name`) and the files beside it (test_server.py).
    def save_server_file(
        self, learner_id: str, source: str, name: str = "server.py", after: int | None = None
    ) -> ServerFile:
        """Save a new version of the file (the oldest beyond SERVER_FILE_VERSIONS go); returns it
        without source. With `after`, only if the newest version is that one (0: none yet), else
        SavedSince (app/progress/errors.py) names the newer one."""
        ...

    def server_file(
        self, learner_id: str, version: int | None = None, name: str = "server.py"
    ) -> ServerFile | None:
        """The file's latest saved version, or the one named; None when there is none."""
        ...

    def server_file_history(self, learner_id: str, name: str = "server.py") -> list[ServerFile]:
        """The file's versions kept, newest first, without their source."""
        ...

    # Moving to another device.
    def resume_code(self, learner_id: str, touch: bool = True) -> str:
        """The learner's resume code, made on first use; `touch=False`: asked by the instructor, not
        the learner's own activity."""
        ...

    def new_resume_code(self, learner_id: str) -> str:
        """A new resume code for the learner; the old one opens nothing any more, and every sign-in
        made before (on any device: their cookies name the generation before) ends."""
        ...

    def sign_in_generation(self, learner_id: str) -> int:
        """How many times the learner's sign-ins have been ended (0 for a learner with no row yet)."""
        ...

    # The roster (the instructor's): none of these counts as the learner's own activity.
    def set_class_message(self, class_id: str, message: str | None) -> None: ...

    def rename_learner(self, learner_id: str, name: str | None) -> None: ...

    def set_student_id(self, learner_id: str, student_id: str | None) -> None: ...

    def remove_from_class(self, class_id: str, learner_id: str) -> bool:
        """The learner is no longer a member (their progress stays theirs) and is turned away: the code
        no longer lets them in. A roster seat they took is free again, and its identifier leaves them.
        False if they were not a member."""
        ...

    def turned_away(self, class_id: str) -> list[JoinRequest]:
        """Whom the instructor turned away from the class (a join denied, a member removed), oldest first."""
        ...

    def let_in_again(self, class_id: str, learner_id: str) -> bool:
        """The learner may join with the code again; False if they were not turned away."""
        ...

    def record_exercise_run(self, learner_id: str, step_slug: str, passed: bool, report: str) -> None:
        """Keep this run as the learner's latest of the step (an earlier one goes)."""
        ...

    def exercise_runs(self, learner_id: str) -> list[ExerciseRun]:
        """The learner's latest run of each step, newest first."""
        ...

    def record_server_exit(self, learner_id: str, report: str) -> None:
        """How the learner's own server last ended by itself (JSON); not the learner's own activity."""
        ...

    def server_exit(self, learner_id: str) -> str | None:
        """The latest record of record_server_exit, or None."""
        ...

    def set_server_language(self, learner_id: str, language: str) -> None:
        """Record the language the learner's own server is written in (the workspace's setting)."""
        ...

    def server_language(self, learner_id: str) -> str | None:
        """The language last set with set_server_language, or None when never set."""
        ...

    def failing_exercises(self, class_id: str) -> set[tuple[str, str]]:
        """(learner id, step slug) of each member whose latest run of that step's exercise failed."""
        ...

    def add_seats(self, class_id: str, seats: Sequence[tuple[str, str | None]]) -> int:
        """Seats of (name, student id); a name already seated is left as it is. Returns how many were made."""
        ...

    def seats(self, class_id: str) -> list[Seat]:
        """The class's seats, in name order."""
        ...

    def learner_for_resume_code(self, code: str) -> str | None: ...


# Codes a person types: no 0/O, 1/I/L, so a code read aloud or from a projector is not mistyped. A right
# code always passes the guessing throttle, so an address guesses at its request rate: long enough that
# a hit stays implausible for as long as a code lives (docs/hosting.md, "Security").
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
JOIN_CODE_LENGTH = 12  # 59 bits
RESUME_CODE_LENGTH = 16  # 79 bits


def new_code(length: int) -> str:
    import secrets

    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def normalise_code(code: str) -> str:
    """As typed by a person: case, spaces and dashes do not matter."""
    return "".join(ch for ch in code.upper() if ch.isalnum())


def clean_class_number(value: int, what: str) -> int:
    """An expected size or a session cap as stored; ValueError with a sentence when out of range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} is a whole number.")
    if value < 1:
        raise ValueError(f"{what} is at least 1.")
    if value > MAX_CLASS_NUMBER:
        raise ValueError(f"{what} is at most {MAX_CLASS_NUMBER}.")
    return value


def parse_class_number(text: str, what: str) -> int:
    """A number an instructor typed (a form field), as `clean_class_number` accepts it."""
    text = text.strip()
    if text.startswith("-") and text[1:].isascii() and text[1:].isdigit():
        raise ValueError(f"{what} is at least 1.")
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{what} is a whole number.")
    if len(text.lstrip("0")) > len(str(MAX_CLASS_NUMBER)):  # never parse thousands of digits
        raise ValueError(f"{what} is at most {MAX_CLASS_NUMBER}.")
    return clean_class_number(int(text), what)


def clean_class_name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise ValueError("A class needs a name.")
    if len(name) > 80:
        raise ValueError("A class name has at most 80 characters.")
    if any(not ch.isprintable() for ch in name):
        raise ValueError("A class name cannot hold control characters.")
    return name
