"""Which group a notification joins, as Mastodon 4.3 groups them (``Notification::Groups``).

Favourites and boosts group per (type, status), follows per type; each also by time: a
group's key ends with the hour its first notification came in, and a notification joins the
recipient's newest group of its kind while that group started less than ``SPAN_HOURS`` hours
before it, else it starts a new one. So a post favourited through an afternoon is one group,
and favourited again the next day is two. Mentions never group: each is its own
``ungrouped-<id>``.
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
    its kind (None: there is none): that one while it is younger than ``SPAN_HOURS``."""
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
