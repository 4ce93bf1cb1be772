"""Admission: whether one more session fits, decided once per new session, and counted until it ends.

Caps, each checked in this order so that the refusal names the most specific one:
- per owner: a learner (signed cookie), or, for a client without an identity, its address (all
  such connections from one address are one owner);
- per address, outside classes: every owner in no class from one client address together, whatever
  identities they hold, their exercise runs too (identities are cheap to make; class members count in
  their class instead);
- per class: the class's own cap; its members' exercise runs at once have a cap of the same size
  (beside its consoles, not in their place: a member with a console open may still run an exercise;
  but members are identities too, and 10 of one person's would otherwise hold 10 runs past a cap of 3);
- global;
- outside classes: owners in no class together hold at most a share of the global cap, exercise runs
  included, so the rest is kept for classes (a class member is never refused because visitors filled
  the playground);
- memory: every instance together uses less than the budget (their parent cgroup's limit) minus a
  headroom for the new one, as the kernel counts it now (one small read; not the sum of the limits);
- how often: one owner opens at most so many new sessions a minute, exercise runs included, since
  each starts a sandboxed server (checked last, so only a session that is admitted is counted).

`admit()` counts the new session at once (no await between the check and the count), so two
handshakes arriving together cannot both take the last place.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from app.relay.rates import KeyedRate
from app.sandbox.cgroups import MemoryGauge
from app.sandbox.errors import CapacityError

# Seconds a refused client is told to wait, by cap: a tab closed frees a place at once, others churn.
RETRY_OWNER_S = 10
RETRY_SHARED_S = 60
RETRY_EXERCISE_S = 5
# New sessions per owner are counted over this window (PLAYGROUND_NEW_SESSIONS_PER_MIN).
OPENS_WINDOW_S = 60.0
# What a new instance needs free below the memory budget to start and answer (an idle one holds about
# 8 MiB of its own), with room to spare: past budget minus this, no new session starts.
MEMORY_HEADROOM_BYTES = 64 * 1024 * 1024
RETRY_MEMORY_S = 30


@dataclass(frozen=True)
class Owner:
    """Who a session is for, as admission counts it."""

    learner: str | None  # the learner id, None for a client without a valid identity
    address: str  # the client's address (behind a trusted proxy: the one the proxy names)
    class_id: str | None = None
    class_cap: int | None = None  # the class's live-session cap, with class_id

    @property
    def key(self) -> str:
        return f"learner:{self.learner}" if self.learner else f"address:{self.address}"

    @property
    def client_key(self) -> str:
        """Whose sessions' client messages share one pace: a class member's, or outside classes the
        address's, whatever its identities (as `Caps.per_address_outside` counts them)."""
        return self.key if self.class_id is not None else f"address:{self.address}"


@dataclass(frozen=True)
class Caps:
    total: int  # every live session
    per_owner: int  # one learner, or one address without identity
    outside_classes: int  # every session of owners in no class, together
    # Sessions of owners in no class from one client address, whatever their identities (the app
    # passes PLAYGROUND_MAX_SESSIONS_PER_ADDRESS; this default is for Caps made by hand).
    per_address_outside: int = 1_000_000
    exercises_per_owner: int = 1  # exercise runs at once, apart from the owner's consoles
    # Sessions and exercise runs one owner may start in OPENS_WINDOW_S (the app passes
    # PLAYGROUND_NEW_SESSIONS_PER_MIN; this default is for Caps made by hand).
    new_per_owner_per_min: int = 60

    @classmethod
    def from_share(cls, total: int, per_owner: int, outside_share: float, **rest: int) -> Caps:
        """Caps whose visitors' share is `outside_share` of `total`; `rest` as the fields are named."""
        return cls(total, per_owner, max(0, min(total, math.ceil(total * outside_share))), **rest)


class Slot:
    """One admitted session's place; `release()` gives it back (once, however often it is called)."""

    def __init__(self, admission: Admission, owner: Owner, exercise: bool = False) -> None:
        self.owner = owner
        self.exercise = exercise
        self._admission = admission
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            if self.exercise:
                self._admission._give_back_exercise(self.owner)
            else:
                self._admission._give_back(self.owner)


class Admission:
    def __init__(self, caps: Caps, memory: MemoryGauge | None = None) -> None:
        self.caps = caps
        self.memory = memory  # every instance's memory together, where it has a budget
        self.total = 0
        self._by_owner: Counter[str] = Counter()
        self._by_class: Counter[str] = Counter()
        self._outside = 0
        self._outside_by_address: Counter[str] = Counter()  # sessions of owners in no class, by address
        self._exercises: Counter[str] = Counter()  # exercise runs by owner
        self._runs_by_class: Counter[str] = Counter()  # exercise runs by class
        self._opened = KeyedRate(caps.new_per_owner_per_min, OPENS_WINDOW_S)  # new sessions by owner

    def count_for(self, owner: Owner) -> int:
        return self._by_owner[owner.key]

    def count_for_class(self, class_id: str) -> int:
        return self._by_class[class_id]

    @property
    def outside_classes(self) -> int:
        return self._outside

    def admit(self, owner: Owner) -> Slot:
        """Count a new session for `owner`, or raise CapacityError naming the cap that is full."""
        self._check(owner)
        self._count_opening(owner)
        self.total += 1
        self._by_owner[owner.key] += 1
        if owner.class_id is None:
            self._count_outside(owner.address, 1)
        else:
            self._by_class[owner.class_id] += 1
        return Slot(self, owner)

    def admit_exercise(self, owner: Owner) -> Slot:
        """Count an exercise run: its own small budget per owner (never a console's place), and, since
        its instance is as real as any other, the global cap and outside classes the address's and the
        visitors' (identities are cheap: 200 of them, each a run at a time, would hold every place)."""
        if self._exercises[owner.key] >= self.caps.exercises_per_owner:
            raise CapacityError(
                "Your previous exercise run is still going.", advice="Wait for its result",
                reason="exercise_busy", retry_after_s=RETRY_EXERCISE_S,
            )  # fmt: skip
        if owner.class_id is None:
            self._check_address(owner, " and exercise runs")
        elif owner.class_cap is not None and self._runs_by_class[owner.class_id] >= owner.class_cap:
            raise CapacityError(
                f"Your class has {_plural(owner.class_cap, 'exercise run')} going, the most your instructor "
                "allowed at once.", advice="Try again in a few seconds", reason="class_runs_full",
                retry_after_s=RETRY_EXERCISE_S,
            )  # fmt: skip
        if self.total >= self.caps.total:
            raise playground_full(self.caps.total)
        if owner.class_id is None:
            self._check_visitors()
        self._check_memory()
        self._count_opening(owner)
        self.total += 1
        self._exercises[owner.key] += 1
        if owner.class_id is None:
            self._count_outside(owner.address, 1)
        else:
            self._runs_by_class[owner.class_id] += 1
        return Slot(self, owner, exercise=True)

    def _give_back_exercise(self, owner: Owner) -> None:
        self.total -= 1
        self._exercises[owner.key] -= 1
        if self._exercises[owner.key] <= 0:
            del self._exercises[owner.key]
        if owner.class_id is None:
            self._count_outside(owner.address, -1)
        else:
            self._runs_by_class[owner.class_id] -= 1
            if self._runs_by_class[owner.class_id] <= 0:
                del self._runs_by_class[owner.class_id]

    def _count_outside(self, address: str, change: int) -> None:
        self._outside += change
        self._outside_by_address[address] += change
        if self._outside_by_address[address] <= 0:
            del self._outside_by_address[address]

    def _check(self, owner: Owner) -> None:
        caps = self.caps
        if self._by_owner[owner.key] >= caps.per_owner:
            raise owner_full(caps.per_owner, owner)
        if owner.class_id is None:
            self._check_address(owner)
        if owner.class_id is not None and owner.class_cap is not None:
            if self._by_class[owner.class_id] >= owner.class_cap:
                raise class_full(owner.class_cap)
        if self.total >= caps.total:
            raise playground_full(caps.total)
        if owner.class_id is None:
            self._check_visitors()
        self._check_memory()

    def _check_address(self, owner: Owner, held: str = "") -> None:
        """Outside classes: the address's consoles and exercise runs together, whatever its identities
        (`held`: how the refusal names them, past the count of consoles)."""
        cap = self.caps.per_address_outside
        if self._outside_by_address[owner.address] >= cap:
            raise CapacityError(
                f"Your network address already has {_plural(cap, 'console')}{held} open "
                "outside a class, the most one address may have.",
                advice="If you are in a class, join it with its code", reason="address_full",
                retry_after_s=RETRY_SHARED_S,
            )  # fmt: skip

    def _check_visitors(self) -> None:
        if self._outside >= self.caps.outside_classes:
            raise CapacityError(
                "The places for visitors outside a class are all taken right now (the rest are kept for "
                "classes).", advice="If you are in a class, join it with its code",
                reason="visitors_full", retry_after_s=RETRY_SHARED_S,
            )  # fmt: skip

    def _check_memory(self) -> None:
        if self.memory is None:
            return
        try:
            used = self.memory.usage_bytes()
        except (OSError, ValueError):  # unreadable for a moment: the kernel's limit still holds
            return
        if used is not None and used + MEMORY_HEADROOM_BYTES > self.memory.limit_bytes:
            raise CapacityError(
                "The servers running here are using nearly all the memory set aside for them right "
                "now, so a new one cannot start.", advice="Close a console you no longer need",
                reason="memory_full", retry_after_s=RETRY_MEMORY_S,
            )  # fmt: skip

    def _count_opening(self, owner: Owner) -> None:
        """After every cap has let it through: count one more start for `owner`, or refuse it (429)
        when too many have come in the last minute. A refused attempt is not counted."""
        wait = self._opened.wait(owner.key)
        if wait is None:
            return
        retry = max(math.ceil(wait), 1)
        who = "You have" if owner.learner else "Your network address has"
        raise CapacityError(
            f"{who} started {_plural(self.caps.new_per_owner_per_min, 'session')} in the last minute, "
            "the most one person may.", reason="too_often", retry_after_s=retry, status_code=429,
        )  # fmt: skip

    def _give_back(self, owner: Owner) -> None:
        self.total -= 1
        self._by_owner[owner.key] -= 1
        if self._by_owner[owner.key] <= 0:
            del self._by_owner[owner.key]
        if owner.class_id is None:
            self._count_outside(owner.address, -1)
        else:
            self._by_class[owner.class_id] -= 1
            if self._by_class[owner.class_id] <= 0:
                del self._by_class[owner.class_id]


def owner_full(cap: int, owner: Owner) -> CapacityError:
    """The refusal when the owner holds as many live sessions as one may (on this replica or on all)."""
    who = "You already have" if owner.learner else "Your network address already has"
    return CapacityError(
        f"{who} {_plural(cap, 'console')} open, the most one person may have.",
        advice="Close one (another tab?)", reason="owner_full", retry_after_s=RETRY_OWNER_S,
    )  # fmt: skip


def class_full(cap: int) -> CapacityError:
    """The refusal when a class holds as many live sessions as its cap (on this replica or on all)."""
    return CapacityError(
        f"Your class has {_plural(cap, 'console')} open, the most your instructor allowed.",
        advice="Close a console you no longer need", reason="class_full", retry_after_s=RETRY_SHARED_S,
    )  # fmt: skip


def playground_full(total: int) -> CapacityError:
    """The refusal when every one of the playground's places is taken."""
    return CapacityError(
        f"The playground is full right now (all {_plural(total, 'place')} taken, by consoles and exercise "
        "runs).",
        reason="full", retry_after_s=RETRY_SHARED_S,
    )  # fmt: skip


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
