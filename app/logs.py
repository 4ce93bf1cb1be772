"""Log set-up: plain text for a terminal, or one JSON object per line for a log collector."""

from __future__ import annotations

import json
import logging
import re
import time

# Fields a log call may pass in `extra=` that belong in the structured line.
CONTEXT_FIELDS = ("session", "server", "learner")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


# Parts of a URL that are secrets (resume and join codes, session ids, endpoint tokens, consents,
# authorization codes, an OAuth `resource`, which is an endpoint's URL): an access log line keeps the
# route and drops the value.
SECRET_PATHS = re.compile(r"(/resume/|/join/|/sessions/|/mcp/|/oauth/consent/)[^/?\s\"]+")
SECRET_QUERY = re.compile(r"([?&](?:session|code|token|resource)=)[^&\s\"]+")


# A logged path keeps this much of itself, and of its query, once its secrets are out: an /authorize
# request's query is about 300 characters, and a query of 8 KiB (or a path of 60,000 characters, which
# fits a request head) on every request of one address at its pace would write megabytes of log a second.
LOGGED_QUERY = 512
LOGGED_PATH = 512


def redact(text: str) -> str:
    text = SECRET_QUERY.sub(r"\1…", SECRET_PATHS.sub(r"\1…", text))
    path, mark, query = text.partition("?")
    if len(path) > LOGGED_PATH:
        path = path[:LOGGED_PATH] + "…"
    if len(query) > LOGGED_QUERY:
        query = query[:LOGGED_QUERY] + "…"
    return f"{path}{mark}{query}"


class RedactSecrets(logging.Filter):
    """On uvicorn's logs: a request's or WebSocket's path, redacted (`/resume/…`, `?session=…`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        # One record, one line: a newline in a message (a header, a name) cannot forge another line.
        record.message = record.message.replace("\r", "\\r").replace("\n", "\\n")
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = " ".join(f"{n}={getattr(record, n)}" for n in CONTEXT_FIELDS if hasattr(record, n))
        return f"{text} [{context}]" if context else text


def configure(log_format: str) -> None:
    """Route every logger (uvicorn's included) through one handler on stderr."""
    if log_format not in ("text", "json"):
        raise ValueError(f'PLAYGROUND_LOG_FORMAT is "text" or "json", not {log_format!r}')
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    redact_uvicorn()


def redact_uvicorn() -> None:
    """The access log names each request's path; uvicorn's error log names each WebSocket's."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactSecrets) for f in logger.filters):
            logger.addFilter(RedactSecrets())
    # uvicorn's three lines of every WebSocket that opens and closes are never made (app/web/wsprotocol.py).
