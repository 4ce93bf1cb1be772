"""The syntax check of a learner's Python file, as a program: one line on stdin (`{"name": ...,
"source": ...}`), the file's first syntax error on stdout as one JSON line (`{}` when there is none).
The compiler parses and compiles; nothing of the file runs.

A program, run in a sandboxed instance (app/web/file_checks.py), and not a call in the web process:
a 64 KiB file can be written to take the compiler a second (thousands of nested f-string fields), and
a compile holds the interpreter's lock throughout, so that every console of the web process would
wait for it. `first_error` is the check itself, for a caller with a file of its own.
"""

from __future__ import annotations

import json
import sys
import warnings


def first_error(source: str, name: str) -> dict[str, object]:
    """The file's first syntax error (`line`, `col`, `message`), or {} when it compiles."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not errors; the server still runs
            compile(source, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        message = exc.msg
        if isinstance(exc, IndentationError) and "indent" not in message:
            message = f"indentation: {message}"
        return {"line": exc.lineno or 1, "col": exc.offset or 1, "message": message}
    except (ValueError, MemoryError, RecursionError) as exc:  # e.g. too deeply nested to compile
        return {"line": 1, "col": 1, "message": f"Python cannot compile this file: {exc}"}
    return {}


def main() -> None:
    asked = json.loads(sys.stdin.readline())
    print(json.dumps(first_error(asked["source"], asked["name"])), flush=True)


if __name__ == "__main__":
    main()
