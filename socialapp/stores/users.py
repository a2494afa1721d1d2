"""The ``users`` collection: accounts, roles, counters and fan-out overrides."""

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
from socialapp.stores.mongo import collection, insert_unordered
from socialapp.stores.unavailable import MONGODB, translates

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
    def __init__(self, db, settings: Settings) -> None:
        self._users = collection(db, "users", settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._users, SCHEMA)
        self._users.create_index([("handle", ASCENDING)], unique=True, name="handle_unique")
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
        try:
            self._users.insert_one(user)
        except DuplicateKeyError as error:
            # A server's message names the index; mongomock's does not, so look the handle up.
            if self.by_handle(handle) is not None:
                raise Conflict(f"handle {handle!r} is already taken") from error
            raise
        return user

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
        handle: an anchored match on ``handle_unique`` or ``name_key_sparse``."""
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
        try:
            insert_unordered(self._users, documents, on_batch=on_batch)
        except DuplicateKeyError as error:
            raise Conflict("a handle is already taken") from error

    def first_handle_like(self, pattern: str) -> str | None:
        """A handle matching the anchored regular expression ``pattern``, if any."""
        user = self._users.find_one(
            {"handle": {"$regex": pattern}}, projection={"handle": 1, "_id": 0}
        )
        return user["handle"] if user else None
