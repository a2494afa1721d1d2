"""The ``notifications`` collection: what others did to an account, newest first, bounded.

One document per notification: whom it is for (``recipient_id``), what happened (``type``,
Mastodon's name for it), who did it (``actor_id``), and the status concerned where there is
one (``status_id``: the post favourited or boosted, or the comment; ``post_id``: the post
that status is or belongs to, always one of the recipient's). A notification is one per
(recipient, type, actor, status): writing it again changes nothing. Each recipient keeps its
newest ``SOCIALAPP_NOTIFICATIONS_KEPT``; ``trim`` deletes the older ones.
"""

from __future__ import annotations

from pymongo import ASCENDING, DESCENDING

from socialapp.config import Settings
from socialapp.domain.ids import id_datetime
from socialapp.stores import schema
from socialapp.stores.mongo import collection, insert_if_absent
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
    },
    optional=("status_id", "post_id"),
)
NEWEST_FIRST = [("_id", DESCENDING)]
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
        self._events = collection(db, "notification_events", settings)
        self.kept = settings.notifications_kept

    def ensure_indexes(self) -> None:
        schema.apply(self._events, EVENT_SCHEMA)
        schema.apply(self._notifications, SCHEMA)
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

    def add(self, notification: dict) -> bool:
        """Store ``notification`` unless the same one is stored already; True if stored."""
        names = ("recipient_id", "type", "actor_id", "status_id")
        key = {name: notification[name] for name in names if name in notification}
        fields = {name: value for name, value in notification.items() if name not in key}
        return insert_if_absent(self._notifications, key, fields)

    def remove(
        self, recipient_id: int, type_: str, actor_id: int, status_id: int | None = None
    ) -> bool:
        """Delete the notification of this recipient, type, actor and status, if stored."""
        key = natural_key(recipient_id, type_, actor_id, status_id)
        return self._notifications.delete_one(key).deleted_count == 1

    def trim(self, recipient_id: int) -> int:
        """Delete the recipient's notifications past the newest ``kept``; how many."""
        mine = {"recipient_id": recipient_id}
        excess = self._notifications.count_documents(mine) - self.kept
        if excess <= 0:
            return 0
        oldest = self._notifications.find(
            mine, projection={"_id": 1}, sort=[("_id", ASCENDING)], limit=excess
        )
        older = {**mine, "_id": {"$lte": list(oldest)[-1]["_id"]}}
        return self._notifications.delete_many(older).deleted_count

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
        query: dict = {"recipient_id": recipient_id}
        bounds = {op: bound for op, bound in (("$lt", before), ("$gt", after)) if bound is not None}
        if bounds:
            query["_id"] = bounds
        if types is not None:
            query["type"] = {"$in": list(types)}
        if actor_id is not None:
            query["actor_id"] = actor_id
        order = [("_id", ASCENDING)] if oldest_first else NEWEST_FIRST
        return list(self._notifications.find(query, sort=order, limit=limit))

    def dismiss(self, recipient_id: int, notification_id: int) -> bool:
        """Delete one of the recipient's notifications; False if it has no such one."""
        found = {"_id": notification_id, "recipient_id": recipient_id}
        return self._notifications.delete_one(found).deleted_count == 1

    def clear(self, recipient_id: int) -> int:
        return self._notifications.delete_many({"recipient_id": recipient_id}).deleted_count

    def remove_from(self, recipient_id: int, actor_id: int) -> int:
        """Delete what ``actor_id`` caused the recipient to be notified of (a block)."""
        query = {"recipient_id": recipient_id, "actor_id": actor_id}
        return self._notifications.delete_many(query).deleted_count

    def remove_for_post(self, recipient_id: int, post_id: int) -> int:
        """Delete the recipient's notifications about ``post_id`` or its comments."""
        query = {"recipient_id": recipient_id, "post_id": post_id}
        return self._notifications.delete_many(query).deleted_count

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
