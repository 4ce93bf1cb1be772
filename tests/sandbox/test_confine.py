"""Choices the sandbox makes from where things live on the host."""

from __future__ import annotations

from app.sandbox.confine import scratch_dir


def test_the_private_tmpfs_never_hides_the_project() -> None:
    assert scratch_dir(["/usr", "/work/main/app", "/root/.pyenv/versions/3.11.7"]) == "/tmp"
    # A checkout under /tmp (as a CI clone may be): a tmpfs on /tmp would hide its code.
    assert scratch_dir(["/usr", "/tmp/ci-clone/app"]) == "/scratch"
    assert scratch_dir(["/tmpfiles/app"]) == "/tmp"  # only /tmp itself and what is under it
