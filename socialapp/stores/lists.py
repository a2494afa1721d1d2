"""The ``lists`` and ``list_members`` collections: an account's lists, and who is on each.

A list counts its members (``members``); every change of members moves the count in the
same transaction, under a bound it checks (``find_one_and_update`` on the list), so two
requests adding at once write the one list document and are serialised by it. A member names
the list's owner too, so an unfollow finds the follower's lists holding the account by an
index, and delivery finds the lists that hold an author by another, from its keys alone
(``account_owner_list``, which the forecast counts an author's memberships on too). The
members of an account's exclusive lists, whose posts leave its home, are found by the
owner's lists and then the members of those (both by index).
"""

from __future__ import annotations

from pymongo import ASCENDING, DESCENDING, ReturnDocument

from socialapp.config import Settings
from socialapp.domain import lists
from socialapp.stores import schema
from socialapp.stores.mongo import collection, insert_if_absent, replace_index
from socialapp.stores.unavailable import MONGODB, translates

LIST_SCHEMA = schema.document(
    {
        "_id": schema.ID,
        "account_id": schema.ID,
        "title": schema.text(lists.TITLE_LENGTH),
        "replies_policy": {"bsonType": "string", "enum": list(lists.REPLIES_POLICIES)},
        "exclusive": schema.BOOL,
        "members": {**schema.COUNT, "maximum": lists.MAX_MEMBERS},
    }
)
MEMBER_SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "list_id": schema.ID,
        "owner_id": schema.ID,
        "account_id": schema.ID,
    }
)
OWNER_LIST_ACCOUNT = [("owner_id", ASCENDING), ("list_id", ASCENDING), ("account_id", ASCENDING)]
LIST_ACCOUNT = [("list_id", ASCENDING), ("account_id", ASCENDING)]
ACCOUNT_OWNER_LIST = [("account_id", ASCENDING), ("owner_id", ASCENDING), ("list_id", ASCENDING)]


@translates(MONGODB)
class ListStore:
    def __init__(self, db, settings: Settings) -> None:
        self._lists = collection(db, "lists", settings)
        self._members = collection(db, "list_members", settings)

    def ensure_indexes(self) -> None:
        schema.apply(self._lists, LIST_SCHEMA)
        schema.apply(self._members, MEMBER_SCHEMA)
        self._lists.create_index(
            [("account_id", ASCENDING), ("_id", ASCENDING)], name="owner_lists"
        )
        # One member per list is enforced with the owner first, the shard key's order, so the
        # collection can be sharded on it (a list has one owner: the same uniqueness as
        # ``{list_id, account_id}``'s, which earlier versions enforced and a list's own reads
        # still use). Made before the old unique index becomes a plain one: uniqueness stands.
        self._members.create_index(
            OWNER_LIST_ACCOUNT, unique=True, name="owner_list_account_unique"
        )
        replace_index(self._members, "list_account_unique", LIST_ACCOUNT, "list_account")
        # The list ids too: the lists holding an author, which every post of theirs that
        # delivery pushes reads, come from the index alone (no member document fetched).
        replace_index(self._members, "account_owner", ACCOUNT_OWNER_LIST, "account_owner_list")

    # Lists ----------------------------------------------------------------------------------
    def create(self, record: dict) -> None:
        self._lists.insert_one(record)

    def count(self, account_id: int) -> int:
        return self._lists.count_documents({"account_id": account_id})

    def get(self, account_id: int, list_id: int) -> dict | None:
        """The list if ``account_id`` owns it (anyone else's is None, as an unknown one)."""
        return self._lists.find_one({"_id": list_id, "account_id": account_id})

    def of_account(self, account_id: int, limit: int = 0) -> list[dict]:
        """The account's lists, oldest first."""
        query = {"account_id": account_id}
        return list(self._lists.find(query, sort=[("_id", ASCENDING)], limit=limit))

    def update(self, account_id: int, list_id: int, fields: dict) -> dict | None:
        """Set ``fields`` of the account's list; the list as changed (None: not theirs)."""
        return self._lists.find_one_and_update(
            {"_id": list_id, "account_id": account_id},
            {"$set": fields},
            return_document=ReturnDocument.AFTER,
        )

    def delete(self, account_id: int, list_id: int, session=None) -> bool:
        """Delete the account's list and its members; True if it was theirs."""
        mine = {"_id": list_id, "account_id": account_id}
        if self._lists.delete_one(mine, session=session).deleted_count == 0:
            return False
        self._members.delete_many({"owner_id": account_id, "list_id": list_id}, session=session)
        return True

    def total(self) -> int:
        """Lists, from the collection's metadata: counting them would walk every document."""
        return self._lists.estimated_document_count()

    def total_members(self) -> int:
        """List memberships (one per list and account on it), from the metadata."""
        return self._members.estimated_document_count()

    def memberships(self, account_ids: list[int]) -> dict[int, int]:
        """How many lists hold each of ``account_ids``: one count on ``account_owner_list`` each
        (the index's keys of that account, never a list or a member document)."""
        return {
            account: self._members.count_documents({"account_id": account})
            for account in account_ids
        }

    def holding(self, owner_id: int, account_id: int) -> list[dict]:
        """The owner's lists that hold ``account_id``, oldest first."""
        query = {"_id": {"$in": self._list_ids_holding(owner_id, account_id)}}
        return list(self._lists.find(query | {"account_id": owner_id}, sort=[("_id", ASCENDING)]))

    def exclusive_member_ids(self, owner_id: int) -> set[int]:
        """The accounts on the owner's exclusive lists, the owner left out (their own posts
        stay in their home, as on Mastodon)."""
        mine = self._lists.find({"account_id": owner_id}, projection={"exclusive": 1})
        exclusive = [found["_id"] for found in mine if found["exclusive"]]
        if not exclusive:
            return set()
        query = {"owner_id": owner_id, "list_id": {"$in": exclusive}}
        found = self._members.find(query, projection={"account_id": 1, "_id": 0})
        return {member["account_id"] for member in found} - {owner_id}

    def in_exclusive_list(self, owner_id: int, account_id: int) -> bool:
        """Whether one of the owner's exclusive lists holds ``account_id``."""
        holding = self._list_ids_holding(owner_id, account_id)
        if not holding:
            return False
        query = {"_id": {"$in": holding}, "account_id": owner_id, "exclusive": True}
        return self._lists.find_one(query, projection={"_id": 1}) is not None

    # Members --------------------------------------------------------------------------------
    def add_members(
        self, owner_id: int, list_id: int, account_ids: list[int], limit: int, session=None
    ) -> list[int] | None:
        """Put ``account_ids`` on the owner's list unless that would make it hold more than
        ``limit``: those that were not on it yet (None: the list is not the owner's, or
        over ``limit``, and nothing was written). The count moves first, so a server
        without transactions never holds more members than it counts."""
        present = set(self.members_among(list_id, account_ids, session))
        new = [account for account in account_ids if account not in present]
        if not self._count(owner_id, list_id, len(new), limit, session):
            return None
        added = [
            account
            for account in new
            if insert_if_absent(
                self._members,
                {"owner_id": owner_id, "list_id": list_id, "account_id": account},
                {},
                session,
            )
        ]
        if len(added) < len(new):  # another request put some on meanwhile: counted there
            self._count(owner_id, list_id, len(added) - len(new), None, session)
        return added

    def remove_members(
        self, owner_id: int, list_id: int, account_ids: list[int], session=None
    ) -> int:
        """Take ``account_ids`` off the owner's list; how many were on it."""
        removed = sum(
            self._members.delete_one(
                {"owner_id": owner_id, "list_id": list_id, "account_id": account},
                session=session,
            ).deleted_count
            for account in account_ids
        )
        if removed:
            self._count(owner_id, list_id, -removed, None, session)
        return removed

    def remove_everywhere(self, owner_id: int, account_id: int, session=None) -> list[int]:
        """Take ``account_id`` off every list of the owner (an unfollow); those lists."""
        return [
            list_id
            for list_id in self._list_ids_holding(owner_id, account_id, session)
            if self.remove_members(owner_id, list_id, [account_id], session)
        ]

    def members_among(self, list_id: int, account_ids: list[int], session=None) -> list[int]:
        """Which of ``account_ids`` are on the list."""
        query = {"list_id": list_id, "account_id": {"$in": account_ids}}
        found = self._members.find(query, projection={"account_id": 1}, session=session)
        return [member["account_id"] for member in found]

    def member_ids(
        self,
        list_id: int,
        limit: int = 0,
        before: int | None = None,
        after: int | None = None,
        ascending: bool = False,
    ) -> list[int]:
        """The list's members between ``after`` and ``before`` (both excluded), by account
        id, highest first (or ``ascending``), ``limit`` at most (0: all)."""
        query: dict = {"list_id": list_id}
        bounds = {op: v for op, v in (("$lt", before), ("$gt", after)) if v is not None}
        if bounds:
            query["account_id"] = bounds
        found = self._members.find(
            query,
            projection={"account_id": 1, "_id": 0},
            sort=[("account_id", ASCENDING if ascending else DESCENDING)],
            limit=limit,
        )
        return [member["account_id"] for member in found]

    def feeds_holding(self, account_id: int) -> list[tuple[int, int]]:
        """``(owner_id, list_id)`` of every list holding the account, whoever owns it: the
        list feeds a pushed author's post is delivered to (covered by ``account_owner_list``)."""
        found = self._members.find(
            {"account_id": account_id}, projection={"owner_id": 1, "list_id": 1, "_id": 0}
        )
        return [(member["owner_id"], member["list_id"]) for member in found]

    def _list_ids_holding(self, owner_id: int, account_id: int, session=None) -> list[int]:
        query = {"account_id": account_id, "owner_id": owner_id}
        found = self._members.find(query, projection={"list_id": 1}, session=session)
        return [member["list_id"] for member in found]

    def _count(self, owner_id: int, list_id: int, delta: int, limit: int | None, session) -> bool:
        """Move the list's member count by ``delta``, if it is the owner's and stays within
        ``limit``; whether it moved."""
        query: dict = {"_id": list_id, "account_id": owner_id}
        if limit is not None:
            query["members"] = {"$lte": limit - delta}
        moved = self._lists.find_one_and_update(
            query, {"$inc": {"members": delta}}, projection={"_id": 1}, session=session
        )
        return moved is not None
