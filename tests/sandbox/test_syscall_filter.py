"""The seccomp filter on its own: built whole from the table, and denying each attack even to root.

Loaded in a child of the test process that is still root, with every capability, so the filter
is the only thing between each attempt and success; the same attempts without the filter must
succeed (or fail differently), or the row would prove nothing.
"""

from __future__ import annotations

import os

import pytest

from app.sandbox import kernel, syscall_filter, syscalls
from tests.fixtures.attack_kit import run_in_child
from tests.sandbox.attacks import ATTACKS, is_denied

SECCOMP_ROWS = [attack for attack in ATTACKS if attack.layer == "seccomp"]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the filter-alone tests run as root")


def test_every_rule_of_the_table_is_built() -> None:
    _, problems = syscall_filter.build()
    assert problems == []


def test_a_rule_that_cannot_be_built_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(syscalls.ALLOWED, "no_such_call", "a typo in the table")
    monkeypatch.setitem(syscalls.ALLOWED, "another_unknown", "a call from the future")
    monkeypatch.setattr(syscalls, "OPTIONAL", syscalls.OPTIONAL | {"another_unknown"})
    _, problems = syscall_filter.build()
    assert [p.split(":")[0] for p in problems] == ["no_such_call"]


def test_the_table_allows_no_dangerous_call_outright() -> None:
    dangerous = {"execve", "execveat", "unshare", "setns", "mount", "fsopen", "open_tree", "ptrace",
                 "bpf", "keyctl", "add_key", "io_uring_setup", "userfaultfd", "clone3", "seccomp",
                 "setuid", "memfd_create", "personality", "socket", "ioctl", "prctl", "fcntl", "clone"}  # fmt: skip
    assert not dangerous & set(syscalls.ALLOWED)  # the last six only with conditions


def _private_namespaces() -> None:
    """A child's own mount, UTS, network and IPC namespaces: whatever an attempt changes stays there."""
    kernel.unshare(kernel.CLONE_NEWNS | kernel.CLONE_NEWUTS | kernel.CLONE_NEWNET | kernel.CLONE_NEWIPC)
    kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)


@pytest.fixture(scope="module")
def program() -> kernel.SeccompProgram:
    compiled, problems = syscall_filter.compile_program()
    assert problems == []
    return compiled


@needs_root
def test_the_filter_alone_denies_every_attack_even_to_root(program: kernel.SeccompProgram) -> None:
    def confined() -> None:
        _private_namespaces()
        program.load()

    outcomes = {attack.name: run_in_child(attack.code, before=confined) for attack in SECCOMP_ROWS}
    allowed = {a.name: outcomes[a.name] for a in SECCOMP_ROWS if not is_denied(a, outcomes[a.name])}
    assert allowed == {}


@needs_root
def test_without_the_filter_every_attack_row_would_get_through() -> None:
    """Each row can fail: without the filter, root gets a different answer."""
    outcomes = {attack.name: run_in_child(attack.code, before=_private_namespaces) for attack in SECCOMP_ROWS}
    still_denied = {a.name: outcomes[a.name] for a in SECCOMP_ROWS if is_denied(a, outcomes[a.name])}
    assert still_denied == {}


@needs_root
def test_ordinary_learner_code_runs_under_the_filter(program: kernel.SeccompProgram) -> None:
    outcome = run_in_child(
        "from tests.fixtures.learner_code import exercise, EXPECTED\n"
        "import json\n"
        "report = json.loads(json.dumps(exercise()))\n"
        "result = {k: report[k] for k in EXPECTED if report[k] != EXPECTED[k]}",
        before=program.load,
    )
    assert outcome == {"ok": "{}"}
