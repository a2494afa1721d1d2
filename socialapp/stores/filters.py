"""The ``blocks`` and ``mutes`` collections: one document per account -> target edge.

A block hides each account from the other; a mute hides the target from the account, until
``expires_at`` if it has one (a TTL index lets a real MongoDB delete it then; every read
checks the time too, since the embedded store keeps it). Both are indexed in both
directions: the target's side answers "who blocks me", which a block hides as well.
"""

from __future__ import annotations

import datetime as dt
import math

from pymongo import ASCENDING

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.mongo import collection, ids_after
from socialapp.stores.unavailable import MONGODB, translates

BLOCK_SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "account_id": schema.ID,
        "target_id": schema.ID,
        "created_at": schema.DATE,
    }
)
MUTE_SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "account_id": schema.ID,
        "target_id": schema.ID,
        "created_at": schema.DATE,
        "expires_at": schema.DATE,
        "notifications": schema.BOOL,
    },
    optional=("expires_at",),
)


@translates(MONGODB)
class FilterStore:
    def __init__(self, db, settings: Settings) -> None:
        self._blocks = collection(db, "blocks", settings)
        self._mutes = collection(db, "mutes", settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._blocks, BLOCK_SCHEMA)
        schema.apply(self._mutes, MUTE_SCHEMA)
        for edges in (self._blocks, self._mutes):
            edges.create_index(
                [("account_id", ASCENDING), ("target_id", ASCENDING)],
                unique=True,
                name="account_target_unique",
            )
            edges.create_index(
                [("target_id", ASCENDING), ("account_id", ASCENDING)], name="target_account"
            )
        self._mutes.create_index("expires_at", expireAfterSeconds=0, name="expires_at_ttl")

    # Blocks ---------------------------------------------------------------------------------
    def block(self, account_id: int, target_id: int) -> bool:
        """Record the block; True only if it is new."""
        edge = {"account_id": account_id, "target_id": target_id}
        result = self._blocks.update_one(
            edge, {"$setOnInsert": {"created_at": _now()}}, upsert=True
        )
        return result.upserted_id is not None

    def unblock(self, account_id: int, target_id: int) -> bool:
        edge = {"account_id": account_id, "target_id": target_id}
        return self._blocks.delete_one(edge).deleted_count == 1

    def blocks_either(self, account_id: int, other_id: int, session=None) -> bool:
        """Whether either account blocks the other: one lookup of the unique index each way
        (an ``$or`` of the two is not served by the embedded store's indexes)."""
        either = ((account_id, other_id), (other_id, account_id))
        return any(
            self._blocks.find_one(
                {"account_id": one, "target_id": other}, projection={"_id": 1}, session=session
            )
            is not None
            for one, other in either
        )

    def blocks_with(self, account_id: int, other_ids: list[int]) -> tuple[set[int], set[int]]:
        """Which of ``other_ids`` the account blocks, and which block it: a query on each
        of the two indexes."""
        among = {"$in": other_ids}
        blocking = self._blocks.find({"account_id": account_id, "target_id": among})
        return {e["target_id"] for e in blocking}, self.blockers_among(account_id, other_ids)

    def blockers_among(self, target_id: int, account_ids: list[int]) -> set[int]:
        """Which of ``account_ids`` block ``target_id``: one query."""
        query = {"target_id": target_id, "account_id": {"$in": account_ids}}
        return {e["account_id"] for e in self._blocks.find(query, projection={"account_id": 1})}

    def blocked_ids(self, account_id: int, after: int | None = None, limit: int = 0):
        """The accounts ``account_id`` blocks, ascending, above ``after``."""
        return ids_after(self._blocks, {"account_id": account_id}, "target_id", after, limit)

    def blocker_ids(self, target_id: int) -> list[int]:
        """The accounts that block ``target_id``."""
        edges = self._blocks.find({"target_id": target_id}, projection={"account_id": 1})
        return sorted(edge["account_id"] for edge in edges)

    # Mutes ----------------------------------------------------------------------------------
    def mute(
        self,
        account_id: int,
        target_id: int,
        expires_at: dt.datetime | None,
        notifications: bool = True,
    ) -> None:
        """Mute the target (again: the new duration and notification choice replace the
        old ones)."""
        edge = {"account_id": account_id, "target_id": target_id}
        fields = {"notifications": notifications}
        change = {"$set": fields, "$setOnInsert": {"created_at": _now()}}
        if expires_at is None:
            change["$unset"] = {"expires_at": ""}
        else:
            fields["expires_at"] = _millis(expires_at)
        self._mutes.update_one(edge, change, upsert=True)

    def unmute(self, account_id: int, target_id: int) -> bool:
        edge = {"account_id": account_id, "target_id": target_id}
        return self._mutes.delete_one(edge).deleted_count == 1

    def mutes(self, account_id: int, target_ids: list[int], now: dt.datetime) -> dict[int, dict]:
        """The account's mutes in force of these targets, by target."""
        query = {"account_id": account_id, "target_id": {"$in": target_ids}, **_live(now)}
        return {mute["target_id"]: mute for mute in self._mutes.find(query)}

    def muted(self, account_id: int, now: dt.datetime, after: int | None = None, limit=0):
        """The account's mutes in force, by target ascending above ``after``."""
        query = {"account_id": account_id, **_live(now)}
        if after is not None:
            query["target_id"] = {"$gt": after}
        return list(self._mutes.find(query, sort=[("target_id", ASCENDING)], limit=limit))

    def hiding(self, account_id: int, now: dt.datetime) -> dict[int, float]:
        """Whom the account does not see, each until when (unix time; ``inf``: until
        undone): whom it blocks, who blocks it, whom it mutes."""
        until = dict.fromkeys(self.blocked_ids(account_id), math.inf)
        until.update(dict.fromkeys(self.blocker_ids(account_id), math.inf))
        for mute in self.muted(account_id, now):
            end = mute["expires_at"].timestamp() if "expires_at" in mute else math.inf
            until[mute["target_id"]] = max(until.get(mute["target_id"], 0.0), end)
        return until


def _live(now: dt.datetime) -> dict:
    """Mutes without an end, or ending after ``now``."""
    return {"$or": [{"expires_at": None}, {"expires_at": {"$gt": now}}]}  # None: missing


def _millis(moment: dt.datetime) -> dt.datetime:
    """``moment`` at MongoDB's millisecond precision."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _now() -> dt.datetime:
    return _millis(dt.datetime.now(dt.UTC))
