"""What the writer did, and when: posts, deletes, follow edges, list memberships and tag
follows, with the moment each call began and returned, so that a traversal can tell what was
settled before it began and what changed while it ran."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple

INFINITY = float("inf")


class Change(NamedTuple):
    """A follow (``following``) or an unfollow of one edge, or a member put on (``following``)
    or taken off a list, or a tag followed or unfollowed; ``returned`` is infinite while the
    call runs, and stays so if it failed (its outcome is unknown)."""

    started: float
    returned: float
    following: bool


def held(state: bool, changes, t0: float, t1: float) -> bool | None:
    """Whether a relation that was ``state`` before ``changes`` held all through [t0, t1]:
    True, False, or None when one of them began before t1 and returned after t0."""
    for change in changes:
        if change.returned < t0:
            state = change.following
        elif change.started <= t1:
            return None
    return state


class View(NamedTuple):
    """The ledger at one moment (copies: the writer goes on). A boost counts as deleted from
    the moment its boosted post's delete began (pages leave it out once that post is gone;
    a task deletes it later)."""

    authors: dict[int, int]  # post id -> author id, once its create returned
    delete_started: dict[int, float]
    delete_returned: dict[int, float]
    edges: dict[tuple[int, int], list[Change]]  # (follower, followee) -> changes in order
    initial: frozenset[tuple[int, int]]  # edges before the writer began
    members: dict[tuple[int, int], list[Change]] = {}  # (owner, account) -> changes
    initial_members: frozenset[tuple[int, int]] = frozenset()  # on the owner's list at first
    tag_follows: dict[int, list[Change]] = {}  # reader -> follows and unfollows of the tag
    initial_tags: frozenset[int] = frozenset()  # readers following the tag at first
    tagged: frozenset[int] = frozenset()  # public posts carrying the tag (its feed's)
    boosts: dict[int, int] = {}  # boost's post id -> the boosted post's

    def following(self, reader: int, author: int, t0: float, t1: float) -> bool | None:
        """Whether ``reader`` followed ``author`` all through [t0, t1]: True, False, or None
        when a follow or unfollow of the edge began before t1 and returned after t0."""
        key = (reader, author)
        return held(key in self.initial, self.edges.get(key, ()), t0, t1)

    def member(self, owner: int, account: int, t0: float, t1: float) -> bool | None:
        """Whether ``account`` was on ``owner``'s list all through [t0, t1] (as ``following``)."""
        key = (owner, account)
        return held(key in self.initial_members, self.members.get(key, ()), t0, t1)

    def following_tag(self, reader: int, t0: float, t1: float) -> bool | None:
        """Whether ``reader`` followed the tag all through [t0, t1] (as ``following``)."""
        return held(reader in self.initial_tags, self.tag_follows.get(reader, ()), t0, t1)

    def followees(self, reader: int) -> set[int]:
        """Whom ``reader`` follows once every change has returned."""
        return {
            author
            for (follower, author) in {*self.initial, *self.edges}
            if follower == reader and self.following(reader, author, INFINITY, INFINITY)
        }

    def listed(self, owner: int) -> set[int]:
        """Who is on ``owner``'s list once every change has returned."""
        return {
            account
            for (holder, account) in {*self.initial_members, *self.members}
            if holder == owner and self.member(owner, account, INFINITY, INFINITY)
        }

    def follows_tag(self, reader: int) -> bool:
        """Whether ``reader`` follows the tag once every change has returned."""
        return bool(self.following_tag(reader, INFINITY, INFINITY))

    def deleted_before(self, t: float) -> set[int]:
        return {post for post, returned in self.delete_returned.items() if returned < t}


class Ledger:
    def __init__(
        self,
        initial: set[tuple[int, int]],
        members: set[tuple[int, int]] = frozenset(),
        tag_followers: set[int] = frozenset(),
    ) -> None:
        self._lock = threading.Lock()
        self._initial = frozenset(initial)
        self._initial_members = frozenset(members)
        self._initial_tags = frozenset(tag_followers)
        self._authors: dict[int, int] = {}
        self._delete_started: dict[int, float] = {}
        self._delete_returned: dict[int, float] = {}
        self._edges: dict[tuple[int, int], list[Change]] = {}
        self._members: dict[tuple[int, int], list[Change]] = {}
        self._tag_follows: dict[int, list[Change]] = {}
        self._tagged: set[int] = set()
        self._boosts: dict[int, int] = {}

    @staticmethod
    def now() -> float:
        return time.monotonic()

    def posted(self, post_id: int, author_id: int, tagged: bool = False, boost_of: int = 0):
        """A post made (``tagged``: public and carrying the tag), or a boost of ``boost_of``."""
        with self._lock:
            self._authors[post_id] = author_id
            if tagged:
                self._tagged.add(post_id)
            if boost_of:
                self._boosts[post_id] = boost_of

    @contextlib.contextmanager
    def deleting(self, post_id: int) -> Iterator[None]:
        with self._lock:
            self._delete_started[post_id] = self.now()
        yield
        with self._lock:
            self._delete_returned[post_id] = self.now()

    def changing(self, follower: int, followee: int, following: bool):
        """A follow (``following``) or an unfollow, as it runs."""
        return self._changing(self._edges, (follower, followee), following)

    def listing(self, owner: int, account: int, listed: bool):
        """``account`` put on (``listed``) or taken off ``owner``'s list, as it runs."""
        return self._changing(self._members, (owner, account), listed)

    def tagging(self, reader: int, following: bool):
        """``reader`` following (``following``) or unfollowing the tag, as it runs."""
        return self._changing(self._tag_follows, reader, following)

    @contextlib.contextmanager
    def _changing(self, changes_of: dict, key, following: bool) -> Iterator[None]:
        with self._lock:
            changes = changes_of.setdefault(key, [])
            changes.append(Change(self.now(), INFINITY, following))
            index = len(changes) - 1
        yield
        with self._lock:
            changes[index] = changes[index]._replace(returned=self.now())

    def view(self) -> View:
        with self._lock:
            started, returned = dict(self._delete_started), dict(self._delete_returned)
            for boost, original in self._boosts.items():  # gone with the boosted post
                if original in started:
                    started[boost] = min(started[original], started.get(boost, INFINITY))
                if original in returned:
                    returned[boost] = min(returned[original], returned.get(boost, INFINITY))
            return View(
                dict(self._authors),
                started,
                returned,
                {key: list(changes) for key, changes in self._edges.items()},
                self._initial,
                {key: list(changes) for key, changes in self._members.items()},
                self._initial_members,
                {key: list(changes) for key, changes in self._tag_follows.items()},
                self._initial_tags,
                frozenset(self._tagged),
                dict(self._boosts),
            )

    def posts(self) -> set[int]:
        with self._lock:
            return set(self._authors)
