"""A bad lesson file stops the app, and `check-lessons` reports it, with its file and line."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from app.check_lessons import check_lessons
from app.config import Settings
from tests.support.appserver import ROOT, AppProcess

LESSON = """\
---
title: Tiny
slug: tiny
order: 1
server: demo-orders
---

## Ping {#ping}

```expect rev=2025-06-18
send: {"jsonrpc": "2.0", "id": 1, "method": "ping"}
reply: {"jsonrpc": "2.0", "id": 1, "result": {}}
```
"""
WRONG_CLAIM = (
    LESSON
    + """
```expect rev=2025-06-18
send: {"jsonrpc": "2.0", "id": 2, "method": "ping"}
reply: {"jsonrpc": "2.0", "id": 2, "result": {"pong": true}}
```
"""
)
BAD_FORMAT = LESSON.replace("## Ping {#ping}", "## Ping")


def lessons(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "lessons"
    folder.mkdir()
    (folder / "01-tiny.md").write_text(text)
    return folder


def test_a_bad_lesson_file_stops_the_app_with_file_and_line(tmp_path: Path) -> None:
    app = AppProcess(tmp_path / "data", lessons_dir=str(lessons(tmp_path, BAD_FORMAT)))
    with pytest.raises(RuntimeError) as caught:
        app.start()
    app.stop()
    assert app.proc is not None and app.proc.returncode != 0
    assert "01-tiny.md:8: a step heading needs a stable slug" in str(caught.value)


def test_check_lessons_passes_good_lessons(tmp_path: Path) -> None:
    out = io.StringIO()
    assert check_lessons(Settings(lessons_dir=lessons(tmp_path, LESSON)), out) == 0
    assert "1 of 1 expect blocks hold" in out.getvalue()


def test_check_lessons_reports_a_claim_the_live_server_does_not_keep(tmp_path: Path) -> None:
    out = io.StringIO()
    assert check_lessons(Settings(lessons_dir=lessons(tmp_path, WRONG_CLAIM)), out) == 1
    report = out.getvalue()
    assert "01-tiny.md:15: the live demo-orders disagrees: reply.result.pong is missing" in report
    assert "1 of 2 expect blocks hold" in report


def test_python_m_app_check_lessons_reports_a_bad_file(tmp_path: Path) -> None:
    folder = lessons(tmp_path, BAD_FORMAT)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PLAYGROUND_LESSONS_DIR": str(folder),
           "PLAYGROUND_DATA_DIR": str(tmp_path / "data")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "app", "check-lessons"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "01-tiny.md:8: a step heading needs a stable slug" in done.stdout
