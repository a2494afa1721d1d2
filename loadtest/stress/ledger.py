"""What the writer did, and when: posts, deletes and follow edges, with the moment each call
began and returned, so that a traversal can tell what was settled before it began and
what changed while it ran."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple

INFINITY = float("inf")


class Change(NamedTuple):
    """A follow (``following``) or an unfollow of one edge; ``returned`` is infinite while the
    call runs, and stays so if it failed (its outcome is unknown)."""

    started: float
    returned: float
    following: bool


class View(NamedTuple):
    """The ledger at one moment (copies: the writer goes on)."""

    authors: dict[int, int]  # post id -> author id, once its create returned
    delete_started: dict[int, float]
    delete_returned: dict[int, float]
    edges: dict[tuple[int, int], list[Change]]  # (follower, followee) -> changes in order
    initial: frozenset[tuple[int, int]]  # edges before the writer began

    def following(self, reader: int, author: int, t0: float, t1: float) -> bool | None:
        """Whether ``reader`` followed ``author`` all through [t0, t1]: True, False, or None
        when a follow or unfollow of the edge began before t1 and returned after t0."""
        state = (reader, author) in self.initial
        for change in self.edges.get((reader, author), ()):
            if change.returned < t0:
                state = change.following
            elif change.started <= t1:
                return None
        return state

    def followees(self, reader: int) -> set[int]:
        """Whom ``reader`` follows once every change has returned."""
        return {
            author
            for (follower, author) in {*self.initial, *self.edges}
            if follower == reader and self.following(reader, author, INFINITY, INFINITY)
        }

    def deleted_before(self, t: float) -> set[int]:
        return {post for post, returned in self.delete_returned.items() if returned < t}


class Ledger:
    def __init__(self, initial: set[tuple[int, int]]) -> None:
        self._lock = threading.Lock()
        self._initial = frozenset(initial)
        self._authors: dict[int, int] = {}
        self._delete_started: dict[int, float] = {}
        self._delete_returned: dict[int, float] = {}
        self._edges: dict[tuple[int, int], list[Change]] = {}

    @staticmethod
    def now() -> float:
        return time.monotonic()

    def posted(self, post_id: int, author_id: int) -> None:
        with self._lock:
            self._authors[post_id] = author_id

    @contextlib.contextmanager
    def deleting(self, post_id: int) -> Iterator[None]:
        with self._lock:
            self._delete_started[post_id] = self.now()
        yield
        with self._lock:
            self._delete_returned[post_id] = self.now()

    @contextlib.contextmanager
    def changing(self, follower: int, followee: int, following: bool) -> Iterator[None]:
        key = (follower, followee)
        with self._lock:
            changes = self._edges.setdefault(key, [])
            changes.append(Change(self.now(), INFINITY, following))
            index = len(changes) - 1
        yield
        with self._lock:
            changes[index] = changes[index]._replace(returned=self.now())

    def view(self) -> View:
        with self._lock:
            return View(
                dict(self._authors),
                dict(self._delete_started),
                dict(self._delete_returned),
                {key: list(changes) for key, changes in self._edges.items()},
                self._initial,
            )

    def posts(self) -> set[int]:
        with self._lock:
            return set(self._authors)
