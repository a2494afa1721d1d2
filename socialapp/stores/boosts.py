"""The ``boosts`` collection: one document per (post, user), enforced by a unique index,
naming the boost's own post in ``posts`` (``boost_id``): what makes a boost one per post and
user, as ``likes`` does for likes, without a partial unique index on ``posts``."""

from __future__ import annotations

import datetime as dt

from pymongo import ASCENDING

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.mongo import collection, insert_if_absent
from socialapp.stores.unavailable import MONGODB, translates

SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "post_id": schema.ID,
        "user_id": schema.ID,
        "boost_id": schema.ID,
        "created_at": schema.DATE,
    }
)


@translates(MONGODB)
class BoostStore:
    def __init__(self, db, settings: Settings) -> None:
        self._boosts = collection(db, "boosts", settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._boosts, SCHEMA)
        self._boosts.create_index(
            [("post_id", ASCENDING), ("user_id", ASCENDING)], unique=True, name="post_user_unique"
        )

    def add(self, post_id: int, user_id: int, boost_id: int, session=None) -> bool:
        """Record the user's boost of the post; True only if they had not boosted it."""
        key = {"post_id": post_id, "user_id": user_id}
        fields = {"boost_id": boost_id, "created_at": dt.datetime.now(dt.UTC)}
        return insert_if_absent(self._boosts, key, fields, session)

    def remove(self, post_id: int, user_id: int, session=None) -> bool:
        """True only when this call removed the boost."""
        key = {"post_id": post_id, "user_id": user_id}
        return self._boosts.delete_one(key, session=session).deleted_count == 1

    def boost_id(self, post_id: int, user_id: int, session=None) -> int | None:
        """The id of the user's boost of the post, if any."""
        key = {"post_id": post_id, "user_id": user_id}
        found = self._boosts.find_one(key, projection={"boost_id": 1}, session=session)
        return None if found is None else found["boost_id"]

    def boosted_among(self, user_id: int, post_ids: list[int]) -> set[int]:
        """Which of ``post_ids`` the user has boosted, in one query (a page's ``boosted``)."""
        if not post_ids:
            return set()
        query = {"post_id": {"$in": list(post_ids)}, "user_id": user_id}
        return {b["post_id"] for b in self._boosts.find(query, projection={"post_id": 1})}

    def of_post(self, post_id: int) -> list[tuple[int, int]]:
        """``(user, boost id)`` of every boost of the post (to delete them with it)."""
        found = self._boosts.find({"post_id": post_id}, projection={"user_id": 1, "boost_id": 1})
        return [(b["user_id"], b["boost_id"]) for b in found]
