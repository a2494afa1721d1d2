"""The ``notifications`` collection: what others did to an account, newest first, bounded.

One document per notification: whom it is for (``recipient_id``), what happened (``type``,
Mastodon's name for it), who did it (``actor_id``), and the status concerned where there is
one (``status_id``: the post favourited or boosted, or the comment; ``post_id``: the post
that status is or belongs to, always one of the recipient's). A notification is one per
(recipient, type, actor, status): writing it again changes nothing. Each recipient keeps its
newest ``SOCIALAPP_NOTIFICATIONS_KEPT``; ``trim`` deletes the older ones.

The ``notification_groups`` collection is the same notifications aggregated as Mastodon's
grouped notifications show them (``socialapp.domain.notification_groups``): one document per
(recipient, ``group_key``) with the group's count, its newest and oldest notification and its
newest ``SAMPLE_SIZE`` accounts, kept at write time so a page of groups reads groups, never
the notifications under them (Stream-Framework's aggregated feed). Each notification carries
its ``group_key``. Every write here changes a notification and its group together, as one
transaction the store runs itself (``Transactions``: on the embedded store its lock), so no
caller can change one without the other: adding ``$inc``s the count and pushes the account
into the capped sample; a withdrawal (an undo, a block, a deleted post, a dismissal, the
trim) takes the count down by what it deleted and reads the group's newest back from the
notifications' ``recipient_group_newest`` index, or deletes the group it emptied.
Notifications stored before groups were kept have no ``group_key``: ``group_ungrouped``
groups a recipient's the same way, once, when a grouped read first asks for them.
"""

from __future__ import annotations

from collections import Counter
from functools import partial

from pymongo import ASCENDING, DESCENDING

from socialapp.config import Settings
from socialapp.domain import notification_groups as groups
from socialapp.domain.ids import id_datetime
from socialapp.stores import schema
from socialapp.stores.mongo import Transactions, collection, insert_if_absent, insert_unordered
from socialapp.stores.unavailable import MONGODB, translates

# follow: followed you; favourite: liked your post; reblog: boosted your post; mention: a
# comment on your post (a reply, which mentions you on Mastodon).
TYPES = ("follow", "favourite", "reblog", "mention")
SCHEMA = schema.document(
    {
        "_id": schema.ID,
        "recipient_id": schema.ID,
        "type": {"bsonType": "string", "enum": list(TYPES)},
        "actor_id": schema.ID,
        "status_id": schema.ID,
        "post_id": schema.ID,
        "created_at": schema.DATE,
        "group_key": schema.text(80),
    },
    optional=("status_id", "post_id", "group_key"),
)
GROUP_SCHEMA = schema.document(
    {
        "_id": schema.OBJECT_ID,
        "recipient_id": schema.ID,
        "group_key": schema.text(80),
        "type": {"bsonType": "string", "enum": list(TYPES)},
        "prefix": schema.text(80),
        "bucket": schema.COUNT,
        "status_id": schema.ID,
        "post_id": schema.ID,
        "count": {"bsonType": ["int", "long"], "minimum": 1},
        "latest_id": schema.ID,
        "oldest_id": schema.ID,
        "sample": {
            "bsonType": "array",
            "maxItems": groups.SAMPLE_SIZE,
            "items": schema.document({"id": schema.ID, "account_id": schema.ID}),
        },
    },
    optional=("prefix", "bucket", "status_id", "post_id"),
)
NEWEST_FIRST = [("_id", DESCENDING)]
GROUP_FIELDS = {"_id": 1, "group_key": 1}
# An event a notification is made from (or withdrawn by, with ``undo``), held until the
# task that applies it has run: the sweeper sends again what a broker or a worker lost.
EVENT_FIELDS = ("recipient_id", "post_id", "status_id", "undo")
EVENT_SCHEMA = schema.document(
    {
        "_id": schema.ID,
        "type": {"bsonType": "string", "enum": list(TYPES)},
        "actor_id": schema.ID,
        "recipient_id": schema.ID,
        "post_id": schema.ID,
        "status_id": schema.ID,
        "undo": schema.BOOL,
    },
    optional=EVENT_FIELDS,
)


def new_notification(
    notification_id: int,
    recipient_id: int,
    type_: str,
    actor_id: int,
    status_id: int | None = None,
    post_id: int | None = None,
) -> dict:
    """A notification document; ``post_id`` defaults to ``status_id`` (a post's own)."""
    notification = {
        "_id": notification_id,
        "recipient_id": recipient_id,
        "type": type_,
        "actor_id": actor_id,
        "created_at": id_datetime(notification_id),
    }
    if status_id is not None:
        notification |= {"status_id": status_id, "post_id": post_id or status_id}
    return notification


def natural_key(recipient_id: int, type_: str, actor_id: int, status_id: int | None = None) -> dict:
    """What makes a notification one: recipient, type, actor and status (if any)."""
    key = {"recipient_id": recipient_id, "type": type_, "actor_id": actor_id}
    return key if status_id is None else {**key, "status_id": status_id}


@translates(MONGODB)
class NotificationStore:
    def __init__(self, db, settings: Settings) -> None:
        self._notifications = collection(db, "notifications", settings)
        self._groups = collection(db, "notification_groups", settings)
        self._events = collection(db, "notification_events", settings)
        self._transactions = Transactions(db, settings)
        self.kept = settings.notifications_kept

    def ensure_indexes(self) -> None:
        schema.apply(self._events, EVENT_SCHEMA)
        schema.apply(self._notifications, SCHEMA)
        schema.apply(self._groups, GROUP_SCHEMA)
        self._notifications.create_index(
            [("recipient_id", ASCENDING), ("_id", DESCENDING)], name="recipient_newest"
        )
        self._notifications.create_index(
            [
                ("recipient_id", ASCENDING),
                ("type", ASCENDING),
                ("actor_id", ASCENDING),
                ("status_id", ASCENDING),
            ],
            unique=True,
            name="recipient_type_actor_status_unique",
        )
        self._notifications.create_index(
            [("recipient_id", ASCENDING), ("group_key", ASCENDING), ("_id", DESCENDING)],
            name="recipient_group_newest",
        )
        self._groups.create_index(
            [("recipient_id", ASCENDING), ("group_key", ASCENDING)],
            unique=True,
            name="recipient_group_unique",
        )
        self._groups.create_index(
            [("recipient_id", ASCENDING), ("latest_id", DESCENDING)], name="recipient_latest"
        )
        self._groups.create_index(
            [("recipient_id", ASCENDING), ("prefix", ASCENDING), ("bucket", DESCENDING)],
            name="recipient_prefix_bucket",
        )

    # Writing: each one transaction over a notification and its group ----------------------
    def add(self, notification: dict) -> bool:
        """Store ``notification`` unless the same one is stored already, and count it in its
        group; True if stored. It gains its ``group_key``."""
        return self._transactions.run(lambda session: self._add(notification, session))

    def _add(self, notification: dict, session) -> bool:
        names = ("recipient_id", "type", "actor_id", "status_id")
        key = {name: notification[name] for name in names if name in notification}
        placed = self._place(notification, session)
        fields = {name: value for name, value in notification.items() if name not in key}
        if not insert_if_absent(self._notifications, key, fields, session=session):
            return False
        self._count(notification, placed, session)
        return True

    def _place(self, notification: dict, session) -> dict:
        """Give the notification its ``group_key``: the recipient's newest group of its kind
        that started at or before it (``notification_groups.bucket``), so one stored before
        groups were kept and grouped later joins no newer group; its group's ``prefix`` and
        ``bucket`` (none for a mention)."""
        recipient_id, notification_id = notification["recipient_id"], notification["_id"]
        prefix = groups.prefix(notification["type"], notification.get("status_id"))
        if prefix is None:
            notification["group_key"] = groups.ungrouped(notification_id)
            return {}
        own = groups.hour_bucket(notification_id)
        newest = self._groups.find_one(
            {"recipient_id": recipient_id, "prefix": prefix, "bucket": {"$lte": own}},
            projection={"bucket": 1, "_id": 0},
            sort=[("bucket", DESCENDING)],
            session=session,
        )
        bucket = groups.bucket(notification_id, newest and newest["bucket"])
        notification["group_key"] = groups.key(prefix, bucket)
        return {"prefix": prefix, "bucket": bucket}

    def _count(self, notification: dict, placed: dict, session) -> None:
        """Count the notification, stored with its ``group_key``, in its group."""
        notification_id = notification["_id"]
        about = {n: notification[n] for n in ("type", "status_id", "post_id") if n in notification}
        sampled = {"id": notification_id, "account_id": notification["actor_id"]}
        self._groups.update_one(
            {"recipient_id": notification["recipient_id"], "group_key": notification["group_key"]},
            {
                "$setOnInsert": {**about, **placed},
                "$inc": {"count": 1},
                "$max": {"latest_id": notification_id},
                "$min": {"oldest_id": notification_id},
                "$push": {
                    "sample": {
                        "$each": [sampled],
                        "$sort": {"id": DESCENDING},
                        "$slice": groups.SAMPLE_SIZE,
                    }
                },
            },
            upsert=True,
            session=session,
        )

    def group_ungrouped(self, recipient_id: int) -> int:
        """Group the recipient's notifications stored without a ``group_key`` (before groups
        were kept, or by a worker of that version during a rolling upgrade), oldest first,
        each in its own transaction as ``add`` groups a new one; how many. Once none is left
        this is one probe of ``recipient_group_newest`` that finds nothing (a missing key is
        indexed as null), so grouped reads call it every time instead of keeping a marker."""
        found = list(
            self._notifications.find(
                {"recipient_id": recipient_id, "group_key": None},
                sort=[("_id", ASCENDING)],
                limit=self.kept,
            )
        )
        return sum(self._transactions.run(partial(self._adopt, n)) for n in found)

    def _adopt(self, notification: dict, session) -> bool:
        """Give a stored notification without a group its ``group_key`` and count it in that
        group, unless it has one or is gone by now (a concurrent reader grouped it, a
        withdrawal deleted it): so it is counted once, whoever races."""
        placed = self._place(notification, session)
        claimed = self._notifications.update_one(
            {
                "_id": notification["_id"],
                "recipient_id": notification["recipient_id"],
                "group_key": None,
            },
            {"$set": {"group_key": notification["group_key"]}},
            session=session,
        )
        if claimed.modified_count == 0:
            return False
        self._count(notification, placed, session)
        return True

    def add_many(self, notifications: list[dict]) -> None:
        """Insert new notifications, of recipients holding none yet, and the groups they make
        (``notification_groups.aggregate``) in unordered bulk writes: generated history (the
        benchmark's), which ``add`` one by one would take hours to write on the embedded
        store. Not atomic: a failure leaves part of it."""
        made = groups.aggregate(notifications)
        insert_unordered(self._notifications, notifications)
        insert_unordered(self._groups, made)

    def remove(
        self, recipient_id: int, type_: str, actor_id: int, status_id: int | None = None
    ) -> bool:
        """Delete the notification of this recipient, type, actor and status, if stored."""
        return self._delete(natural_key(recipient_id, type_, actor_id, status_id)) == 1

    def trim(self, recipient_id: int) -> int:
        """Delete the recipient's notifications past the newest ``kept``; how many."""
        mine = {"recipient_id": recipient_id}
        excess = self._notifications.count_documents(mine) - self.kept
        if excess <= 0:
            return 0
        oldest = self._notifications.find(
            mine, projection={"_id": 1}, sort=[("_id", ASCENDING)], limit=excess
        )
        return self._delete({**mine, "_id": {"$lte": list(oldest)[-1]["_id"]}})

    def dismiss(self, recipient_id: int, notification_id: int) -> bool:
        """Delete one of the recipient's notifications; False if it has no such one."""
        return self._delete({"_id": notification_id, "recipient_id": recipient_id}) == 1

    def dismiss_group(self, recipient_id: int, group_key: str) -> int:
        """Delete the recipient's notifications of one group, and the group; how many."""
        return self._delete({"recipient_id": recipient_id, "group_key": group_key})

    def clear(self, recipient_id: int) -> int:
        def work(session) -> int:
            mine = {"recipient_id": recipient_id}
            self._groups.delete_many(mine, session=session)
            return self._notifications.delete_many(mine, session=session).deleted_count

        return self._transactions.run(work)

    def remove_from(self, recipient_id: int, actor_id: int) -> int:
        """Delete what ``actor_id`` caused the recipient to be notified of (a block)."""
        return self._delete({"recipient_id": recipient_id, "actor_id": actor_id})

    def remove_for_post(self, recipient_id: int, post_id: int) -> int:
        """Delete the recipient's notifications about ``post_id`` or its comments."""
        return self._delete({"recipient_id": recipient_id, "post_id": post_id})

    def _delete(self, query: dict) -> int:
        """Delete the notifications ``query`` (which names the recipient) matches, and take
        them out of their groups; how many."""
        recipient_id = query["recipient_id"]

        def work(session) -> int:
            found = list(self._notifications.find(query, projection=GROUP_FIELDS, session=session))
            if not found:
                return 0
            ids = {"recipient_id": recipient_id, "_id": {"$in": [n["_id"] for n in found]}}
            deleted = self._notifications.delete_many(ids, session=session).deleted_count
            keys = Counter(n["group_key"] for n in found if "group_key" in n)
            for group_key, count in keys.items():
                self._regroup(recipient_id, group_key, count, session)
            return deleted

        return self._transactions.run(work)

    def _regroup(self, recipient_id: int, group_key: str, removed: int, session) -> None:
        """The group once ``removed`` of its notifications are deleted: its count down by
        them, its newest and sample read back; gone if it holds none."""
        group = {"recipient_id": recipient_id, "group_key": group_key}
        newest = list(self._members(recipient_id, group_key, groups.SAMPLE_SIZE, session))
        if not newest:
            self._groups.delete_one(group, session=session)
            return
        oldest = self._notifications.find_one(
            group, projection={"_id": 1}, sort=[("_id", ASCENDING)], session=session
        )
        sample = [{"id": n["_id"], "account_id": n["actor_id"]} for n in newest]
        changes = {"latest_id": newest[0]["_id"], "oldest_id": oldest["_id"], "sample": sample}
        self._groups.update_one(
            group, {"$inc": {"count": -removed}, "$set": changes}, session=session
        )

    def _members(self, recipient_id: int, group_key: str, limit: int, session=None):
        return self._notifications.find(
            {"recipient_id": recipient_id, "group_key": group_key},
            projection={"_id": 1, "actor_id": 1},
            sort=NEWEST_FIRST,
            limit=limit,
            session=session,
        )

    # Reading ------------------------------------------------------------------------------
    def get(self, recipient_id: int, notification_id: int) -> dict | None:
        return self._notifications.find_one({"_id": notification_id, "recipient_id": recipient_id})

    def page(
        self,
        recipient_id: int,
        limit: int,
        before: int | None = None,
        after: int | None = None,
        types: list[str] | None = None,
        actor_id: int | None = None,
        oldest_first: bool = False,
    ) -> list[dict]:
        """The recipient's notifications with ids between ``after`` and ``before`` (both
        excluded), of ``types`` (None: all) and from ``actor_id`` (None: anyone), newest
        first (or ``oldest_first``), ``limit`` at most."""
        query = _between(recipient_id, "_id", before, after, types)
        if actor_id is not None:
            query["actor_id"] = actor_id
        order = [("_id", ASCENDING)] if oldest_first else NEWEST_FIRST
        return list(self._notifications.find(query, sort=order, limit=limit))

    def group(self, recipient_id: int, group_key: str) -> dict | None:
        return self._groups.find_one({"recipient_id": recipient_id, "group_key": group_key})

    def groups(self, recipient_id: int, group_keys: list[str]) -> dict[str, dict]:
        """The recipient's groups of these keys, by key (those it has none of are missing)."""
        query = {"recipient_id": recipient_id, "group_key": {"$in": list(group_keys)}}
        return {g["group_key"]: g for g in self._groups.find(query)} if group_keys else {}

    def group_page(
        self,
        recipient_id: int,
        limit: int,
        before: int | None = None,
        after: int | None = None,
        types: list[str] | None = None,
        oldest_first: bool = False,
    ) -> list[dict]:
        """The recipient's groups whose newest notification lies between ``after`` and
        ``before`` (both excluded), of ``types`` (None: all), newest first (or
        ``oldest_first``), ``limit`` at most: a walk of ``recipient_latest``."""
        query = _between(recipient_id, "latest_id", before, after, types)
        order = ASCENDING if oldest_first else DESCENDING
        return list(self._groups.find(query, sort=[("latest_id", order)], limit=limit))

    def group_accounts(self, recipient_id: int, group_key: str, limit: int) -> list[int]:
        """Who made the group's newest ``limit`` notifications, newest first."""
        return [n["actor_id"] for n in self._members(recipient_id, group_key, limit)]

    def count_after(
        self,
        recipient_id: int,
        after: int | None,
        types: list[str] | None,
        cap: int,
        grouped: bool = False,
        actor_id: int | None = None,
    ) -> int:
        """How many notifications (``grouped``: groups, by their newest) the recipient has
        above ``after``, of ``types`` (None: all) and from ``actor_id`` (None: anyone; not
        with ``grouped``), counted up to ``cap``."""
        field, coll = ("latest_id", self._groups) if grouped else ("_id", self._notifications)
        query = _between(recipient_id, field, None, after, types)
        if actor_id is not None:
            query["actor_id"] = actor_id
        return coll.count_documents(query, limit=cap)

    # Events held until applied -------------------------------------------------------------
    def hold(self, event_id: int, type_: str, actor_id: int, event: dict) -> None:
        """Keep the event (``EVENT_FIELDS``) until ``release``: one not yet applied."""
        fields = {name: event[name] for name in EVENT_FIELDS if event.get(name) is not None}
        self._events.insert_one({"_id": event_id, "type": type_, "actor_id": actor_id, **fields})

    def release(self, event_id: int) -> None:
        self._events.delete_one({"_id": event_id})

    def held(self, before_id: int, limit: int = 1000) -> list[tuple[int, str, int, dict]]:
        """Events held since before ``before_id``, oldest first: ``(id, type, actor, event)``."""
        found = self._events.find(
            {"_id": {"$lt": before_id}}, sort=[("_id", ASCENDING)], limit=limit
        )
        return [
            (e["_id"], e["type"], e["actor_id"], {n: e[n] for n in EVENT_FIELDS if n in e})
            for e in found
        ]


def _between(recipient_id: int, field: str, before, after, types) -> dict:
    query: dict = {"recipient_id": recipient_id}
    bounds = {op: bound for op, bound in (("$lt", before), ("$gt", after)) if bound is not None}
    if bounds:
        query[field] = bounds
    if types is not None:
        query["type"] = {"$in": list(types)}
    return query
