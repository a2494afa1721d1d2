"""Driver errors that mean "this backing store cannot answer now", as ``Unavailable``.

Every store class is decorated with the backend it talks to; its public methods then raise
``socialapp.errors.Unavailable`` (the driver's error as its cause) instead of the driver's
connection and timeout errors, so nothing above the stores imports a driver. One exception:
a MongoDB call given a ``session`` runs inside a transaction, whose driver loop must see the
original error to retry it; ``Transactions.run`` translates what is left at its boundary.

A call to any other backend first settles the writes this thread still owes the embedded
store's disk (``mongomock_store.settle``): what leaves the process never names a write a
crash could take back.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import NamedTuple, TypeVar

import kombu.exceptions
import pymongo.errors
import redis.exceptions

from socialapp.embedded import mongomock_store
from socialapp.errors import Unavailable

T = TypeVar("T")


class Backend(NamedTuple):
    name: str
    errors: tuple[type[BaseException], ...]
    outside: bool = True  # not the store of record: its writes must be on disk first


MONGODB = Backend(
    "MongoDB",
    (
        pymongo.errors.ExecutionTimeout,
        pymongo.errors.ConnectionFailure,  # AutoReconnect, NotPrimaryError, server selection
        pymongo.errors.WriteConcernError,
    ),
    outside=False,
)
REDIS = Backend(
    "Redis",
    (
        redis.exceptions.ConnectionError,
        redis.exceptions.TimeoutError,
        redis.exceptions.ClusterDownError,
        redis.exceptions.TryAgainError,
    ),
)
BROKER = Backend("the broker", (kombu.exceptions.OperationalError, *REDIS.errors))


class translated:  # lower case: used as a function, ``with translated(REDIS):``
    """Raise ``Unavailable`` for ``backend``'s connection and timeout errors in the block.

    A class, not a ``contextlib.contextmanager``: every store call enters one, and a
    generator-based one cost a page read about 2 µs a call, four or five calls a page."""

    __slots__ = ("_backend",)

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def __enter__(self) -> None:
        if self._backend.outside:
            with translated(MONGODB):
                mongomock_store.settle()

    def __exit__(self, kind, error, traceback) -> bool:
        if kind is not None and issubclass(kind, self._backend.errors):
            raise Unavailable(f"{self._backend.name} is unavailable: {error}") from error
        return False


def translates(backend: Backend) -> Callable[[type[T]], type[T]]:
    """A class decorator: every public method translates ``backend``'s errors, but those
    marked ``asks_nothing``."""

    def decorate(cls: type[T]) -> type[T]:
        for name, member in list(vars(cls).items()):
            public = not name.startswith("_") and inspect.isfunction(member)
            if public and not getattr(member, "asks_nothing", False):
                setattr(cls, name, _translating(member, backend))
        return cls

    return decorate


def asks_nothing(method: Callable) -> Callable:
    """Mark a store's public method that asks its backend nothing itself (a key's name, the
    clock, a value kept, or a call of a method that translates): ``translates`` leaves it
    as it is. A home page calls a few such, each wrapped costing two context managers."""
    method.asks_nothing = True
    return method


def _translating(method: Callable, backend: Backend) -> Callable:
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(*args, **kwargs):
            if kwargs.get("session") is not None:
                return (yield from method(*args, **kwargs))
            with translated(backend):
                return (yield from method(*args, **kwargs))

        return generator

    @functools.wraps(method)
    def call(*args, **kwargs):
        if kwargs.get("session") is not None:  # inside a transaction: see the module's doc
            return method(*args, **kwargs)
        with translated(backend):
            return method(*args, **kwargs)

    return call
