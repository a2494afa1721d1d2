"""The ``markers`` collection: Mastodon's read markers, one document per (account, timeline).

A save sets ``last_read_id`` and counts itself in ``saves`` in one atomic
``find_one_and_update`` (an upsert, behind the unique index): two saves racing both count,
and the marker's ``version`` (``saves`` less one, so a first save is version 0, as
Mastodon's ``lock_version`` starts) never repeats.
"""

from __future__ import annotations

import datetime as dt

from pymongo import ASCENDING, ReturnDocument

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.mongo import collection
from socialapp.stores.unavailable import MONGODB, translates

TIMELINES = ("home", "notifications")  # Mastodon's Marker::TIMELINES
SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "account_id": schema.ID,
        "timeline": {"enum": list(TIMELINES)},
        "last_read_id": schema.ID,
        "saves": {"bsonType": ["int", "long"], "minimum": 1},
        "updated_at": schema.DATE,
    }
)


@translates(MONGODB)
class MarkerStore:
    def __init__(self, db, settings: Settings) -> None:
        self._markers = collection(db, "markers", settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._markers, SCHEMA)
        self._markers.create_index(
            [("account_id", ASCENDING), ("timeline", ASCENDING)],
            unique=True,
            name="account_timeline_unique",
        )

    def get(self, account_id: int, timelines: list[str]) -> list[dict]:
        """The account's markers of these timelines (those never saved are missing)."""
        if not timelines:
            return []
        query = {"account_id": account_id, "timeline": {"$in": list(timelines)}}
        return list(self._markers.find(query, projection={"_id": 0}))

    def save(self, account_id: int, timeline: str, last_read_id: int) -> dict:
        """Set the marker and count the save, atomically; the marker as saved."""
        now = dt.datetime.now(dt.UTC)
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        return self._markers.find_one_and_update(
            {"account_id": account_id, "timeline": timeline},
            {"$set": {"last_read_id": last_read_id, "updated_at": now}, "$inc": {"saves": 1}},
            projection={"_id": 0},
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
