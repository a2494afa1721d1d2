"""The ``follows`` collection: one document per follower -> followee edge."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import NamedTuple

import bson
from pymongo import ASCENDING, DESCENDING

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.mongo import (
    collection,
    edges_by_id,
    id_chunks,
    id_pages,
    ids_after,
    ids_by,
    insert_if_absent,
    insert_unordered,
    replace_index,
)
from socialapp.stores.unavailable import MONGODB, translates

SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "follower_id": schema.ID,
        "followee_id": schema.ID,
        "created_at": schema.DATE,
        "reblogs": {"bsonType": "bool", "enum": [False]},  # absent: the follower sees boosts
    },
    optional=("reblogs",),
)


class Edge(NamedTuple):
    """One edge seen from an account: its cursor and the account at the other end."""

    cursor: str  # the edge's ``_id``, an ObjectId in hex: later follows have larger ones
    user_id: int


def is_cursor(raw: str) -> bool:
    """Whether ``raw`` is an edge's cursor (an ObjectId in hex), as ``Edge.cursor`` gives."""
    return isinstance(raw, str) and len(raw) == 24 and bson.ObjectId.is_valid(raw)


FOLLOWEE_FIRST = [("followee_id", ASCENDING), ("follower_id", ASCENDING)]
FOLLOWER_FIRST = [("follower_id", ASCENDING), ("followee_id", ASCENDING)]


@translates(MONGODB)
class FollowStore:
    def __init__(self, db, settings: Settings) -> None:
        self._follows = collection(db, "follows", settings)
        self.chunk_size = settings.fanout_chunk_size
        self.large_chunk_size = max(settings.fanout_celebrity_chunk_size, self.chunk_size)

    def ensure_indexes(self) -> None:
        schema.apply(self._follows, SCHEMA)
        # One edge per pair is enforced in the shard key's order (followee first), so the
        # collection can be sharded on it; earlier versions enforced it follower first. Each
        # old index has a new one's keys, so it goes just before that one is made: the old
        # unique index stands until the new one does.
        replace_index(
            self._follows, "followee_follower", FOLLOWEE_FIRST, "followee_follower_unique", True
        )
        replace_index(
            self._follows, "follower_followee_unique", FOLLOWER_FIRST, "follower_followee"
        )
        self._follows.create_index(
            [("followee_id", ASCENDING), ("_id", DESCENDING)], name="followee_newest"
        )
        self._follows.create_index(
            [("follower_id", ASCENDING), ("_id", DESCENDING)], name="follower_newest"
        )

    def add(self, follower_id: int, followee_id: int, session=None) -> bool:
        """Create the edge; True only if it did not exist yet."""
        edge = {"follower_id": follower_id, "followee_id": followee_id}
        return insert_if_absent(self._follows, edge, {"created_at": _now()}, session)

    def remove(self, follower_id: int, followee_id: int, session=None) -> bool:
        """Delete the edge; True only if there was one."""
        edge = {"follower_id": follower_id, "followee_id": followee_id}
        return self._follows.delete_one(edge, session=session).deleted_count == 1

    def exists(self, follower_id: int, followee_id: int) -> bool:
        edge = {"follower_id": follower_id, "followee_id": followee_id}
        return self._follows.find_one(edge, projection={"_id": 1}) is not None

    def edges_with(self, user_id: int, other_ids: list[int]) -> tuple[dict[int, dict], set[int]]:
        """The user's edges to any of ``other_ids`` by followee (``reblogs`` False where the
        user hides the followee's boosts), and which of them follow the user: a query on
        each of the two indexes."""
        among = {"$in": other_ids}
        out = self._follows.find(
            {"follower_id": user_id, "followee_id": among},
            projection={"_id": 0, "followee_id": 1, "reblogs": 1},
        )
        into = self._follows.find(
            {"followee_id": user_id, "follower_id": among}, projection={"_id": 0, "follower_id": 1}
        )
        edges = {edge.pop("followee_id"): edge for edge in out}
        return edges, {edge["follower_id"] for edge in into}

    def set_reblogs(self, follower_id: int, followee_id: int, shown: bool) -> bool:
        """Show or hide the followee's boosts to the follower; True if that changed."""
        edge = {"follower_id": follower_id, "followee_id": followee_id}
        change = {"$unset": {"reblogs": ""}} if shown else {"$set": {"reblogs": False}}
        return self._follows.update_one(edge, change).modified_count == 1

    def boosts_hidden(self, follower_id: int) -> list[int]:
        """The followees whose boosts the follower hides (a scan of their follows)."""
        edges = self._follows.find(
            {"follower_id": follower_id, "reblogs": False}, projection={"followee_id": 1}
        )
        return [edge["followee_id"] for edge in edges]

    def follower_ids(
        self, followee_id: int, after: int | None = None, limit: int = 1000
    ) -> list[int]:
        """Followers of ``followee_id`` with ids above ``after``, ascending."""
        return ids_after(self._follows, {"followee_id": followee_id}, "follower_id", after, limit)

    def follower_chunks(self, followee_id: int, size: int | None = None) -> Iterator[list[int]]:
        """Every follower of ``followee_id``, ascending, in lists of ``size`` (by default
        ``fanout_chunk_size``: one delivery task each), from one query."""
        query = {"followee_id": followee_id}
        return id_chunks(self._follows, query, "follower_id", size or self.chunk_size)

    def follower_pages(self, followee_id: int) -> Iterator[list[int]]:
        """``follower_chunks`` of ``large_chunk_size``, a query each (``id_pages``): a
        delivery's planner sends the first chunk before the rest is read."""
        query = {"followee_id": followee_id}
        return id_pages(self._follows, query, "follower_id", self.large_chunk_size)

    def followee_ids(
        self, follower_id: int, after: int | None = None, limit: int | None = None
    ) -> list[int]:
        """Accounts ``follower_id`` follows with ids above ``after``, ascending (all by default)."""
        return ids_after(self._follows, {"follower_id": follower_id}, "followee_id", after, limit)

    def followee_ids_of(self, follower_ids: list[int]) -> dict[int, list[int]]:
        """``followee_ids`` of each of ``follower_ids``, in one query (the forecast's sample)."""
        return ids_by(self._follows, "follower_id", follower_ids, "followee_id")

    def follower_edges(
        self,
        followee_id: int,
        limit: int,
        before: str | None = None,
        after: str | None = None,
        oldest_first: bool = False,
    ) -> list[Edge]:
        """Edges to ``followee_id`` with cursors between ``after`` and ``before`` (both
        excluded), newest follow first (or ``oldest_first``), ``limit`` at most."""
        return self._edges(
            "followee_id", followee_id, "follower_id", limit, before, after, oldest_first
        )

    def followee_edges(
        self,
        follower_id: int,
        limit: int,
        before: str | None = None,
        after: str | None = None,
        oldest_first: bool = False,
    ) -> list[Edge]:
        """Edges from ``follower_id``, as ``follower_edges`` gives them."""
        return self._edges(
            "follower_id", follower_id, "followee_id", limit, before, after, oldest_first
        )

    def _edges(self, key, value, other, limit, before, after, oldest_first) -> list[Edge]:
        query = {key: value}
        edges = edges_by_id(self._follows, query, other, limit, before, after, oldest_first)
        return [Edge(*edge) for edge in edges]

    def count_followers(self, user_id: int) -> int:
        return self._follows.count_documents({"followee_id": user_id})

    def count_followees(self, user_id: int) -> int:
        return self._follows.count_documents({"follower_id": user_id})

    def add_many(self, edges: list[tuple[int, int]], on_batch=None) -> None:
        """Create new ``(follower_id, followee_id)`` edges in unordered bulk writes.

        The edges must not exist yet: a duplicate raises ``DuplicateKeyError``.
        """
        now = _now()
        documents = [
            {"follower_id": follower, "followee_id": followee, "created_at": now}
            for follower, followee in edges
        ]
        insert_unordered(self._follows, documents, on_batch=on_batch)


def _now() -> dt.datetime:
    """Now in UTC at MongoDB's millisecond precision."""
    now = dt.datetime.now(dt.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
