"""What the launcher reports from the fork server's layers: which are missing, and the uid range."""

from __future__ import annotations

from pathlib import Path

from app.sandbox.launcher import Launcher, subordinate_id_overlap
from app.sandbox.limits import Limits


def launcher(**kwargs: object) -> Launcher:
    return Launcher(limits=Limits(), sandbox=True, extra_modules=[], uid_probe=300_000, **kwargs)  # type: ignore[arg-type]


def test_a_host_without_cgroups_is_not_a_reason_to_refuse() -> None:
    made = launcher()
    made.layers = {"uid": "ok", "seccomp": "ok", "cgroups": "not available: no cgroup v1 or v2 here"}
    assert made.missing_layers() == {}
    made.layers["cgroups"] = "missing: a cgroup could not be made"
    assert made.missing_layers() == {"cgroups": "missing: a cgroup could not be made"}
    made.layers["seccomp"] = "missing: rules that could not be built: frobnicate"
    assert set(made.missing_layers()) == {"cgroups", "seccomp"}


def test_the_uid_range_is_checked_against_subordinate_ids(tmp_path: Path) -> None:
    subuid, subgid = tmp_path / "subuid", tmp_path / "subgid"
    subuid.write_text("alice:100000:65536\n# a comment\nbob:300500:10\n")
    subgid.write_text("alice:100000:65536\n")
    files = (str(subuid), str(subgid))
    assert subordinate_id_overlap(range(200_000, 201_000), files) == ""
    assert subordinate_id_overlap(range(165_535, 170_000), files).count("alice") == 2  # its last id
    assert "bob: 300500-300509" in subordinate_id_overlap(range(300_000, 301_000), files)
    assert subordinate_id_overlap(range(300_000, 300_500), files) == ""  # ends just before bob's
    assert subordinate_id_overlap(range(1, 2), (str(tmp_path / "absent"),)) == ""


def test_the_launcher_checks_the_range_the_pool_hands_out() -> None:
    assert launcher(uid_range=range(300_001, 300_400)).uid_range == range(300_000, 300_400)
    assert len(launcher().uid_range) > 250  # without one, a generous guess from the probe uid on
