"""Privilege separation: once the fork server (which needs root) is up, the web process stops being root.

`drop(user, data_dir)` runs at the end of start-up in the real server process (`python -m app`), never
in a test that builds the app in-process. It returns what /healthz reports for the layer:
  "ok"                      the web process now runs as `user`, with no capabilities;
  "not needed: ..."         the app was not started as root;
  "off: ..."                the setting is empty;
  "not in force: <why>"     it could not be done safely here; the app stays root and says so loudly.

The hazard: after setuid, a module imported for the first time must be read from disk as `user`,
and an interpreter installed in root's home (pyenv, mode 700) cannot be. So the modules the web
process imports lazily while serving are imported before the drop (PREIMPORT), and a watch placed
first on sys.meta_path logs every import that still happens after it ("imported after the privilege
drop"): tests/web/test_privileges.py runs the request surface and fails on any such line.
"""

from __future__ import annotations

import importlib
import logging
import os
import pwd
import sys
from collections.abc import Sequence
from pathlib import Path

from app.config import PROJECT_ROOT

log = logging.getLogger("app.privileges")

# What the web process imports for the first time while serving (found by running every page, form,
# API call, WebSocket, /metrics and both progress stores with the watch below on). Optional ones
# (the PostgreSQL driver) are skipped when not installed.
PREIMPORT: tuple[str, ...] = (
    # text codecs a request, a header or an error message may need
    "encodings.idna",
    "encodings.ascii",
    "encodings.latin_1",
    "encodings.utf_8",
    "encodings.utf_8_sig",
    "encodings.unicode_escape",
    "encodings.raw_unicode_escape",
    "stringprep",
    "unicodedata",
    # forms and uploads
    "python_multipart",
    "python_multipart.multipart",
    "starlette.formparsers",
    # pages and static files
    "jinja2.ext",
    "jinja2.debug",
    "mimetypes",
    "email.utils",
    "email.message",
    "email.parser",
    "anyio._backends._asyncio",
    "anyio.to_thread",
    "anyio.from_thread",
    "concurrent.futures.thread",
    # the progress stores
    "sqlite3",
    "psycopg",
    "psycopg.pq",
    "psycopg.errors",
    "psycopg_binary",
    # errors and logging while serving
    "traceback",
    "linecache",
    "tokenize",
    "json.decoder",
    "json.encoder",
    "uuid",
    "secrets",
    "hmac",
    "hashlib",
    "prometheus_client",
    "prometheus_client.exposition",
    "prometheus_client.openmetrics.exposition",
    "uvicorn.protocols.websockets.websockets_sansio_impl",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.lifespan.on",
)

WATCH_MESSAGE = "imported after the privilege drop"


class LateImportWatch:
    """A meta-path finder that finds nothing: it only logs each module first imported after the drop."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name not in self.seen:
            self.seen.append(name)
            # Logged before the real finders try: on a host whose interpreter the user cannot read,
            # the import fails next, and this line says why.
            log.warning("%s: %s (add it to app.privileges.PREIMPORT)", WATCH_MESSAGE, name)
        return None


watch: LateImportWatch | None = None


def preimport(names: Sequence[str] = PREIMPORT) -> list[str]:
    """Import each module now; return the ones not installed here (optional drivers)."""
    absent = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            absent.append(name)
    # Every module of the app itself, whatever imports it later.
    import pkgutil

    import app

    for info in pkgutil.walk_packages(app.__path__, "app."):
        importlib.import_module(info.name)
    return absent


def _check_as(
    uid: int, gid: int, readable: Sequence[Path], reachable: Sequence[Path], writable: Sequence[Path] = ()
) -> str:
    """In a throwaway child that has become uid/gid: "" when it can list or read every path in
    `readable`, stat every path in `reachable` and write every path in `writable`, else the first
    failure in words."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        problem = b""
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            for path in readable:
                if path.is_dir():
                    os.listdir(path)
                else:
                    with open(path, "rb") as handle:
                        handle.read(1)
            for path in reachable:
                os.stat(path)
            for path in writable:  # access(2) asks for the real uid: the one just taken
                if not os.access(path, os.W_OK | (os.X_OK if path.is_dir() else 0)):
                    raise PermissionError(13, "Permission denied (not writable)", str(path))
        except OSError as exc:
            problem = f"{exc.filename or ''}: {exc.strerror}".encode()
        except BaseException as exc:
            problem = repr(exc).encode()
        os.write(write_end, problem)
        os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 4096):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode(errors="replace")


def take_over(folder: Path, uid: int, gid: int) -> int:
    """Give `folder` and everything in it that root owns to uid/gid (symlinks themselves, never
    their targets); return how many entries changed owner."""
    changed = 0
    entries = [folder]
    for top, dirs, files in os.walk(folder):
        entries.extend(Path(top, name) for name in dirs + files)
    for path in entries:
        try:
            if os.lstat(path).st_uid == 0:
                os.lchown(path, uid, gid)
                changed += 1
        except FileNotFoundError:
            continue  # gone meanwhile
    return changed


def drop(user: str, data_dir: Path, reserved_uids: range | None = None) -> str:
    """Become `user` for good (see the module's docstring); return the layer's state."""
    global watch
    if os.geteuid() != 0:
        return "not needed: the app does not run as root"
    if not user:
        return "off: PLAYGROUND_RUN_AS_USER is empty, the web process stays root"
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return f"not in force: no user {user!r} on this host"
    uid, gid = entry.pw_uid, entry.pw_gid
    if uid == 0:
        return f"not in force: {user!r} is root"
    if reserved_uids is not None and uid in reserved_uids:
        return f"not in force: {user!r} (uid {uid}) is inside the instances' reserved uid range"
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        # no_new_privs, the bounding set and capset(2) are per thread: another thread would keep them.
        return f"not in force: the web process runs {threads} threads; the drop needs it to have one"
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    # What the web process reads from disk while serving, besides modules (imported below).
    problem = _check_as(
        uid,
        gid,
        readable=[PROJECT_ROOT / "templates", PROJECT_ROOT / "static"],  # lessons are read at start-up
        reachable=[data_dir],
    )
    if problem:
        return f"not in force: {user} cannot reach what the app reads while serving ({problem})"
    absent = preimport()
    interpreter = _check_as(uid, gid, readable=[Path(os.__file__)], reachable=[])
    changed = take_over(data_dir, uid, gid)
    # What another owner left (not root's, so not taken over) must still be writable.
    files = [p for p in data_dir.iterdir() if p.is_file() and not p.is_symlink()]
    problem = _check_as(uid, gid, readable=[], reachable=[], writable=[data_dir, *files])
    if problem:
        return f"not in force: {user} cannot write the data folder ({problem})"
    if changed:
        log.info(
            "the data folder %s now belongs to %s (%d entries taken over from root)", data_dir, user, changed
        )
    from app.sandbox import kernel

    kernel.drop_bounding_capabilities()  # nothing this process runs later can regain one
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # clears the permitted and effective sets
    kernel.clear_capabilities()  # and the inheritable one
    kernel.prctl(kernel.PR_SET_NO_NEW_PRIVS, 1)
    os.environ["HOME"] = entry.pw_dir  # not root's: a library looking there finds the user's (or nothing)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):  # pragma: no cover
        raise RuntimeError("the privilege drop did not take hold")
    watch = LateImportWatch()
    sys.meta_path.insert(0, watch)
    log.info(
        "the web process now runs as %s (uid %d); the fork server stays root%s%s",
        user,
        uid,
        f"; {user} cannot read the interpreter ({interpreter}): only pre-imported modules can load"
        if interpreter
        else "",
        f"; not installed: {', '.join(absent)}" if absent else "",
    )
    return "ok"
