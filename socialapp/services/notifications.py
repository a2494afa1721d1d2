"""Notifications: telling an account that someone followed it, or favourited, boosted or
commented on one of its posts.

The services tell the ``Notifier`` once an action is stored; it holds the event in MongoDB
and queues the notification's creation (or its withdrawal, for an undone favourite or boost)
as one task. The worker re-reads what it needs, creates nothing for one's own actions, nor
between accounts where either blocks the other or where the recipient mutes the actor's
notifications, writes the notification (once, whatever the retries), checks again that it
still stands (an undo, a block or a delete may have landed meanwhile), tells the recipient's
open streams (a ``notification`` event; best effort: an app catches up by listing), trims
the recipient's history and releases the event. If the broker cannot take the task, the
request does the same itself. An event still held ``sweep_after_seconds`` later (a broker
that crashed with the task, a worker that ran out of retries) is sent again by the sweeper
(``send_held``): applying an event again, or after a later one, changes nothing, because
the task decides from what is stored, not from the order events come in.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

from socialapp.domain import notification_groups as grouping
from socialapp.domain.ids import IdGenerator, first_id_at
from socialapp.errors import NotFound, Unavailable
from socialapp.queue import FEED, TaskQueue, send_after_answer
from socialapp.stores.boosts import BoostStore
from socialapp.stores.filters import FilterStore
from socialapp.stores.likes import LikeStore
from socialapp.stores.markers import MarkerStore
from socialapp.stores.notifications import TYPES, NotificationStore, new_notification
from socialapp.stores.posts import PostStore
from socialapp.stores.streams import Streams
from socialapp.stores.users import UserStore

log = logging.getLogger(__name__)

NOTIFY = "socialapp.notify"
# Mastodon's notification types (4.4): a client may filter by any of them; socialapp makes
# only ``TYPES``.
MASTODON_TYPES = (
    *TYPES, "status", "follow_request", "poll", "update", "admin.sign_up", "admin.report",
    "severed_relationships", "moderation_warning", "quote", "quoted_update",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Notifier:
    """Creates and withdraws notifications: ``followed``, ``favourited``... from the
    services, ``apply`` in the worker (task ``NOTIFY``)."""

    notifications: NotificationStore
    filters: FilterStore
    likes: LikeStore
    posts: PostStore
    ids: IdGenerator
    queue: TaskQueue
    streams: Streams
    boosts: BoostStore

    # Called by the services once the action is stored --------------------------------------
    def followed(self, follower_id: int, followee_id: int) -> None:
        self._send("follow", follower_id, recipient_id=followee_id)

    def favourited(self, actor_id: int, post_id: int) -> None:
        self._send("favourite", actor_id, post_id=post_id)

    def unfavourited(self, actor_id: int, post_id: int) -> None:
        self._send("favourite", actor_id, post_id=post_id, undo=True)

    def boosted(self, actor_id: int, post_id: int) -> None:
        """``actor_id`` boosted ``post_id`` (the boost service calls this once it is stored)."""
        self._send("reblog", actor_id, post_id=post_id)

    def unboosted(self, actor_id: int, post_id: int) -> None:
        self._send("reblog", actor_id, post_id=post_id, undo=True)

    def commented(self, actor_id: int, post_id: int, comment_id: int) -> None:
        """A comment on a post: a ``mention`` (Mastodon's type for a reply to you)."""
        self._send("mention", actor_id, post_id=post_id, status_id=comment_id)

    def post_deleted(self, post: dict) -> None:
        """Remove what the post (and its comments) notified its author of."""
        self._quietly(self.notifications.remove_for_post, post["author_id"], post["_id"])

    def blocked(self, account_id: int, target_id: int) -> None:
        """Remove what either account notified the other of."""
        for recipient_id, actor_id in ((account_id, target_id), (target_id, account_id)):
            self._quietly(self.notifications.remove_from, recipient_id, actor_id)

    def _send(self, type_: str, actor_id: int, **event) -> None:
        event_id = self.ids.next_id()
        try:
            self.notifications.hold(event_id, type_, actor_id, event)
        except Unavailable as error:  # sent all the same, only not kept for the sweeper
            log.warning("notification event not held: %r", error)

        def unsent(error: Unavailable) -> None:  # the broker is down: done here instead
            log.warning("notification task not queued, applied in the request: %r", error)
            self._quietly(self.run, type_, actor_id, event, event_id)

        send_after_answer(self.queue, unsent, NOTIFY, type_, actor_id, event, event_id, queue=FEED)

    def send_held(self, older_than: float) -> int:
        """Queue again the events held for more than ``older_than`` seconds (the sweeper);
        how many. Each is held again under a new id first, so one still waiting in a long
        queue is sent again once per ``older_than``, not at every sweep."""
        held = self.notifications.held(before_id=first_id_at(time.time() - older_than))
        for event_id, type_, actor_id, event in held:
            again = self.ids.next_id()
            self.notifications.hold(again, type_, actor_id, event)
            self.notifications.release(event_id)  # its task, if it runs, releases nothing
            self.queue.send(NOTIFY, type_, actor_id, event, again, queue=FEED)
        if held:
            log.info("sweeper re-sent %d held notification events", len(held))
        return len(held)

    @staticmethod
    def _quietly(step, *args) -> None:
        """The action is stored: a notification that fails to follow it fails it not."""
        try:
            step(*args)
        except Unavailable as error:
            log.warning("notification step %s failed: %r", step.__name__, error)

    # The worker's task ---------------------------------------------------------------------
    def run(self, type_: str, actor_id: int, event: dict, event_id: int | None = None):
        """``apply`` the event, then release it (``event_id``; None: a task queued before
        events were held)."""
        made = self.apply(type_, actor_id, event)
        if event_id is not None:
            self.notifications.release(event_id)
        return made

    def apply(self, type_: str, actor_id: int, event: dict) -> dict | None:
        """Create (or with ``undo`` withdraw) the notification an event names; the new one,
        or None when it is not wanted, not new or withdrawn. Idempotent."""
        post_id, status_id = event.get("post_id"), event.get("status_id")
        recipient_id = event.get("recipient_id")
        if post_id is not None:
            post = self.posts.get(post_id)
            if post is None:  # deleted: nothing to tell, and nothing left to withdraw
                return None
            recipient_id = post["author_id"]
        if event.get("undo"):
            self.notifications.remove(recipient_id, type_, actor_id, status_id or post_id)
            return None
        if not self._wanted(type_, recipient_id, actor_id, post_id):
            return None
        notification = new_notification(
            self.ids.next_id(), recipient_id, type_, actor_id, status_id or post_id, post_id
        )
        added = self.notifications.add(notification)
        # Again once written (also when a first attempt wrote it and failed here): an undo,
        # a block or a delete that landed meanwhile found nothing to remove.
        if not self._wanted(type_, recipient_id, actor_id, post_id):
            self.notifications.remove(recipient_id, type_, actor_id, status_id or post_id)
            return None
        if not added:
            return None
        self._quietly(self.streams.publish_notification, recipient_id, notification["_id"])
        self.notifications.trim(recipient_id)
        return notification

    def _wanted(self, type_: str, recipient_id: int, actor_id: int, post_id: int | None) -> bool:
        if recipient_id == actor_id:
            return False
        filters = self.filters
        if filters.blocks_either(recipient_id, actor_id):
            return False
        mute = filters.mutes(recipient_id, [actor_id], dt.datetime.now(dt.UTC)).get(actor_id)
        if mute is not None and mute["notifications"]:
            return False
        if post_id is not None and not self.posts.exists(post_id):
            return False
        if type_ == "reblog":  # an unboost may have landed first
            return self.boosts.boost_id(post_id, actor_id) is not None
        return type_ != "favourite" or self.likes.has_liked(post_id, actor_id)


# Reading ---------------------------------------------------------------------------------
class Page(NamedTuple):
    items: list[dict]  # notifications, newest first
    older: int | None  # the ``max_id`` of the page below (None: nothing below)


def wanted_types(types: Iterable[str] | None, exclude_types: Iterable[str] = ()) -> list | None:
    """The stored types a filter asks for (None: all), as Mastodon reads ``types[]`` and
    ``exclude_types[]``: names it does not make are ignored."""
    wanted = [t for t in TYPES if (types is None or t in types) and t not in exclude_types]
    return None if len(wanted) == len(TYPES) else wanted


# Which notifications (or groups) of a batch are shown, in order: those whose account and
# status still exist and that no keyword filter of the recipient's hides (the API decides).
Shows = Callable[[list[dict]], list[dict]]
# ``read(bound, count)``: the next ``count`` items past ``bound`` in a page's order, and the
# bound past them (None: nothing lies past them).
Reader = Callable[[int | None, int], tuple[list[dict], int | None]]
REFILL_BATCH = 20  # items read at least each time a page reads on past hidden ones


def filled(read: Reader, bound: int | None, limit: int, shows: Shows | None) -> tuple[list, bool]:
    """The first ``limit`` items from ``bound`` on that ``shows`` keeps, reading on past the
    ones it leaves out until the page is full or nothing is left, as a home page reads on
    past what keyword filters hide (``Pages.read``); and whether more lie past them. Each
    recipient keeps at most ``notifications_kept``, which bounds the reading on."""
    kept: list[dict] = []
    while True:
        count = limit + 1 - len(kept)
        batch, bound = read(bound, count if not kept else max(count, REFILL_BATCH))
        kept += batch if shows is None else shows(batch)
        if len(kept) > limit or bound is None:
            return kept[:limit], len(kept) > limit


def _plain(fetch: Callable[[int | None, int], list[dict]]) -> Reader:
    """A ``Reader`` of a source whose items are read as they are: full means more may lie
    past its last."""

    def read(bound: int | None, count: int) -> tuple[list[dict], int | None]:
        found = fetch(bound, count)
        return found, found[-1]["_id"] if len(found) == count else None

    return read


def page(
    store: NotificationStore,
    recipient_id: int,
    limit: int,
    max_id: int | None = None,
    since_id: int | None = None,
    min_id: int | None = None,
    types: list[str] | None = None,
    account_id: int | None = None,
    shows: Shows | None = None,
) -> Page:
    """The recipient's notifications of ``types`` (None: all; from ``account_id`` if given),
    newest first: below ``max_id``; the newest above ``since_id``; or the ``limit`` just
    above ``min_id`` (whose page below starts at its last one). Only those ``shows`` keeps
    (None: all), the page reading on past the others to fill its ``limit``."""
    if types == []:
        return Page([], None)
    query = dict(types=types, actor_id=account_id)
    if min_id is not None:
        read = _plain(
            lambda after, count: store.page(
                recipient_id, count, max_id, after, oldest_first=True, **query
            )
        )
        items, _ = filled(read, min_id, limit, shows)
        items = items[::-1]
        return Page(items, items[-1]["_id"] if items else None)
    read = _plain(lambda before, count: store.page(recipient_id, count, before, since_id, **query))
    items, more = filled(read, max_id, limit, shows)
    return Page(items, items[-1]["_id"] if more else None)


def get(store: NotificationStore, recipient_id: int, notification_id: int) -> dict:
    """One of the recipient's notifications; NotFound for anyone else's."""
    found = store.get(recipient_id, notification_id)
    if found is None:
        raise NotFound("notification not found")
    return found


def dismiss(store: NotificationStore, recipient_id: int, notification_id: int) -> None:
    """Delete one of the recipient's notifications; NotFound for anyone else's."""
    if not store.dismiss(recipient_id, notification_id):
        raise NotFound("notification not found")


# Grouped (Mastodon's /api/v2/notifications) -------------------------------------------------
class GroupPage(NamedTuple):
    groups: list[dict]  # each ``as_group``'s, newest first
    older: int | None  # the ``max_id`` of the page below (None: nothing below)


def as_group(group: dict) -> dict:
    """A group document as a page shows it: like a notification (``_id`` the cursor, its
    newest; ``actor_id`` its newest account), with its count, oldest and sample."""
    sample = [s["account_id"] for s in group["sample"]]
    about = {n: group[n] for n in ("recipient_id", "type", "status_id", "post_id") if n in group}
    return {
        **about,
        "_id": group["latest_id"],
        "actor_id": sample[0],
        "group_key": group["group_key"],
        "count": group["count"],
        "latest_id": group["latest_id"],
        "oldest_id": group["oldest_id"],
        "sample_account_ids": sample,
    }


def single(notification: dict) -> dict:
    """One notification as a group of its own, ``ungrouped-<id>``."""
    notification_id = notification["_id"]
    return {
        **notification,
        "group_key": grouping.ungrouped(notification_id),
        "count": 1,
        "latest_id": notification_id,
        "oldest_id": notification_id,
        "sample_account_ids": [notification["actor_id"]],
    }


def grouped_sources(
    types: list[str] | None, grouped_types: Iterable[str] | None
) -> tuple[list[str] | None, list[str]]:
    """The types a page reads as groups (None: all) and those it reads as notifications,
    each its own group: the groupable ones ``grouped_types`` leaves out (None: none)."""
    wanted = list(TYPES) if types is None else types
    apart = [] if grouped_types is None else [
        t for t in grouping.GROUPABLE if t in wanted and t not in grouped_types
    ]  # fmt: skip
    if types is None and not apart:
        return None, []
    return [t for t in wanted if t not in apart], apart


def group_page(
    store: NotificationStore,
    recipient_id: int,
    limit: int,
    max_id: int | None = None,
    since_id: int | None = None,
    min_id: int | None = None,
    types: list[str] | None = None,
    grouped_types: Iterable[str] | None = None,
    account_id: int | None = None,
    shows: Shows | None = None,
) -> GroupPage:
    """The recipient's notification groups, ordered by their newest notification, as
    ``page`` orders notifications (``max_id``, ``since_id``, ``min_id`` compare with it).
    Groups are read as stored; only the types ``grouped_types`` leaves out, and a filter by
    ``account_id``, read notifications (at most ``kept`` a recipient). Notifications stored
    before groups were kept are grouped first (``NotificationStore.group_ungrouped``). Only
    the groups ``shows`` keeps (None: all), the page reading on past the others."""
    store.group_ungrouped(recipient_id)
    oldest_first = min_id is not None
    after = min_id if oldest_first else since_id
    as_groups, apart = grouped_sources(types, grouped_types)
    if account_id is not None:
        read = _from_account(store, recipient_id, max_id, after, types, apart, account_id,
                             oldest_first)  # fmt: skip
    else:

        def merged(bound: int | None, count: int) -> list[dict]:
            before, since = (max_id, bound) if oldest_first else (bound, after)
            found = []
            if as_groups != []:
                found += [
                    as_group(g) for g in store.group_page(
                        recipient_id, count, before, since, as_groups, oldest_first
                    )
                ]  # fmt: skip
            if apart:
                found += [
                    single(n) for n in store.page(
                        recipient_id, count, before, since, apart, oldest_first=oldest_first
                    )
                ]  # fmt: skip
            found.sort(key=lambda g: g["_id"], reverse=not oldest_first)
            return found[:count]

        read = _plain(merged)
    items, more = filled(read, after if oldest_first else max_id, limit, shows)
    if oldest_first:
        return GroupPage(items[::-1], items[0]["_id"] if items else None)
    return GroupPage(items, items[-1]["_id"] if more else None)


def _from_account(store, recipient_id, max_id, after, types, apart, account_id,
                  oldest_first) -> Reader:  # fmt: skip
    """A ``Reader`` of the groups of the account's notifications (each once, at its
    notification nearest the cursor), or each its own where ``apart``."""
    seen: set[str] = set()

    def read(bound: int | None, count: int) -> tuple[list[dict], int | None]:
        before, since = (max_id, bound) if oldest_first else (bound, after)
        found = store.page(recipient_id, count, before, since, types, account_id, oldest_first)
        keys = [n["group_key"] for n in found if "group_key" in n and n["type"] not in apart]
        stored = store.groups(recipient_id, keys)
        result = []
        for n in found:
            group = stored.get(n.get("group_key")) if n["type"] not in apart else None
            if group is None:
                result.append(single(n))
            elif group["group_key"] not in seen:
                seen.add(group["group_key"])
                result.append({**as_group(group), "_id": n["_id"], "actor_id": account_id})
        return result, found[-1]["_id"] if len(found) == count else None

    return read


def group(store: NotificationStore, recipient_id: int, group_key: str) -> dict:
    """One of the recipient's groups, by key (``ungrouped-<id>``: that notification);
    NotFound for anyone else's."""
    notification_id = grouping.ungrouped_id(group_key)
    if notification_id is not None:
        return single(get(store, recipient_id, notification_id))
    found = store.group(recipient_id, group_key)
    if found is None:
        raise NotFound("Record not found")
    return as_group(found)


def group_accounts(store: NotificationStore, recipient_id: int, group_key: str) -> list[int]:
    """Who made the group's notifications, newest first, at most ``GROUP_ACCOUNTS``."""
    shown = group(store, recipient_id, group_key)
    if grouping.ungrouped_id(group_key) is not None:
        return shown["sample_account_ids"]
    return store.group_accounts(recipient_id, shown["group_key"], GROUP_ACCOUNTS)


def dismiss_group(store: NotificationStore, recipient_id: int, group_key: str) -> None:
    """Delete the recipient's notifications of a group; NotFound for anyone else's."""
    notification_id = grouping.ungrouped_id(group_key)
    if notification_id is not None:
        dismiss(store, recipient_id, notification_id)
    elif not store.dismiss_group(recipient_id, group(store, recipient_id, group_key)["group_key"]):
        raise NotFound("Record not found")


GROUP_ACCOUNTS = 80  # a group's accounts listed at most (Mastodon lists all)
UNREAD_CAP = 100  # Mastodon's default unread count limit (at most 1000)


def unread_count(
    store: NotificationStore,
    markers: MarkerStore,
    recipient_id: int,
    cap: int = UNREAD_CAP,
    types: list[str] | None = None,
    account_id: int | None = None,
    grouped_types: Iterable[str] | None = None,
    grouped: bool = False,
) -> int:
    """How many notifications (``grouped``: groups) the recipient has above their
    ``notifications`` marker (all, without one), counted up to ``cap``, as Mastodon counts."""
    if types == []:
        return 0
    marker = markers.get(recipient_id, ["notifications"])
    after = marker[0]["last_read_id"] if marker else None
    if not grouped:
        return store.count_after(recipient_id, after, types, cap, actor_id=account_id)
    if account_id is not None:  # counted from a page, which groups what has no group yet
        page = group_page(store, recipient_id, cap, None, None, after or 0, types, grouped_types,
                          account_id)  # fmt: skip
        return len(page.groups)
    store.group_ungrouped(recipient_id)
    as_groups, apart = grouped_sources(types, grouped_types)
    count = 0 if as_groups == [] else store.count_after(recipient_id, after, as_groups, cap, True)
    if apart and count < cap:
        count += store.count_after(recipient_id, after, apart, cap - count)
    return count


class Shown(NamedTuple):
    """A notification with what rendering it takes."""

    notification: dict
    actor: dict
    status: dict | None  # the post favourited or boosted, or the comment
    status_author: dict | None
    reply_to: dict | None  # a comment's post
    favourited: bool  # the recipient favourited the status


def shown(
    users: UserStore, posts: PostStore, likes: LikeStore, items: list[dict], recipient_id: int
) -> list[Shown]:
    """Each notification whose actor and status still exist, with them: the accounts in one
    query, the posts in another, the recipient's favourites in a third; a comment from its
    post, or (past the embedded ones) by its id."""
    accounts = {
        u["_id"]: u for u in users.get_many([recipient_id, *(n["actor_id"] for n in items)])
    }
    post_ids = list(dict.fromkeys(n["post_id"] for n in items if "post_id" in n))
    found = posts.get_many(post_ids) if post_ids else {}
    liked = likes.liked_among(recipient_id, list(found))
    result = []
    for n in items:
        actor, post = accounts.get(n["actor_id"]), found.get(n.get("post_id"))
        if actor is None or ("post_id" in n and post is None):
            continue
        if n["type"] != "mention":
            author = accounts.get(post["author_id"]) if post else None
            result.append(Shown(n, actor, post, author, None, n.get("post_id") in liked))
            continue
        comment = _comment(posts, post, n["status_id"])
        if comment is not None:
            result.append(Shown(n, actor, comment, actor, post, False))
    return result


def _comment(posts: PostStore, post: dict, comment_id: int) -> dict | None:
    embedded = [c for c in post.get("comments", []) if c["id"] == comment_id]
    return {**embedded[0], "post_id": post["_id"]} if embedded else posts.comment(comment_id)
