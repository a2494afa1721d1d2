"""The ``likes`` collection: one document per (post, user), enforced by a unique index."""

from __future__ import annotations

import datetime as dt

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from socialapp.config import Settings
from socialapp.stores.mongo import collection


class LikeStore:
    def __init__(self, db, settings: Settings) -> None:
        self._likes = collection(db, "likes", settings)

    def ensure_indexes(self) -> None:
        self._likes.create_index(
            [("post_id", ASCENDING), ("user_id", ASCENDING)], unique=True, name="post_user_unique"
        )

    def add(self, post_id: int, user_id: int) -> bool:
        """True only when this call added the like (False if the user liked it already)."""
        like = {"post_id": post_id, "user_id": user_id, "created_at": dt.datetime.now(dt.UTC)}
        try:
            self._likes.insert_one(like)
        except DuplicateKeyError:
            return False
        return True

    def remove(self, post_id: int, user_id: int) -> bool:
        """True only when this call removed the like."""
        return self._likes.delete_one({"post_id": post_id, "user_id": user_id}).deleted_count == 1

    def has_liked(self, post_id: int, user_id: int) -> bool:
        return self._likes.find_one({"post_id": post_id, "user_id": user_id}) is not None

    def count(self, post_id: int) -> int:
        return self._likes.count_documents({"post_id": post_id})

    def delete_for_post(self, post_id: int) -> None:
        self._likes.delete_many({"post_id": post_id})
