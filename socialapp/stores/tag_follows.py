"""The ``tag_follows`` collection: one document per account -> hashtag it follows; and
``tags``: each followed or delivered tag's number (``TagIds``).

A tag is its normal form (``socialapp.domain.tags``). Indexed from both ends: by account
(whether it follows a tag, its followed tags newest first, how many) and by tag (who
follows it: what delivers a tagged post to homes, and the tags search finds by prefix).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import NamedTuple

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError

from socialapp.config import Settings
from socialapp.domain import tags
from socialapp.errors import Unavailable
from socialapp.stores import schema
from socialapp.stores.mongo import (
    collection,
    edges_by_id,
    id_chunks,
    ids_after,
    ids_by,
    insert_if_absent,
    replace_index,
)
from socialapp.stores.unavailable import MONGODB, translates

SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "account_id": schema.ID,
        "tag": schema.text(tags.MAX_LENGTH),
        "created_at": schema.DATE,
    }
)
TAG_FIRST = [("tag", ASCENDING), ("account_id", ASCENDING)]
ACCOUNT_FIRST = [("account_id", ASCENDING), ("tag", ASCENDING)]
LAST_CHARACTER = "\U0010ffff"  # no tag name holds it: every name with a prefix sorts below
TAG_SCHEMA = schema.document({"_id": schema.text(tags.MAX_LENGTH), "id": schema.ID})
# A number taken by another tag's first use meanwhile: try the next; after this many, the
# caller retries later (``Unavailable``: a 503 with Retry-After, or the task's retry).
ALLOCATE_ATTEMPTS = 8
CACHED_TAGS = 100_000  # names and numbers a process keeps (they never change)


class TagEdge(NamedTuple):
    """A followed tag and its follow's cursor (its ``_id`` in hex: later follows are larger)."""

    cursor: str
    tag: str


@translates(MONGODB)
class TagIds:
    """Each tag's number, which a tagged set's entries carry in place of its name (a fixed
    width): a ``tags`` document ``{_id: name, id}``, made at the tag's first use and never
    changed, so each process keeps the numbers it has seen without asking again. Two first
    uses at once agree: the name is the document's ``_id`` (one upsert wins, the other reads
    its number), and ``tag_id_unique`` keeps two names from taking one number (the loser
    tries the next)."""

    def __init__(self, db, settings: Settings) -> None:
        self._tags = collection(db, "tags", settings)
        self._by_name: dict[str, int] = {}
        self._by_id: dict[int, str] = {}

    def ensure_indexes(self) -> None:
        schema.apply(self._tags, TAG_SCHEMA)
        self._tags.create_index([("id", ASCENDING)], unique=True, name="tag_id_unique")

    def ids(self, names: list[str]) -> dict[str, int]:
        """Each of ``names``' number, given one at its first use."""
        missing = [name for name in names if name not in self._by_name]
        if missing:
            for found in self._tags.find({"_id": {"$in": missing}}):
                self._keep(found["_id"], found["id"])
            for name in missing:
                if name not in self._by_name:
                    self._keep(name, self._allocate(name))
        return {name: self._by_name[name] for name in names}

    def names(self, ids: list[int]) -> dict[int, str]:
        """The names of the tags numbered ``ids`` (each given by ``ids``)."""
        missing = [tag_id for tag_id in ids if tag_id not in self._by_id]
        if missing:
            for found in self._tags.find({"id": {"$in": missing}}):
                self._keep(found["_id"], found["id"])
        return {tag_id: self._by_id[tag_id] for tag_id in ids if tag_id in self._by_id}

    def _allocate(self, name: str) -> int:
        """The next number after the highest given, unless a use of ``name`` meanwhile gave
        it one: whichever upsert made the document, every caller reads its number."""
        for _ in range(ALLOCATE_ATTEMPTS):
            top = self._tags.find_one({}, projection={"id": 1}, sort=[("id", DESCENDING)])
            candidate = (top["id"] if top else 0) + 1
            try:
                found = self._tags.find_one_and_update(
                    {"_id": name},
                    {"$setOnInsert": {"id": candidate}},
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except DuplicateKeyError:  # the number went to another tag, or the name raced
                continue
            return found["id"]
        raise Unavailable(f"no number for tag {name!r} after {ALLOCATE_ATTEMPTS} attempts")

    def _keep(self, name: str, tag_id: int) -> None:
        if len(self._by_name) >= CACHED_TAGS:
            self._by_name.clear()
            self._by_id.clear()
        self._by_name[name], self._by_id[tag_id] = tag_id, name


@translates(MONGODB)
class TagFollowStore:
    def __init__(self, db, settings: Settings) -> None:
        self._follows = collection(db, "tag_follows", settings)
        self.ids = TagIds(db, settings)

    def ensure_indexes(self) -> None:
        self.ids.ensure_indexes()
        schema.apply(self._follows, SCHEMA)
        # One follow per account and tag is enforced in the shard key's order (tag first), so
        # the collection can be sharded on it; earlier versions enforced it account first.
        # Each old index has a new one's keys, so it goes just before that one is made: the
        # old unique index stands until the new one does (as ``FollowStore``'s).
        replace_index(self._follows, "tag_account", TAG_FIRST, "tag_account_unique", True)
        replace_index(self._follows, "account_tag_unique", ACCOUNT_FIRST, "account_tag")
        self._follows.create_index(
            [("account_id", ASCENDING), ("_id", DESCENDING)], name="account_newest"
        )

    def follow(self, account_id: int, tag: str) -> bool:
        """Record the follow; True only if it is new."""
        key = {"account_id": account_id, "tag": tag}
        return insert_if_absent(self._follows, key, {"created_at": _now()})

    def unfollow(self, account_id: int, tag: str) -> bool:
        return self._follows.delete_one({"account_id": account_id, "tag": tag}).deleted_count == 1

    def count_followed(self, account_id: int) -> int:
        return self._follows.count_documents({"account_id": account_id})

    def total(self) -> int:
        """Tag follows, from the collection's metadata: counting them would walk them all."""
        return self._follows.estimated_document_count()

    def following_among(self, account_id: int, names: list[str]) -> set[str]:
        """Which of ``names`` the account follows: one query."""
        query = {"account_id": account_id, "tag": {"$in": names}}
        found = self._follows.find(query, projection={"tag": 1, "_id": 0})
        return {follow["tag"] for follow in found}

    def followed(self, account_id: int) -> list[str]:
        """Every tag the account follows, by name."""
        return ids_after(self._follows, {"account_id": account_id}, "tag", None, None)

    def followed_by(self, account_ids: list[int]) -> dict[int, list[str]]:
        """``followed`` of each of ``account_ids``, in one query (the forecast's sample)."""
        return ids_by(self._follows, "account_id", account_ids, "tag")

    def followed_edges(
        self,
        account_id: int,
        limit: int,
        before: str | None = None,
        after: str | None = None,
        oldest_first: bool = False,
    ) -> list[TagEdge]:
        """The account's follows with cursors between ``after`` and ``before`` (both
        excluded), newest first (or ``oldest_first``), ``limit`` at most."""
        query = {"account_id": account_id}
        edges = edges_by_id(self._follows, query, "tag", limit, before, after, oldest_first)
        return [TagEdge(*edge) for edge in edges]

    def followers(self, tag: str, after: int | None = None, limit: int = 0) -> list[int]:
        """The accounts following ``tag``, ascending above ``after`` (``limit`` 0: all)."""
        return ids_after(self._follows, {"tag": tag}, "account_id", after, limit)

    def count_followers(self, tag: str) -> int:
        """How many accounts follow ``tag`` (the ``tag_account_unique`` index's keys only): what
        decides whether its posts are pushed or pulled."""
        return self._follows.count_documents({"tag": tag})

    def follower_chunks(self, tag: str, size: int) -> Iterator[list[int]]:
        """Every follower of ``tag``, ascending, in lists of ``size`` (one delivery task
        each), from one query (covered by ``tag_account_unique``)."""
        return id_chunks(self._follows, {"tag": tag}, "account_id", size)

    def tags_followed(self, batch: int = 1000) -> Iterator[str]:
        """Every tag anyone follows, by name: ``batch`` index seeks at a time."""
        after = ""
        while names := self.followed_with_prefix("", batch, after):
            yield from names
            after = names[-1]

    def followed_with_prefix(self, prefix: str, limit: int, after: str = "") -> list[str]:
        """The first ``limit`` tags anyone follows that begin with ``prefix``, by name: one
        index seek each (walking on past a tag's other followers), never a scan of them."""
        found: list[str] = []
        low: dict = {"$gt": after} if after else {"$gte": prefix}
        while len(found) < limit:
            query = {"tag": {**low, "$lt": prefix + LAST_CHARACTER}}
            first = self._follows.find_one(
                query, projection={"tag": 1, "_id": 0}, sort=[("tag", ASCENDING)]
            )
            if first is None:
                break
            found.append(first["tag"])
            low = {"$gt": first["tag"]}
        return found


def _now() -> dt.datetime:
    now = dt.datetime.now(dt.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
