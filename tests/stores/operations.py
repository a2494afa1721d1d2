"""What code under ``socialapp`` asks of MongoDB: recorded from mongomock's collections.

``instrument()`` wraps every public method of mongomock's ``Collection``; a call whose
caller is socialapp code (past the embedded store's own wrappers) is recorded in
``RECORDER``: the method, and every ``$``-operator in its filter, update, projection, sort
or pipeline. ``documented_operations()`` reads the list they are checked against from
docs/data-model.md. (The embedded store's bulk insert writes mongomock's documents
directly; on a server that path is ``insert_many``, which is listed.)
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import threading
from pathlib import Path

import mongomock

DATA_MODEL = Path(__file__).parents[2] / "docs" / "data-model.md"
SECTION = "### Operations the stores may use"
# Wrappers between a store and mongomock's collection: frames that are not the caller.
PASS_THROUGH = ("socialapp.embedded", __name__, "functools")
NOT_WALKED = {"insert_one": 1, "insert_many": 1}  # leading arguments that are documents


def documented_operations(text: str | None = None) -> set[str]:
    """The names in the first column of the table under ``SECTION`` in docs/data-model.md."""
    text = DATA_MODEL.read_text() if text is None else text
    section = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([$\w]+)` \|", section, re.MULTILINE))


def operators(value) -> set[str]:
    """Every ``$``-key anywhere in ``value`` (nested dicts, lists and tuples)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.startswith("$"):
                found.add(key)
            found |= operators(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found |= operators(item)
    return found


class Recorder:
    """Operations seen, each with where it was first seen (for the failure message)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.collections: set[str] = set()
        self._lock = threading.Lock()

    def observe(self, collection: str, method: str, args: tuple, kwargs: dict, caller: str):
        arguments = (args[NOT_WALKED.get(method, 0) :], kwargs)
        where = f"{collection}.{method} from {caller}"
        with self._lock:
            self.collections.add(collection)
            for name in (method, *sorted(operators(arguments))):
                self.seen.setdefault(name, where)

    def undocumented(self, documented: set[str]) -> list[str]:
        return [f"{name} ({where})" for name, where in sorted(self.seen.items())
                if name not in documented]  # fmt: skip


RECORDER = Recorder()
_inside = threading.local()


def _caller() -> str | None:
    """``module.function`` that called the collection, if it is socialapp code (not
    mongomock calling itself, e.g. ``Database.get_collection`` calling ``with_options``)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(PASS_THROUGH):
        frame = frame.f_back
    module = "" if frame is None else frame.f_globals.get("__name__", "")
    return f"{module}.{frame.f_code.co_qualname}" if module.startswith("socialapp.") else None


def _recording(method):
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if getattr(_inside, "depth", 0):  # mongomock calling itself
            return method(self, *args, **kwargs)
        caller = _caller()
        if caller is not None:
            kwargs_seen = {k: v for k, v in kwargs.items() if k != "session"}
            RECORDER.observe(self.name, method.__name__, args, kwargs_seen, caller)
        _inside.depth = 1
        try:
            return method(self, *args, **kwargs)
        finally:
            _inside.depth = 0

    return call


def instrument() -> None:
    cls = mongomock.collection.Collection
    if getattr(cls, "_guard_recording", False):
        return
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("_"):
            setattr(cls, name, _recording(member))
    cls._guard_recording = True
