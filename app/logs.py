"""Log set-up: plain text for a terminal, or one JSON object per line for a log collector."""

from __future__ import annotations

import json
import logging
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


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

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
