"""The ``bookmarks`` and ``pins`` collections: one document per (account, post), enforced by
a unique index, each with its ``_id`` (an ObjectId) as the cursor a page is linked by, as
Mastodon pages bookmarks by the bookmark record rather than the status.

A bookmark is any account's mark on any post it can see, so a post's bookmarks are found by
post too (deleting the post removes them). A pin is an author's mark on their own post: at
most a handful per account, found by account alone.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from pymongo import ASCENDING, DESCENDING

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.mongo import collection, edges_by_id, insert_if_absent
from socialapp.stores.unavailable import MONGODB, translates

SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "account_id": schema.ID,
        "post_id": schema.ID,
        "created_at": schema.DATE,
    }
)


class PostEdge(NamedTuple):
    """A marked post and its mark's cursor (its ``_id`` in hex: later marks are larger)."""

    cursor: str
    post_id: int


@translates(MONGODB)
class _Marks:
    """One (account, post) collection: add, remove, which of a page are marked, a page."""

    name = ""

    def __init__(self, db, settings: Settings) -> None:
        self._marks = collection(db, self.name, settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._marks, SCHEMA)
        self._marks.create_index(
            [("account_id", ASCENDING), ("post_id", ASCENDING)],
            unique=True,
            name="account_post_unique",
        )
        self._marks.create_index(
            [("account_id", ASCENDING), ("_id", DESCENDING)], name="account_newest"
        )

    def add(self, account_id: int, post_id: int, session=None) -> bool:
        """Record the mark; True only if it is new."""
        key = {"account_id": account_id, "post_id": post_id}
        return insert_if_absent(self._marks, key, {"created_at": _now()}, session)

    def remove(self, account_id: int, post_id: int, session=None) -> bool:
        """True only when this call removed the mark."""
        key = {"account_id": account_id, "post_id": post_id}
        return self._marks.delete_one(key, session=session).deleted_count == 1

    def marked_among(self, account_id: int, post_ids: list[int]) -> set[int]:
        """Which of ``post_ids`` the account has marked, in one query (a page's flags)."""
        if not post_ids:
            return set()
        query = {"account_id": account_id, "post_id": {"$in": list(post_ids)}}
        found = self._marks.find(query, projection={"post_id": 1, "_id": 0})
        return {mark["post_id"] for mark in found}

    def count(self, account_id: int) -> int:
        return self._marks.count_documents({"account_id": account_id})

    def edges(
        self,
        account_id: int,
        limit: int,
        before: str | None = None,
        after: str | None = None,
        oldest_first: bool = False,
    ) -> list[PostEdge]:
        """The account's marks with cursors between ``after`` and ``before`` (both
        excluded), newest first (or ``oldest_first``), ``limit`` at most."""
        query = {"account_id": account_id}
        found = edges_by_id(self._marks, query, "post_id", limit, before, after, oldest_first)
        return [PostEdge(*edge) for edge in found]


@translates(MONGODB)
class BookmarkStore(_Marks):
    name = "bookmarks"

    def ensure_indexes(self) -> None:
        super().ensure_indexes()
        self._marks.create_index([("post_id", ASCENDING)], name="post_bookmarks")

    def delete_for_post(self, post_id: int) -> None:
        """Every account's bookmark of a deleted post."""
        self._marks.delete_many({"post_id": post_id})


@translates(MONGODB)
class PinStore(_Marks):
    """Only a post's author pins it, so a post's pin is found by (author, post)."""

    name = "pins"


def _now() -> dt.datetime:
    now = dt.datetime.now(dt.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
