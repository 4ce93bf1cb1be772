"""The learner's own server.py: what a file must be to be saved, what is wrong with it, and the starter.

Nothing here runs the file: `diagnose` compiles it (the parser and compiler only, never executing a
line), and the file runs only inside a sandboxed instance (app/sandbox/own_server.py).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from app.sandbox.own_server import FILE_NAME, MAX_SOURCE_BYTES, problem_with

STARTER_PATH = Path(__file__).with_name("starter_server.py")

__all__ = ["FILE_NAME", "MAX_SOURCE_BYTES", "Diagnostic", "diagnose", "problem_with", "starter"]


@dataclass(frozen=True)
class Diagnostic:
    line: int  # 1-based
    col: int  # 1-based, in characters
    message: str

    def to_json(self) -> dict[str, int | str]:
        return asdict(self)


def starter() -> str:
    """What a learner who has saved nothing yet starts from."""
    return STARTER_PATH.read_text(encoding="utf-8")


def diagnose(source: str) -> list[Diagnostic]:
    """The syntax errors Python would report for this file (at most one: the first), without running it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not errors; the server still runs
            compile(source, FILE_NAME, "exec", dont_inherit=True)
    except SyntaxError as exc:
        message = exc.msg
        if isinstance(exc, IndentationError) and "indent" not in message:
            message = f"indentation: {message}"
        return [Diagnostic(exc.lineno or 1, exc.offset or 1, message)]
    except (ValueError, MemoryError, RecursionError) as exc:  # e.g. too deeply nested to compile
        return [Diagnostic(1, 1, f"Python cannot compile this file: {exc}")]
    return []
