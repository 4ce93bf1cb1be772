"""The seccomp filter on its own: built whole from the table, and denying each attack even to root.

Loaded in a child of the test process that is still root, with every capability, so the filter
is the only thing between each attempt and success; the same attempts without the filter must
succeed (or fail differently), or the row would prove nothing.
"""

from __future__ import annotations

import ctypes
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


# --- Node's filter (a learner's server.ts): the same rows denied, and execve at one address only ----

# The one path Node's filter lets execve run, at an address fixed before the filter is built, as the
# fork server's NodeRuntime holds it.
NODE_PATH = ctypes.create_string_buffer(b"/bin/true")


@pytest.fixture(scope="module")
def node_program() -> kernel.SeccompProgram:
    compiled, problems = syscall_filter.compile_program(ctypes.addressof(NODE_PATH))
    assert problems == []
    return compiled


def test_nodes_filter_adds_only_what_node_needs() -> None:
    added = set(syscalls.allowed_names(node=True)) - set(syscalls.allowed_names())
    assert added == {
        "epoll_pwait",
        "eventfd2",
        "sched_getparam",
        "sched_getscheduler",
        "arch_prctl",
        "execve",
    }


@needs_root
def test_nodes_filter_alone_denies_every_attack_even_to_root(node_program: kernel.SeccompProgram) -> None:
    def confined() -> None:
        _private_namespaces()
        node_program.load()

    outcomes = {attack.name: run_in_child(attack.code, before=confined) for attack in SECCOMP_ROWS}
    allowed = {a.name: outcomes[a.name] for a in SECCOMP_ROWS if not is_denied(a, outcomes[a.name])}
    assert allowed == {}


NODE_ROWS = {
    # The same path at any other address: what Node, a spawn of the learner's or process.execve passes.
    "execve of the same path elsewhere": ('result = syscall(59, ctypes.create_string_buffer(b"/bin/true"), '
                                          "(ctypes.c_char_p * 2)(b'/bin/true', None), (ctypes.c_char_p * 1)(None))"),
    # arch_prctl beyond ARCH_SET_FS (ARCH_SET_GS, 0x1001): the loader's one call, nothing else.
    "arch_prctl(ARCH_SET_GS)": "result = syscall(158, 0x1001, 0)",
    "arch_prctl((1<<32)|ARCH_SET_GS)": f"result = syscall(158, {(1 << 32) | 0x1001}, 0)",
}  # fmt: skip


@needs_root
def test_nodes_filter_denies_execve_but_at_its_one_address(node_program: kernel.SeccompProgram) -> None:
    def confined() -> None:
        _private_namespaces()
        node_program.load()

    outcomes = {name: run_in_child(code, before=confined) for name, code in NODE_ROWS.items()}
    assert outcomes == {name: {"errno": "EPERM"} for name in NODE_ROWS}
    # The path at its address runs: the rule is not simply a refusal.
    ran = run_in_child(
        "import ctypes.util\n"
        "argv = (ctypes.c_char_p * 2)(b'/bin/true', None)\n"
        "envp = (ctypes.c_char_p * 1)(None)\n"
        f"result = syscall(59, ctypes.c_void_p({ctypes.addressof(NODE_PATH)}), argv, envp)",
        before=confined,
    )
    assert ran == {"exit": 0}, ran
