"""The syntax check of a learner's Python file, as a program of its own: the file on stdin, its first
syntax error on stdout as JSON (`{}` when there is none). The compiler parses and compiles; nothing of
the file runs.

A program and not a call in the web process: a 64 KiB file can be written to take the compiler a
second (thousands of nested f-string fields), and a compile holds the interpreter's lock throughout,
so that every console of the web process would wait for it. Here it takes a core of its own, at a
lower priority, within a time (`diagnose` in app/workspace/__init__.py runs it).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import warnings

CPU_S = 5
MEMORY_BYTES = 1 << 30


def first_error(source: str, name: str) -> dict[str, object]:
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
    os.nice(10)  # the web process and the sandboxed servers come first
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_S, CPU_S))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    source = sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
    sys.stdout.write(json.dumps(first_error(source, sys.argv[1] if len(sys.argv) > 1 else "server.py")))


if __name__ == "__main__":
    main()
