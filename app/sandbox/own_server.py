"""Running a learner's own server.py inside a confined instance, as `python server.py` would.

Called only in the instance's server process (app/sandbox/forkserver.py), after every sandbox layer
is in force: the file never runs in the fork server or the web process. Nor is it read there: the
sealed memfd the app sends passes through the fork server as a descriptor, and the instance reads
and checks it here, after the fork (`run_file`), so that no later instance inherits a copy.
"""

from __future__ import annotations

import os
import runpy
import sys
import tempfile
import traceback
from typing import NoReturn

# The most a learner's file may hold (DESIGN.md: at most 64 KiB), checked by the web process before
# it saves and by the instance before it runs: one number for both.
MAX_SOURCE_BYTES = 64 * 1024
FILE_NAME = "server.py"
# The exit status of an instance whose file cannot be run (too long, not UTF-8 text): EX_DATAERR of
# sysexits.h, which no Python exception gives; the reason goes to its stderr.
BAD_FILE_EXIT = 65


def problem_with(data: bytes, size: int | None = None) -> str:
    """Why these bytes (the start of a file of `size` bytes, if given) cannot be a learner's server
    file, or "" when they can."""
    size = len(data) if size is None else size
    if size > MAX_SOURCE_BYTES or len(data) > MAX_SOURCE_BYTES:
        return (
            f"the file is {max(size, len(data))} bytes, over the limit of {MAX_SOURCE_BYTES} bytes (64 KiB)"
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        return f"the file holds a NUL byte (at byte {nul}): save it as text"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the file is not UTF-8 text (byte {exc.start} cannot be read as UTF-8)"
    return ""


def run_file(fd: int) -> NoReturn:
    """Read the learner's file from `fd` (then close it), check it and run it; a file that cannot be
    run is explained on stderr, and the process exits with BAD_FILE_EXIT."""
    size = os.fstat(fd).st_size
    chunks, done = [], 0
    # From the start: the app's writes left the file's offset, shared with this descriptor, at its end.
    while done <= MAX_SOURCE_BYTES and (chunk := os.pread(fd, MAX_SOURCE_BYTES + 1 - done, done)):
        chunks.append(chunk)
        done += len(chunk)
    os.close(fd)
    data = b"".join(chunks)
    problem = problem_with(data, size)
    if problem:
        print(f"{FILE_NAME} cannot be run: {problem}.", file=sys.stderr, flush=True)
        os._exit(BAD_FILE_EXIT)
    run(data.decode("utf-8"))


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
