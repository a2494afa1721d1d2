"""Logging for every process: one JSON object per line wherever the output is not a
terminal, readable text on a terminal.

``configure`` installs one handler on the root logger. Its format is
``SOCIALAPP_LOG_FORMAT``: ``json``, ``text``, or unset for JSON unless the stream is a
terminal. Every line carries ``time``, ``level``, ``logger`` and ``message``, the fields
the code passes in ``extra``, and those bound to the current request or task (``bind``):
the request id, the user id, the task and the post. Secrets never reach the output: a
field named like a password, token, secret, key or authorization is replaced, and so is
anything in a message or a field that looks like a bearer token, a JWT or a
``password=...`` pair.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import logging
import os
import re
import sys
from typing import IO

from pythonjsonlogger.json import JsonFormatter

LEVEL_VARIABLE = "SOCIALAPP_LOG_LEVEL"
FORMAT_VARIABLE = "SOCIALAPP_LOG_FORMAT"
TEXT_FORMAT = "%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"
REDACTED = "[redacted]"
QUIETER = ("celery.app.trace", "celery.worker.strategy")  # "received", "succeeded" lines
SECRET_FIELD = re.compile(r"pass(word|wd)|token|secret|authoriz|api_?key|cookie|credential", re.I)
SECRET_TEXT = re.compile(
    r"(?i)(bearer\s+)[^\s\"',;]+"  # an Authorization header's credentials
    r"|eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*"  # a JWT
    r"|((?:password|passwd|secret|token|access_token|client_secret)[\"']?\s*[=:]\s*[\"']?)"
    r"[^\s\"',;&]+"  # password=..., "token": "..."
)
_context: contextvars.ContextVar[dict] = contextvars.ContextVar("log_context", default={})  # noqa: B039


def bind(**fields) -> contextvars.Token:
    """Add ``fields`` to every line logged in this context (a request, a task) until
    ``unbind`` is given the token."""
    return _context.set({**_context.get(), **fields})


def unbind(token: contextvars.Token) -> None:
    _context.reset(token)


def bound(name: str):
    """A field bound to the current context, or None."""
    return _context.get().get(name)


def scrub(text: str) -> str:
    """``text`` with what looks like a credential replaced."""
    return SECRET_TEXT.sub(lambda m: (m.group(1) or m.group(2) or "") + REDACTED, text)


def _clean(name: str, value):
    if SECRET_FIELD.search(name):
        return REDACTED
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _clean(str(k), v) for k, v in value.items()}
    return value


class ContextFilter(logging.Filter):
    """Puts the fields bound to the current context on the record."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _context.get().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class JsonLines(JsonFormatter):
    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            timestamp=False,
            json_ensure_ascii=False,
        )

    def formatTime(self, record, datefmt=None) -> str:
        return _iso_time(record)

    def process_log_record(self, log_data: dict) -> dict:
        return {name: _clean(name, value) for name, value in log_data.items()}


class Text(logging.Formatter):
    """The classic line, then the bound and extra fields as ``name=value``."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        line = scrub(super().format(record))
        extra = {
            name: value
            for name, value in vars(record).items()
            if name not in _STANDARD and not name.startswith("_")
        }
        fields = " ".join(f"{name}={_clean(name, value)}" for name, value in extra.items())
        return f"{line} {fields}" if fields else line


_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


def _iso_time(record: logging.LogRecord) -> str:
    return dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds")


def wants_json(stream: IO, environ=os.environ) -> bool:
    chosen = (environ.get(FORMAT_VARIABLE) or "").strip().lower()
    if chosen in ("json", "text"):
        return chosen == "json"
    isatty = getattr(stream, "isatty", None)
    return not (isatty and isatty())


def formatter(stream: IO | None = None) -> logging.Formatter:
    """The formatter for ``stream`` (standard error unless given)."""
    return JsonLines() if wants_json(stream or sys.stderr) else Text()


class _Handler(logging.StreamHandler):
    """The handler ``configure`` installs (and replaces when called again); without a
    stream of its own it writes to whatever ``sys.stderr`` is when a line is written."""

    def __init__(self, stream: IO | None) -> None:
        super().__init__(stream)
        self._own = stream

    @property
    def stream(self) -> IO:
        return self._own or sys.stderr

    @stream.setter
    def stream(self, value: IO) -> None:
        self._own = value


def configure(level: str | None = None, stream: IO | None = None) -> None:
    """Log to ``stream`` (standard error) at ``level`` (``SOCIALAPP_LOG_LEVEL``, INFO)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(handler)
    handler = _Handler(stream)
    handler.setFormatter(formatter(stream))
    handler.addFilter(ContextFilter())
    root.addHandler(handler)
    root.setLevel(level or os.environ.get(LEVEL_VARIABLE) or "INFO")
    for celerys in QUIETER:  # a task's one line is socialapp.tasks' (errors still pass)
        logging.getLogger(celerys).setLevel(logging.WARNING)
