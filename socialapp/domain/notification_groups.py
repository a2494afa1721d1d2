"""Which group a notification joins, as Mastodon 4.3 groups them (``Notification::Groups``).

Favourites and boosts group per (type, status), follows per type; each also by time: a
group's key ends with the hour its first notification came in, and a notification joins the
recipient's newest group of its kind that started at or before it, while that group started
less than ``SPAN_HOURS`` hours before it, else it starts a new one. So a post favourited
through an afternoon is one group, and favourited again the next day is two. Mentions never
group: each is its own ``ungrouped-<id>``.
"""

from __future__ import annotations

from socialapp.domain.ids import id_time_ms

GROUPABLE = ("favourite", "reblog", "follow")  # Mastodon's, less admin.sign_up
SPAN_HOURS = 12  # MAXIMUM_GROUP_SPAN_HOURS
SAMPLE_SIZE = 8  # NotificationGroup::SAMPLE_ACCOUNTS_SIZE
UNGROUPED = "ungrouped-"
HOUR_MS = 3_600_000


def prefix(type_: str, status_id: int | None) -> str | None:
    """What a group gathers: ``favourite-<status>``, ``reblog-<status>`` or ``follow``; None
    for a type that never groups."""
    if type_ not in GROUPABLE:
        return None
    return type_ if type_ == "follow" else f"{type_}-{status_id}"


def hour_bucket(notification_id: int) -> int:
    """Hours since the Unix epoch when the notification was made."""
    return id_time_ms(notification_id) // HOUR_MS


def bucket(notification_id: int, newest_bucket: int | None) -> int:
    """The bucket a notification joins, given the bucket of the recipient's newest group of
    its kind that started at or before it (None: there is none): that one while it is
    younger than ``SPAN_HOURS``."""
    own = hour_bucket(notification_id)
    if newest_bucket is not None and own < newest_bucket + SPAN_HOURS:
        return newest_bucket
    return own


def key(group_prefix: str, group_bucket: int) -> str:
    return f"{group_prefix}-{group_bucket}"


def ungrouped(notification_id: int) -> str:
    return f"{UNGROUPED}{notification_id}"


def ungrouped_id(group_key: str) -> int | None:
    """The notification id of an ``ungrouped-<id>`` key; None for any other key."""
    raw = group_key.removeprefix(UNGROUPED)
    if raw == group_key or not raw.isascii() or not raw.isdigit() or len(raw) > 16:
        return None
    return int(raw)


def aggregate(notifications: list[dict]) -> list[dict]:
    """The groups new notifications make (of recipients holding none yet), as adding them one
    by one in id order makes them; each notification gains its ``group_key``. For generated
    history, loaded in bulk."""
    newest: dict[tuple[int, str], int] = {}  # (recipient, prefix) -> its newest group's bucket
    groups: dict[tuple[int, str], dict] = {}
    for n in sorted(notifications, key=lambda n: n["_id"]):
        recipient_id, notification_id = n["recipient_id"], n["_id"]
        gathers, placed = prefix(n["type"], n.get("status_id")), {}
        if gathers is None:
            n["group_key"] = ungrouped(notification_id)
        else:
            placed = {
                "prefix": gathers,
                "bucket": bucket(notification_id, newest.get((recipient_id, gathers))),
            }
            newest[recipient_id, gathers] = placed["bucket"]
            n["group_key"] = key(gathers, placed["bucket"])
        group = groups.get((recipient_id, n["group_key"]))
        if group is None:
            about = {
                f: n[f]
                for f in ("recipient_id", "group_key", "type", "status_id", "post_id")
                if f in n
            }
            group = groups[recipient_id, n["group_key"]] = {
                **about,
                **placed,
                "count": 0,
                "oldest_id": notification_id,
                "sample": [],
            }
        group["count"] += 1
        group["latest_id"] = notification_id
        sampled = {"id": notification_id, "account_id": n["actor_id"]}
        group["sample"] = [sampled, *group["sample"]][:SAMPLE_SIZE]
    return list(groups.values())
