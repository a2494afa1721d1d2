"""The MongoDB stores whose writes commit together, and the transaction that runs them.

A use case that writes several documents that must agree (an edge and both counters, a post
and its author's count and idempotency key) takes one ``UnitOfWork`` instead of the stores
one by one: ``uow.run(work)`` calls ``work(session)`` as one transaction (see
``socialapp.stores.mongo.Transactions``), and ``work`` passes ``session`` to every store call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pymongo.client_session import ClientSession

from socialapp.stores.bookmarks import BookmarkStore, PinStore
from socialapp.stores.boosts import BoostStore
from socialapp.stores.filters import FilterStore
from socialapp.stores.follows import FollowStore
from socialapp.stores.idempotency import IdempotencyStore
from socialapp.stores.likes import LikeStore
from socialapp.stores.lists import ListStore
from socialapp.stores.mongo import Transactions
from socialapp.stores.posts import PostStore
from socialapp.stores.users import UserStore

T = TypeVar("T")


class UnitOfWork:
    def __init__(
        self,
        transactions: Transactions,
        users: UserStore,
        follows: FollowStore,
        posts: PostStore,
        likes: LikeStore,
        idempotency: IdempotencyStore,
        filters: FilterStore,
        boosts: BoostStore,
        lists: ListStore,
        bookmarks: BookmarkStore,
        pins: PinStore,
    ) -> None:
        self._transactions = transactions
        self.users = users
        self.follows = follows
        self.posts = posts
        self.likes = likes
        self.idempotency = idempotency
        self.filters = filters
        self.boosts = boosts
        self.lists = lists
        self.bookmarks = bookmarks
        self.pins = pins

    def run(self, work: Callable[[ClientSession | None], T]) -> T:
        """``work(session)`` in one transaction: all of its writes land, or none."""
        return self._transactions.run(work)
