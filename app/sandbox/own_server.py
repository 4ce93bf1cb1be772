"""Running a learner's own server.py inside a confined instance, as `python server.py` would.

Called only in the instance's server process (app/sandbox/forkserver/child.py), after every sandbox layer
is in force: the file never runs in the fork server or the web process. Nor is it read there: the
sealed memfd the app sends passes through the fork server as a descriptor, and the instance reads
and checks it here, after the fork (`run_file`, by the workspace's rules: app/workspace/), so that no
later instance inherits a copy.
"""

from __future__ import annotations

import logging
import os
import runpy
import sys
import tempfile
import traceback
from typing import NoReturn

# The file's rules (its name, its size, UTF-8) are the workspace's, one set for the web process and
# the instance; the fork server reads MAX_SOURCE_BYTES from here too.
from app.workspace import FILE_NAME, MAX_SOURCE_BYTES, problem_with

__all__ = ["BAD_FILE_EXIT", "FILE_NAME", "MAX_SOURCE_BYTES", "problem_with", "run", "run_file"]

# The exit status of an instance whose file cannot be run (too long, not UTF-8 text): EX_DATAERR of
# sysexits.h, which no Python exception gives; the reason goes to its stderr.
BAD_FILE_EXIT = 65


def run_file(fd: int) -> NoReturn:
    """Read the learner's file from `fd` (then close it), check it and run it; a file that cannot be
    run is explained on stderr, and the process exits with BAD_FILE_EXIT."""
    run(read_file(fd, FILE_NAME, MAX_SOURCE_BYTES))


def read_file(fd: int, name: str, limit: int) -> str:
    """The text of the program in `fd` (closed after), checked by the workspace's rules with `limit`;
    a program that breaks them is explained on stderr (as `name`), and the process exits."""
    size = os.fstat(fd).st_size
    chunks, done = [], 0
    # From the start: the app's writes left the file's offset, shared with this descriptor, at its end.
    while done <= limit and (chunk := os.pread(fd, limit + 1 - done, done)):
        chunks.append(chunk)
        done += len(chunk)
    os.close(fd)
    data = b"".join(chunks)
    problem = problem_with(data, size, limit)
    if problem:
        print(f"{name} cannot be run: {problem}.", file=sys.stderr, flush=True)
        os._exit(BAD_FILE_EXIT)
    return data.decode("utf-8")


def run(source: str) -> NoReturn:
    """Write the file to the instance's private tmpfs and run it as __main__; exit as Python would."""
    workdir = tempfile.mkdtemp(prefix="server-")  # TMPDIR is the instance's own tmpfs
    path = os.path.join(workdir, FILE_NAME)
    with open(path, "w", encoding="utf-8") as out:
        out.write(source)
    os.chdir(workdir)
    # Each line as it is printed, as in a terminal: a lesson's runnable block streams its output, and
    # a server's traceback is not held back behind what it printed before (the SDK flushes its own).
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)
    _fresh_logging()
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


def _fresh_logging() -> None:
    """Logging as a new interpreter has it: the demos imported ahead of the fork made servers, which
    set up the root logger; the learner's file starts with none of that (its own MCPServer sets it up
    with the level it asks for)."""
    root = logging.getLogger()
    for handler in root.handlers[:]:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)


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
