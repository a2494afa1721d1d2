"""The ``likes`` collection: one document per (post, user), enforced by a unique index."""

from __future__ import annotations

import datetime as dt

from pymongo import ASCENDING

from socialapp.config import Settings
from socialapp.stores.mongo import collection


class LikeStore:
    def __init__(self, db, settings: Settings) -> None:
        self._likes = collection(db, "likes", settings)

    def ensure_indexes(self) -> None:
        self._likes.create_index(
            [("post_id", ASCENDING), ("user_id", ASCENDING)], unique=True, name="post_user_unique"
        )

    def add(self, post_id: int, user_id: int, session=None) -> bool:
        """True only when this call added the like (False if the user liked it already).

        An upsert, as for follow edges: safe inside a transaction under concurrency.
        """
        result = self._likes.update_one(
            {"post_id": post_id, "user_id": user_id},
            {"$setOnInsert": {"created_at": dt.datetime.now(dt.UTC)}},
            upsert=True,
            session=session,
        )
        return result.upserted_id is not None

    def remove(self, post_id: int, user_id: int, session=None) -> bool:
        """True only when this call removed the like."""
        like = {"post_id": post_id, "user_id": user_id}
        return self._likes.delete_one(like, session=session).deleted_count == 1

    def has_liked(self, post_id: int, user_id: int) -> bool:
        return self._likes.find_one({"post_id": post_id, "user_id": user_id}) is not None

    def count(self, post_id: int) -> int:
        return self._likes.count_documents({"post_id": post_id})

    def delete_for_post(self, post_id: int) -> None:
        self._likes.delete_many({"post_id": post_id})
