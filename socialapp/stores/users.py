"""The ``users`` collection: accounts, roles, counters and fan-out overrides.

A handle is unique through its claim in ``handles`` (``HandleStore``), made before the
account and released if the account is not made: no unique index on ``handle``, so that
``users`` can be sharded on its hashed ``_id``."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError

from socialapp.config import Settings
from socialapp.domain.ids import id_datetime
from socialapp.errors import Conflict
from socialapp.stores import schema
from socialapp.stores.handles import HandleStore
from socialapp.stores.mongo import collection, insert_unordered, replace_index
from socialapp.stores.unavailable import MONGODB, translates

BACKFILL_BATCH = 1000  # accounts whose handles one round trip claims (the upgrade)
HANDLE_PREFIX = re.compile(r"[a-z0-9_]{1,30}")  # what a handle search may hold
COUNTERS = ("followers_count", "following_count", "post_count")
AUTHOR_FIELDS = (
    "followers_count",
    "post_count",
    "fanout_override",
    "fanout_leaning",
    "fanout_leaning_at",
)
# Counters have no lower bound: on a standalone server a crash can skew one (see the docs).
SCHEMA = schema.document(
    {
        "_id": schema.ID,
        "handle": {**schema.text(30, min_length=3), "not": {"pattern": "[^a-z0-9_]"}},
        "display_name": schema.text(64),
        "name_key": schema.text(64, min_length=0),  # display_name lower-cased, for search
        "password_hash": schema.text(512),
        "role": {"enum": ["user", "operator"]},
        **dict.fromkeys(COUNTERS, schema.INT),
        "fanout_override": {"enum": ["auto", "push", "pull"]},
        "fanout_leaning": {"enum": ["push", "pull"]},  # adaptive mode's decision, if any
        "fanout_leaning_at": schema.DATE,
        "created_at": schema.DATE,
        "last_status_at": schema.DATE,  # when the user last posted
        "console_signed_out_at": schema.DATE,  # console sessions signed in before it are over
    },
    optional=(
        "fanout_leaning",
        "fanout_leaning_at",
        "name_key",
        "last_status_at",
        "console_signed_out_at",
    ),
)


def name_key(name: str) -> str:
    """What a name is searched by: lower-cased, at most 64 characters."""
    return name.lower()[:64]


@translates(MONGODB)
class UserStore:
    def __init__(self, db, settings: Settings, handles: HandleStore) -> None:
        self._users = collection(db, "users", settings)
        self._handles = handles

    def ensure_indexes(self) -> None:
        """Validator and indexes; and the upgrade of a database from before handles were
        claimed (it still has the unique index ``handle_unique``): every account's handle
        claimed in ``handles`` (``backfill_handles``), then that index replaced by a plain
        one, so uniqueness never lapses. Stopped in between, the next start does it again."""
        schema.apply(self._users, SCHEMA)
        self._handles.ensure_indexes()
        if "handle_unique" in self._users.index_information():  # not upgraded yet
            self.backfill_handles()
        replace_index(self._users, "handle_unique", [("handle", ASCENDING)], "handle")
        self._users.create_index(
            [("fanout_leaning", ASCENDING)], sparse=True, name="fanout_leaning_sparse"
        )
        self._users.create_index([("name_key", ASCENDING)], sparse=True, name="name_key_sparse")

    def create(
        self, user_id: int, handle: str, password_hash: str, display_name: str, role: str = "user"
    ) -> dict:
        user = {
            "_id": user_id,
            "handle": handle,
            "display_name": display_name,
            "name_key": name_key(display_name),
            "password_hash": password_hash,
            "role": role,
            "followers_count": 0,
            "following_count": 0,
            "post_count": 0,
            "fanout_override": "auto",
            "created_at": id_datetime(user_id),
        }
        taken = Conflict(f"handle {handle!r} is already taken")
        self._claim(handle, user_id, taken)
        try:
            earlier = self.by_handle(handle)
            if earlier is not None:  # an account from before claims, not backfilled yet
                self._handles.move(handle, user_id, earlier["_id"])
                raise taken
            self._users.insert_one(user)
        except BaseException:
            self._handles.release(handle, user_id)
            raise
        if not self._handles.holds(handle, user_id):  # taken over as abandoned: see _claim
            self._users.delete_one({"_id": user_id})
            raise taken
        return user

    def _claim(self, handle: str, user_id: int, taken: Conflict) -> None:
        """Claim ``handle`` for the account about to be made, or raise ``taken``. A claim
        older than ``CLAIM_GRACE`` whose account does not exist was a sign-up that died
        before making it: taken over (should that sign-up still finish, it finds the claim
        gone and removes its account)."""
        holder = self._handles.claim(handle, user_id)
        if holder is None:
            return
        if not (self._handles.stale(holder) and self.get(holder["user_id"]) is None):
            raise taken
        if not self._handles.move(handle, holder["user_id"], user_id):
            raise taken

    def backfill_handles(self) -> int:
        """Claim the handle of every account that has none claimed (an upgrade; safe to run
        again, and while others sign up); how many, by ascending id in batches."""
        claimed, after = 0, 0
        while True:
            batch = list(
                self._users.find(
                    {"_id": {"$gt": after}},
                    projection={"handle": 1},
                    sort=[("_id", ASCENDING)],
                    limit=BACKFILL_BATCH,
                )
            )
            claimed += self._handles.backfill([(u["handle"], u["_id"]) for u in batch])
            if len(batch) < BACKFILL_BATCH:
                return claimed
            after = batch[-1]["_id"]

    def get(self, user_id: int, session=None) -> dict | None:
        return self._users.find_one({"_id": user_id}, session=session)

    def get_many(self, user_ids: list[int]) -> list[dict]:
        """The users with these ids, in the order given, skipping unknown ones."""
        found = {u["_id"]: u for u in self._users.find({"_id": {"$in": list(user_ids)}})}
        return [found[i] for i in user_ids if i in found]

    def by_handle(self, handle: str) -> dict | None:
        return self._users.find_one({"handle": handle})

    def add_to_counter(self, user_id: int, counter: str, delta: int, session=None) -> dict | None:
        """Add ``delta`` to one counter atomically; the updated user, or None if unknown. A
        post counted also dates the user's last status (``last_status_at``)."""
        assert counter in COUNTERS
        update = {"$inc": {counter: delta}}
        if counter == "post_count" and delta > 0:
            update["$set"] = {"last_status_at": dt.datetime.now(dt.UTC)}
        return self._users.find_one_and_update(
            {"_id": user_id},
            update,
            return_document=ReturnDocument.AFTER,
            session=session,
        )

    def set_fanout_override(self, user_id: int, strategy: str) -> dict | None:
        return self._users.find_one_and_update(
            {"_id": user_id},
            {"$set": {"fanout_override": strategy}},
            return_document=ReturnDocument.AFTER,
        )

    def set_fanout_leaning(self, user_id: int, leaning: str, at: dt.datetime) -> dict | None:
        """Record adaptive mode's decision for an author; the user as they were before it
        (what it replaced, read in the same atomic write), or None if unknown."""
        return self._users.find_one_and_update(
            {"_id": user_id},
            {"$set": {"fanout_leaning": leaning, "fanout_leaning_at": at}},
            return_document=ReturnDocument.BEFORE,
        )

    def sign_out_of_console(self, user_id: int, at: dt.datetime) -> None:
        """End every console session the operator signed in to before ``at``."""
        self._users.update_one({"_id": user_id}, {"$set": {"console_signed_out_at": at}})

    def count_leanings(self) -> dict[str, int]:
        """How many authors adaptive mode has decided to push and to pull:
        ``{"pushed": n, "pulled": m}``."""
        return {
            f"{leaning}ed": self._users.count_documents({"fanout_leaning": leaning})
            for leaning in ("push", "pull")
        }

    def count(self) -> int:
        """Accounts, from the collection's metadata (a forecast's readers): counting them
        would walk every document."""
        return self._users.estimated_document_count()

    def overridden(self, limit: int) -> list[dict]:
        """Authors with an operator's override (``push`` or ``pull``), by handle."""
        query = {"fanout_override": {"$in": ["push", "pull"]}}
        return list(self._users.find(query, sort=[("handle", ASCENDING)], limit=limit))

    def with_handle_prefix(self, prefix: str, limit: int) -> list[dict]:
        """Accounts whose handle starts with ``prefix`` (a valid handle's characters), by
        handle."""
        if not HANDLE_PREFIX.fullmatch(prefix):
            raise ValueError(f"not the start of a handle: {prefix!r}")
        query = {"handle": {"$regex": f"^{prefix}"}}
        return list(self._users.find(query, sort=[("handle", ASCENDING)], limit=limit))

    def search(self, prefix: str, limit: int) -> list[dict]:
        """Accounts whose handle or display name starts with ``prefix`` (any case), by
        handle: an anchored match on the ``handle`` index or ``name_key_sparse``."""
        pattern = {"$regex": "^" + re.escape(name_key(prefix))}
        query = {"$or": [{"handle": pattern}, {"name_key": pattern}]}
        return list(self._users.find(query, sort=[("handle", ASCENDING)], limit=limit))

    def newest_leanings(self, limit: int) -> list[dict]:
        """The authors adaptive mode decided most recently, newest decision first."""
        query = {"fanout_leaning": {"$in": ["push", "pull"]}}
        sort = [("fanout_leaning_at", DESCENDING)]
        return list(self._users.find(query, sort=sort, limit=limit))

    def authors_with_followers(self, batch: int = 1000, after: int = 0) -> Iterator[dict]:
        """Every user with followers or a fan-out override (reconciliation walks them),
        by ascending id from ``after`` on."""
        while True:
            users = list(
                self._users.find(
                    {
                        "_id": {"$gt": after},
                        "$or": [
                            {"followers_count": {"$gt": 0}},
                            {"fanout_override": {"$in": ["push", "pull"]}},
                        ],
                    },
                    projection=dict.fromkeys(AUTHOR_FIELDS, 1),
                    sort=[("_id", ASCENDING)],
                    limit=batch,
                )
            )
            yield from users
            if len(users) < batch:
                return
            after = users[-1]["_id"]

    def create_many(self, users: list[dict], on_batch=None) -> None:
        """Insert new accounts in unordered bulk writes, counters included.

        Each of ``users`` carries ``_id``, ``handle`` and ``password_hash``, and may carry
        ``display_name``, ``role`` and the counters; a taken handle raises ``Conflict``.
        """
        documents = [
            {
                "display_name": user["handle"],
                "role": "user",
                **dict.fromkeys(COUNTERS, 0),
                "fanout_override": "auto",
                **user,
                "name_key": name_key(user.get("display_name", user["handle"])),
                "created_at": id_datetime(user["_id"]),
            }
            for user in users
        ]
        claims = [(user["handle"], user["_id"]) for user in documents]
        try:
            self._handles.claim_many(claims)
        except DuplicateKeyError as error:
            raise Conflict("a handle is already taken") from error
        try:
            insert_unordered(self._users, documents, on_batch=on_batch)
        except BaseException:  # the claims of the accounts not made are released
            made = {user["_id"] for user in self.get_many([user_id for _, user_id in claims])}
            self._handles.release_many([c for c in claims if c[1] not in made])
            raise

    def first_handle_like(self, pattern: str) -> str | None:
        """A handle matching the anchored regular expression ``pattern``, if any."""
        user = self._users.find_one(
            {"handle": {"$regex": pattern}}, projection={"handle": 1, "_id": 0}
        )
        return user["handle"] if user else None
