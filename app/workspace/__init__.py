"""The learner's workspace: their own server.py and the files beside it (test_server.py), what a file
must be to be saved, what is wrong with it, and the starters.

Nothing here runs the file: `diagnose` compiles it (the parser and compiler only, never executing a
line), and the file runs only inside a sandboxed instance (app/sandbox/own_server.py). These rules
sit below the sandbox in the layers (docs/ARCHITECTURE.md): the web process checks a file with
`problem_with` before it saves it, and the instance checks it again before it runs it.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).parent

__all__ = ["FILES", "FILE_NAME", "MAX_SOURCE_BYTES", "TEST_FILE_NAME", "Diagnostic", "diagnose", "problem_with",
           "starter", "test_run_input", "test_runner"]  # fmt: skip

# The most a learner's file may hold (DESIGN.md: at most 64 KiB), checked by the web process before
# it saves and by the instance before it runs: one number for both.
MAX_SOURCE_BYTES = 64 * 1024
FILE_NAME = "server.py"
# The learner's tests of their server (pytest, run beside server.py by run_tests.py).
TEST_FILE_NAME = "test_server.py"
FILES = (FILE_NAME, TEST_FILE_NAME)
# The starters sit in a folder that is not a package: nothing imports them (the privilege drop
# imports every module of the app, and test_server.py's `from server import mcp` has no server here).
STARTERS = {name: HERE / "starters" / name for name in FILES}


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


@dataclass(frozen=True)
class Diagnostic:
    line: int  # 1-based
    col: int  # 1-based, in characters
    message: str

    def to_json(self) -> dict[str, int | str]:
        return asdict(self)


def starter(name: str = FILE_NAME) -> str:
    """What a learner who has saved nothing yet starts from, for the file `name` (one of FILES)."""
    return STARTERS[name].read_text(encoding="utf-8")


def test_runner() -> str:
    """The program a run of the learner's tests is (run_tests.py): its files come on its stdin."""
    return (HERE / "run_tests.py").read_text(encoding="utf-8")


def test_run_input(server: str, tests: str) -> str:
    """The one line a test run reads on its stdin: the two files, by name."""
    return json.dumps({FILE_NAME: server, TEST_FILE_NAME: tests})


def diagnose(source: str, name: str = FILE_NAME) -> list[Diagnostic]:
    """The syntax errors Python would report for this file (at most one: the first), without running it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not errors; the server still runs
            compile(source, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        message = exc.msg
        if isinstance(exc, IndentationError) and "indent" not in message:
            message = f"indentation: {message}"
        return [Diagnostic(exc.lineno or 1, exc.offset or 1, message)]
    except (ValueError, MemoryError, RecursionError) as exc:  # e.g. too deeply nested to compile
        return [Diagnostic(1, 1, f"Python cannot compile this file: {exc}")]
    return []
