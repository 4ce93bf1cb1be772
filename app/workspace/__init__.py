"""The learner's workspace: their own server (server.py, or server.ts in TypeScript) and the files
beside it (test_server.py), what a file must be to be saved, what is wrong with it, the starters, and
the program my-server runs for the language the learner chose.

Nothing here runs the file: `diagnose` compiles server.py (the parser and compiler only, never
executing a line; the web process has it done in the sandbox: pysyntax.py) and has esbuild parse
server.ts (typescript.py), and the file runs only inside a
sandboxed instance (app/sandbox/own_server.py). These rules
sit below the sandbox in the layers (docs/ARCHITECTURE.md): the web process checks a file with
`problem_with` before it saves it, and the instance checks it again before it runs it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from app.workspace import pysyntax

HERE = Path(__file__).parent

__all__ = ["DEFAULT_LANGUAGE", "FILES", "FILE_NAME", "LANGUAGES", "MAX_PROGRAM_BYTES", "MAX_SOURCE_BYTES", "RUNTIMES", "TEST_FILE_NAME", "TS_FILE_NAME", "Diagnostic",
           "Program", "diagnose", "problem_with", "syntax_check_answer", "syntax_check_input", "syntax_checker", "program", "type_check_input", "type_checker", "starter", "test_run_input", "test_runner"]  # fmt: skip

# The most a learner's file may hold (DESIGN.md: at most 64 KiB), checked by the web process before
# it saves and by the instance before it runs: one number for both.
MAX_SOURCE_BYTES = 64 * 1024
FILE_NAME = "server.py"
# The learner's tests of their server (pytest, run beside server.py by run_tests.py).
TEST_FILE_NAME = "test_server.py"
# The learner's server in TypeScript, with the official TypeScript SDK: run by Node (typescript.py).
TS_FILE_NAME = "server.ts"
FILES = (FILE_NAME, TEST_FILE_NAME, TS_FILE_NAME)
# The languages a learner may write their own server in, and its file in each; python unless chosen.
LANGUAGES = {"python": FILE_NAME, "typescript": TS_FILE_NAME}
DEFAULT_LANGUAGE = "python"
# The starters sit in a folder that is not a package: nothing imports them (the privilege drop
# imports every module of the app, and test_server.py's `from server import mcp` has no server here).
STARTERS = {name: HERE / "starters" / name for name in FILES}


def problem_with(data: bytes, size: int | None = None, limit: int = MAX_SOURCE_BYTES) -> str:
    """Why these bytes (the start of a file of `size` bytes, if given) cannot be a learner's server
    file, or "" when they can."""
    size = len(data) if size is None else size
    if size > limit or len(data) > limit:
        return (
            f"the file is {max(size, len(data))} bytes, over the limit of {limit} bytes ({limit // 1024} KiB)"
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
class Program:
    """What an instance of my-server runs: Python source (`runtime` "python", run as `python server.py`
    would), or for server.ts the JavaScript module esbuild made of it (`runtime` "node")."""

    runtime: str
    text: str

    @classmethod
    def python(cls, text: str) -> Program:
        return cls("python", text)


RUNTIMES = ("python", "node")
# The most a program may hold, by runtime: server.py as saved, or the JavaScript esbuild makes of a
# server.ts within MAX_SOURCE_BYTES (with its inline source map, which holds the file once more).
MAX_PROGRAM_BYTES = {"python": MAX_SOURCE_BYTES, "node": 8 * MAX_SOURCE_BYTES}


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


def type_checker() -> Program:
    """The program a type check of server.ts is (typecheck.mjs, on Node): the file comes on its stdin."""
    return Program("node", (HERE / "typecheck.mjs").read_text(encoding="utf-8"))


def type_check_input(source: str) -> str:
    """The one line a type check reads on its stdin."""
    return json.dumps({TS_FILE_NAME: source})


def test_runner() -> str:
    """The program a run of the learner's tests is (run_tests.py): its files come on its stdin."""
    return (HERE / "run_tests.py").read_text(encoding="utf-8")


def test_run_input(server: str, tests: str) -> str:
    """The one line a test run reads on its stdin: the two files, by name."""
    return json.dumps({FILE_NAME: server, TEST_FILE_NAME: tests})


def diagnose(source: str, name: str = FILE_NAME) -> list[Diagnostic]:
    """The syntax errors found without running the file, in this process: Python's (at most one: the
    first) for a Python file, esbuild's for server.ts (in a subprocess). The web process checks a
    Python file in the sandbox instead (`syntax_checker`): a file can be written to hold the compiler,
    and the interpreter's lock with it, for a second."""
    if name == TS_FILE_NAME:
        from app.workspace import typescript

        return typescript.diagnose(source)
    return _diagnostics(pysyntax.first_error(source, name))


def syntax_checker() -> Program:
    """The program that checks a Python file's syntax in an instance (pysyntax.py)."""
    return Program.python((HERE / "pysyntax.py").read_text(encoding="utf-8"))


def syntax_check_input(source: str, name: str = FILE_NAME) -> str:
    """The one line the syntax checker reads on its stdin."""
    return json.dumps({"name": name, "source": source})


def syntax_check_answer(line: str) -> list[Diagnostic] | None:
    """The diagnostics in the syntax checker's answer; None when the line is not one."""
    try:
        return _diagnostics(json.loads(line))
    except (TypeError, KeyError, ValueError, AttributeError):
        return None


def _diagnostics(found: dict) -> list[Diagnostic]:
    return [Diagnostic(int(found["line"]), int(found["col"]), str(found["message"]))] if found else []


def program(language: str, source: str) -> Program:
    """What my-server runs for `source`, the learner's file in `language` (a key of LANGUAGES): the
    Python file itself, or the JavaScript esbuild makes of server.ts. A server.ts that cannot become
    JavaScript still gets a program: one that says why on stderr and exits 1, as a broken server.py
    does in its instance."""
    if language != "typescript":
        return Program.python(source)
    from app.workspace import typescript

    try:
        made = typescript.transpile(source)
    except typescript.RuntimeMissing as exc:
        # No Node to run anything on: say so from Python, which every instance has.
        return Program.python(f"import sys\nsys.exit({f'{TS_FILE_NAME} cannot be run here: {exc}.'!r})\n")
    if made.code is None:
        return Program("node", typescript.failing_module(made.diagnostics))
    if len(made.code.encode("utf-8")) > MAX_PROGRAM_BYTES["node"]:
        why = f"{TS_FILE_NAME} cannot be run: its JavaScript is over {MAX_PROGRAM_BYTES['node'] // 1024} KiB."
        return Program("node", typescript.failing_module((), why))
    return Program("node", made.code)
