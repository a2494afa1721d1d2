"""The ``likes`` collection: one document per (post, user), enforced by a unique index, and
read by user too, newest first (Mastodon's favourites, paged by the like's ``_id``)."""

from __future__ import annotations

import datetime as dt

from pymongo import ASCENDING, DESCENDING

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.bookmarks import PostEdge
from socialapp.stores.mongo import collection, edges_by_id, insert_if_absent
from socialapp.stores.unavailable import MONGODB, translates

SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "post_id": schema.ID,
        "user_id": schema.ID,
        "created_at": schema.DATE,
    }
)


@translates(MONGODB)
class LikeStore:
    def __init__(self, db, settings: Settings) -> None:
        self._likes = collection(db, "likes", settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._likes, SCHEMA)
        self._likes.create_index(
            [("post_id", ASCENDING), ("user_id", ASCENDING)], unique=True, name="post_user_unique"
        )
        self._likes.create_index([("user_id", ASCENDING), ("_id", DESCENDING)], name="user_newest")

    def add(self, post_id: int, user_id: int, session=None) -> bool:
        """True only when this call added the like (False if the user liked it already)."""
        like = {"post_id": post_id, "user_id": user_id}
        return insert_if_absent(self._likes, like, {"created_at": dt.datetime.now(dt.UTC)}, session)

    def remove(self, post_id: int, user_id: int, session=None) -> bool:
        """True only when this call removed the like."""
        like = {"post_id": post_id, "user_id": user_id}
        return self._likes.delete_one(like, session=session).deleted_count == 1

    def has_liked(self, post_id: int, user_id: int) -> bool:
        return self._likes.find_one({"post_id": post_id, "user_id": user_id}) is not None

    def liked_among(self, user_id: int, post_ids: list[int]) -> set[int]:
        """Which of ``post_ids`` the user has liked, in one query (a page's ``favourited``)."""
        if not post_ids:
            return set()
        query = {"post_id": {"$in": list(post_ids)}, "user_id": user_id}
        return {like["post_id"] for like in self._likes.find(query, projection={"post_id": 1})}

    def edges(
        self,
        user_id: int,
        limit: int,
        before: str | None = None,
        after: str | None = None,
        oldest_first: bool = False,
    ) -> list[PostEdge]:
        """The user's likes with cursors between ``after`` and ``before`` (both excluded),
        newest first (or ``oldest_first``), ``limit`` at most."""
        query = {"user_id": user_id}
        found = edges_by_id(self._likes, query, "post_id", limit, before, after, oldest_first)
        return [PostEdge(*edge) for edge in found]

    def count(self, post_id: int) -> int:
        return self._likes.count_documents({"post_id": post_id})

    def delete_for_post(self, post_id: int) -> None:
        self._likes.delete_many({"post_id": post_id})
