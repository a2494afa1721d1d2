"""The ``handles`` collection: one claim per handle, ``_id`` the handle itself, what keeps
handles unique.

A unique index on ``users.handle`` would stop ``users`` from being sharded on its hashed
``_id`` (MongoDB enforces a unique index on a sharded collection only when it starts with
the shard key), while ``_id`` is unique however ``handles`` is sharded. So a sign-up claims
its handle here first, and makes the account after (``UserStore.create``); a claim whose
account could not be made is released, and one left by a process that died in between is
taken over once it is ``CLAIM_GRACE`` old and no account holds its id.

Handles are already in one case (``domain.handles``: a-z, 0-9 and _), so the handle is the
key as it is. Accounts never change their handle (neither API offers it): a claim is never
moved but to the account that holds it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from pymongo.errors import DuplicateKeyError

from socialapp.config import Settings
from socialapp.stores import schema
from socialapp.stores.mongo import collection, insert_if_absent, insert_unordered
from socialapp.stores.unavailable import MONGODB, translates

CLAIM_GRACE = dt.timedelta(minutes=1)  # far longer than a sign-up takes between its writes
SCHEMA = schema.document(
    {
        "_id": {**schema.text(30, min_length=3), "not": {"pattern": "[^a-z0-9_]"}},
        "user_id": schema.ID,
        "claimed_at": schema.DATE,
    }
)


@translates(MONGODB)
class HandleStore:
    def __init__(self, db, settings: Settings, clock=lambda: dt.datetime.now(dt.UTC)) -> None:
        self._handles = collection(db, "handles", settings)
        self._clock = clock

    def ensure_indexes(self) -> None:
        schema.apply(self._handles, SCHEMA)  # ``_id_`` is the only index

    def claim(self, handle: str, user_id: int) -> dict | None:
        """Claim ``handle`` for ``user_id``: None if it is theirs now, else the claim that
        holds it (``user_id``, ``claimed_at``)."""
        try:
            self._handles.insert_one(
                {"_id": handle, "user_id": user_id, "claimed_at": self._clock()}
            )
        except DuplicateKeyError:
            holder = self._handles.find_one({"_id": handle})
            if holder is None:  # released in between: try once more
                return self.claim(handle, user_id)
            return holder
        return None

    def stale(self, claim: dict) -> bool:
        """Whether ``claim`` is old enough to be an abandoned sign-up's, if its account is
        missing."""
        claimed_at = claim["claimed_at"]
        if claimed_at.tzinfo is None:  # the embedded store reads dates back naive, in UTC
            claimed_at = claimed_at.replace(tzinfo=dt.UTC)
        return self._clock() - claimed_at > CLAIM_GRACE

    def move(self, handle: str, holder: int, user_id: int) -> bool:
        """Give ``handle``'s claim to ``user_id`` if ``holder`` still holds it; whether it
        moved."""
        moved = self._handles.update_one(
            {"_id": handle, "user_id": holder},
            {"$set": {"user_id": user_id, "claimed_at": self._clock()}},
        )
        return moved.modified_count == 1

    def holds(self, handle: str, user_id: int) -> bool:
        claim = self._handles.find_one({"_id": handle}, projection={"user_id": 1})
        return claim is not None and claim["user_id"] == user_id

    def release(self, handle: str, user_id: int) -> None:
        """Drop ``user_id``'s claim on ``handle`` (nothing if another holds it)."""
        self._handles.delete_one({"_id": handle, "user_id": user_id})

    def claim_many(self, claims: Iterable[tuple[str, int]], on_batch=None) -> None:
        """Claim new handles in bulk, ``(handle, user_id)`` each; a taken one raises
        ``DuplicateKeyError`` after every claim of these is released."""
        claims = list(claims)
        now = self._clock()
        documents = [{"_id": h, "user_id": u, "claimed_at": now} for h, u in claims]
        try:
            insert_unordered(self._handles, documents, on_batch=on_batch)
        except DuplicateKeyError:
            self.release_many(claims)
            raise

    def release_many(self, claims: Iterable[tuple[str, int]]) -> None:
        """Drop these claims, each only where its own account holds it."""
        claims = list(claims)
        if claims:
            handles, user_ids = zip(*claims, strict=True)
            self._handles.delete_many(
                {"_id": {"$in": list(handles)}, "user_id": {"$in": list(user_ids)}}
            )

    def backfill(self, claims: list[tuple[str, int]]) -> int:
        """Claim for existing accounts, ``(handle, user_id)`` each, the handles not claimed
        yet (an upgrade from before handles were kept); how many. Safe to run again, and
        beside sign-ups: a handle claimed meanwhile is left to its claimant (a sign-up
        that then finds the account gives it the claim, see ``UserStore.create``)."""
        if not claims:
            return 0
        found = self._handles.find(
            {"_id": {"$in": [handle for handle, _ in claims]}}, projection={"_id": 1}
        )
        held = {claim["_id"] for claim in found}
        missing = [(h, u) for h, u in claims if h not in held]
        now = self._clock()
        try:
            insert_unordered(
                self._handles, [{"_id": h, "user_id": u, "claimed_at": now} for h, u in missing]
            )
        except DuplicateKeyError:  # a sign-up or another process claimed one meanwhile
            for handle, user_id in missing:
                insert_if_absent(
                    self._handles, {"_id": handle}, {"user_id": user_id, "claimed_at": now}
                )
        return len(missing)
