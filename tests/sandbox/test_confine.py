"""Choices the sandbox makes from where things live on the host, and that it leaves nothing there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.config import PROJECT_ROOT
from app.sandbox.confine import scratch_dir
from tests.support.forkserver import running_forkserver


def test_the_private_tmpfs_never_hides_the_project() -> None:
    assert scratch_dir(["/usr", "/work/main/app", "/root/.pyenv/versions/3.11.7"]) == "/tmp"
    # A checkout under /tmp (as a CI clone may be): a tmpfs on /tmp would hide its code.
    assert scratch_dir(["/usr", "/tmp/ci-clone/app"]) == "/scratch"
    assert scratch_dir(["/tmpfiles/app"]) == "/tmp"  # only /tmp itself and what is under it


@pytest.mark.skipif(os.geteuid() != 0, reason="the root is built as root, as the fork server runs")
def test_the_fork_server_leaves_no_mount_point_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its private root is mounted on a directory it makes in the host's temporary folder; once the
    # root is built, that directory is an empty leftover, one more for every start of the app.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with running_forkserver(range(3_420_000, 3_420_004)) as forkserver:
        assert forkserver.ready["layers"]["filesystem"] == "ok"
        assert list(tmp_path.iterdir()) == []


BUILD_THAT_FAILS = """
from app.sandbox.confine import build_read_only_root
try:
    build_read_only_root(["/usr"], "/dev/null/scratch")  # /dev/null is a file in the new root
except OSError as exc:
    print("refused:", exc)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root, as the fork server has")
def test_a_root_that_cannot_be_finished_leaves_no_mount_point(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "-c", BUILD_THAT_FAILS], capture_output=True, text=True, env=env,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: "), done.stdout
    assert list(tmp_path.iterdir()) == []
