"""Running a learner's own server.py inside a confined instance, as `python server.py` would.

Called only in the instance's server process (app/sandbox/forkserver.py), after every sandbox layer
is in force: the file never runs in the fork server or the web process. The source arrives already
read (the fork server reads the sealed memfd the app sends, and closes it before forking).
"""

from __future__ import annotations

import os
import runpy
import sys
import tempfile
import traceback
from typing import NoReturn

# The most a learner's file may hold (DESIGN.md: at most 64 KiB), checked by the web process before
# it saves and by the fork server before it runs: one number for both.
MAX_SOURCE_BYTES = 64 * 1024
FILE_NAME = "server.py"


def problem_with(data: bytes) -> str:
    """Why these bytes cannot be a learner's server file, or "" when they can."""
    if len(data) > MAX_SOURCE_BYTES:
        return f"the file is {len(data)} bytes, over the limit of {MAX_SOURCE_BYTES} bytes (64 KiB)"
    nul = data.find(b"\x00")
    if nul >= 0:
        return f"the file holds a NUL byte (at byte {nul}): save it as text"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the file is not UTF-8 text (byte {exc.start} cannot be read as UTF-8)"
    return ""


def run(source: str) -> NoReturn:
    """Write the file to the instance's private tmpfs and run it as __main__; exit as Python would."""
    workdir = tempfile.mkdtemp(prefix="server-")  # TMPDIR is the instance's own tmpfs
    path = os.path.join(workdir, FILE_NAME)
    with open(path, "w", encoding="utf-8") as out:
        out.write(source)
    os.chdir(workdir)
    sys.argv = [path]
    sys.path.insert(0, workdir)  # as for a script: its folder first
    try:
        runpy.run_path(path, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:  # noqa: BLE001 - whatever the learner's code raises is reported
        _print_from_learner_frames(exc, path)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken pipe: nothing more can be said
            pass
    os._exit(code)


def _exit_code(exc: SystemExit) -> int:
    """What `python server.py` exits with for this SystemExit."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _print_from_learner_frames(exc: BaseException, path: str) -> None:
    """The traceback as Python prints it for a script: from the learner's file on, without our frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    # A SyntaxError raised while compiling has no frame of the file: Python prints the bare error.
    traceback.print_exception(type(exc), exc, tb)
