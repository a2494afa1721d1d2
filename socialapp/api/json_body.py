"""The one JSON parser for request bodies: strict JSON with bounded depth and numbers.

Python's parser raises ``RecursionError`` on deeply nested input, ``ValueError`` past 4,300
integer digits, and accepts ``NaN`` and ``Infinity``, which are not JSON. Every body goes
through :func:`parse` (Flask's ``request.get_json`` and the argument parser alike), so each of
those is one clear client error (400), never a 500, and never an exception escaping into code
that reads a body on the side, such as a rate limiter's key function.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32
MAX_INTEGER_DIGITS = 40


class InvalidJson(json.JSONDecodeError):
    """A body that is not JSON, or JSON past this API's bounds (400)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, doc="<request body>", pos=0)
        self.msg = message

    def __str__(self) -> str:
        return self.msg


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise InvalidJson(f"numbers are limited to {MAX_INTEGER_DIGITS} digits")
    return int(text)


def _constant(name: str) -> float:
    raise InvalidJson(f"{name} is not a JSON value")


def parse(data: bytes | str) -> Any:
    """The value in ``data``; :class:`InvalidJson` (a ``ValueError``) for anything else."""
    if isinstance(data, bytes | bytearray):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidJson("the body is not valid UTF-8") from error
    try:
        value = json.loads(data, parse_int=_integer, parse_constant=_constant)
    except RecursionError as error:
        raise InvalidJson(f"the body is nested deeper than {MAX_DEPTH} levels") from error
    if _depth_exceeds(value, MAX_DEPTH):
        raise InvalidJson(f"the body is nested deeper than {MAX_DEPTH} levels")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    level = [value]
    for _ in range(limit):
        level = [
            child
            for node in level
            if isinstance(node, dict | list)
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return any(isinstance(node, dict | list) for node in level)
