"""Notifications as Mastodon serves them: the caller's, ``Link``-paged newest first, one by
id, dismissed or cleared, and counted past the ``notifications`` marker (/api/v1); grouped
as Mastodon 4.3 groups them (/api/v2: ``GroupedNotificationsResults``, the groups kept at
write time by the store). A comment on the caller's post is a ``mention`` whose status is
the comment, a reply to that post."""

from __future__ import annotations

import marshmallow as ma
from flask import Blueprint, jsonify

from socialapp.api import limits
from socialapp.api.auth import authorized, components
from socialapp.api.fields import id_from_path
from socialapp.api.mastodon import entities, keyword_filters, paging
from socialapp.api.mastodon.openapi import AUTHORIZED, INVALID, LIMITED, NOT_FOUND, documented
from socialapp.api.mastodon.parsing import IdParam, Limit, Schema, params
from socialapp.api.mastodon.statuses import reader_marks
from socialapp.domain.ids import id_datetime
from socialapp.errors import Invalid, NotFound
from socialapp.services import notifications

blp = Blueprint("mastodon_notifications", __name__, url_prefix="/api/v1/notifications")
grouped = Blueprint("mastodon_grouped_notifications", __name__, url_prefix="/api/v2/notifications")
READ, WRITE = ("read:notifications",), ("write:notifications",)
TYPE_NAME = ma.fields.String(validate=ma.validate.Length(max=64))


class NotificationArgs(Schema):
    limit = Limit(default=40, maximum=80)
    max_id = IdParam(load_default=None)
    since_id = IdParam(load_default=None)
    min_id = IdParam(load_default=None)
    types = ma.fields.List(TYPE_NAME, load_default=None)
    exclude_types = ma.fields.List(TYPE_NAME, load_default=())
    account_id = IdParam(load_default=None)


class GroupedArgs(NotificationArgs):
    grouped_types = ma.fields.List(TYPE_NAME, load_default=None)
    # full, or partial_avatars (the newest account of a group full, the others partial)
    expand_accounts = ma.fields.String(validate=ma.validate.Length(max=64), load_default=None)


class UnreadArgs(Schema):
    limit = Limit(default=notifications.UNREAD_CAP, maximum=1000)
    types = ma.fields.List(TYPE_NAME, load_default=None)
    exclude_types = ma.fields.List(TYPE_NAME, load_default=())
    account_id = IdParam(load_default=None)


class GroupedUnreadArgs(UnreadArgs):
    grouped_types = ma.fields.List(TYPE_NAME, load_default=None)


def _rendered(items: list[dict], recipient_id: int):
    """Each item whose account and status still exist (``notifications.shown``) with its
    Status entity (None for a follow)."""
    c = components()
    found = notifications.shown(c.users, c.posts, c.likes, items, recipient_id)
    posts = [shown.status for shown in found if shown.status and shown.reply_to is None]
    marked, pinned = reader_marks(recipient_id, posts)
    hides = keyword_filters.hides(recipient_id, "notifications")
    for shown in found:
        if hides is not None and shown.status and hides(shown.status):
            continue  # the recipient's keyword filters hide its status here
        status_id = shown.status and shown.reply_to is None and shown.status["_id"]
        status = shown.status and entities.status(
            shown.status, shown.status_author, shown.favourited, shown.reply_to,
            bookmarked=status_id in marked, pinned=status_id in pinned,
        )  # fmt: skip
        if status:
            status["filtered"] = keyword_filters.results(recipient_id, shown.status)
        yield shown, status


class Showing:
    """Which notifications (or groups) of a batch are shown to the recipient
    (``notifications.Shows``): those ``_rendered`` keeps, each rendered once, so the page
    that reads on past hidden ones renders what it keeps from here (``of``)."""

    def __init__(self, recipient_id: int) -> None:
        self._recipient_id = recipient_id
        self._rendered: dict[int, tuple] = {}

    def __call__(self, batch: list[dict]) -> list[dict]:
        found = list(_rendered(batch, self._recipient_id))
        self._rendered.update((item[0].notification["_id"], item) for item in found)
        return [shown.notification for shown, _ in found]

    def of(self, items: list[dict]) -> list[tuple]:
        """The ``(shown, status)`` of items this kept."""
        return [self._rendered[item["_id"]] for item in items]


def render(items: list[dict], recipient_id: int) -> list[dict]:
    """Notifications as Mastodon's entities; those whose account or status is gone, or whose
    status the recipient's keyword filters hide in ``notifications``, are left out."""
    return _entities(list(_rendered(items, recipient_id)))


def _entities(found: list[tuple]) -> list[dict]:
    return [entities.notification(s.notification, s.actor, status) for s, status in found]


def render_groups(groups: list[dict], recipient_id: int, paged: bool = True) -> dict:
    """A GroupedNotificationsResults: the groups (as ``notifications.as_group`` gives them)
    whose newest account and status still exist and are not hidden, with every account and
    status they name once. ``paged``: with the page fields (``page_min_id``...)."""
    return _grouped(list(_rendered(groups, recipient_id)), paged)


def _grouped(found: list[tuple], paged: bool = True, partial: bool = False) -> dict:
    """The GroupedNotificationsResults of ``(shown, status)`` pairs (``_rendered``'s);
    ``partial`` (``expand_accounts=partial_avatars``): the newest account of each group in
    ``accounts``, the others of its sample in ``partial_accounts``, as Mastodon answers."""
    sampled = {i for shown, _ in found for i in shown.notification["sample_account_ids"]}
    accounts = {u["_id"]: u for u in components().users.get_many(list(sampled))}
    statuses, rendered = {}, []
    for shown, status in found:
        group = shown.notification
        sample = [i for i in group["sample_account_ids"] if i in accounts]
        entity = {
            "group_key": group["group_key"],
            "notifications_count": group["count"],
            "type": group["type"],
            "most_recent_notification_id": str(group["latest_id"]),
            "sample_account_ids": [str(i) for i in sample],
        }
        if paged:
            entity |= {
                "page_min_id": str(group["oldest_id"]),
                "page_max_id": str(group["_id"]),
                "latest_page_notification_at": entities.timestamp(id_datetime(group["_id"])),
            }
        if status is not None:
            entity["status_id"] = status["id"]
            statuses.setdefault(status["id"], status)
        rendered.append(entity)
    samples = [g["sample_account_ids"] for g in rendered]
    full = dict.fromkeys(i for sample in samples for i in (sample if not partial else sample[:1]))
    result = {
        "accounts": [entities.account(accounts[int(i)]) for i in full],
        "statuses": list(statuses.values()),
        "notification_groups": rendered,
    }
    if partial:
        rest = dict.fromkeys(i for sample in samples for i in sample[1:] if i not in full)
        result["partial_accounts"] = [_partial(accounts[int(i)]) for i in rest]
    return result


PARTIAL_ACCOUNT = ("id", "acct", "url", "avatar", "avatar_static", "locked", "bot")


def _partial(user: dict) -> dict:
    """A PartialAccountWithAvatar: what a row of avatars needs."""
    full = entities.account(user)
    return {name: full[name] for name in PARTIAL_ACCOUNT}


def _notification_id(raw: str) -> int:
    return id_from_path(raw, "notification")


@blp.get("")
@documented(
    "The caller's notifications, newest first (types[], exclude_types[] and account_id "
    "filter them; a type this server does not make matches nothing)",
    "Notifications",
    {**AUTHORIZED, **INVALID},
    NotificationArgs,
    scopes=READ,
    paged=True,
)
def index():
    user_id = authorized(*READ)
    args = params(NotificationArgs())
    types = notifications.wanted_types(args["types"], args["exclude_types"])
    showing = Showing(user_id)
    page = notifications.page(
        components().notifications, user_id, args["limit"], args["max_id"], args["since_id"],
        args["min_id"], types, args["account_id"], showing,
    )  # fmt: skip
    if not page.items:
        return jsonify([])
    links = paging.link(next_max_id=page.older, prev_min_id=page.items[0]["_id"])
    return jsonify(_entities(showing.of(page.items))), 200, links


@blp.get("/<notification_id>")
@documented("One of the caller's notifications", "The Notification", {**AUTHORIZED, **NOT_FOUND},
            scopes=READ)  # fmt: skip
def show(notification_id: str):
    user_id = authorized(*READ)
    found = notifications.get(
        components().notifications, user_id, _notification_id(notification_id)
    )
    rendered = render([found], user_id)
    if not rendered:  # its account or its status is gone
        raise NotFound("Record not found")
    return jsonify(rendered[0])


@blp.post("/clear")
@documented("Clear all the caller's notifications", "An empty object",
            {**AUTHORIZED, **LIMITED}, scopes=WRITE)  # fmt: skip
@limits.writes
def clear():
    user_id = authorized(*WRITE)
    components().notifications.clear(user_id)
    return jsonify({})


@blp.post("/<notification_id>/dismiss")
@documented("Dismiss one of the caller's notifications", "An empty object",
            {**AUTHORIZED, **NOT_FOUND, **LIMITED}, scopes=WRITE)  # fmt: skip
@limits.writes
def dismiss(notification_id: str):
    user_id = authorized(*WRITE)
    notifications.dismiss(components().notifications, user_id, _notification_id(notification_id))
    return jsonify({})


@blp.get("/unread_count")
@documented(
    "How many of the caller's notifications are newer than their notifications marker "
    "(all, without one), counted up to limit (default 100, at most 1000)",
    "{count}",
    {**AUTHORIZED, **INVALID},
    UnreadArgs,
    scopes=READ,
)
def unread_count():
    return _unread(UnreadArgs(), grouped=False)


def _unread(schema: UnreadArgs, grouped: bool):
    user_id = authorized(*READ)
    args = params(schema)
    c = components()
    count = notifications.unread_count(
        c.notifications, c.markers, user_id, args["limit"],
        notifications.wanted_types(args["types"], args["exclude_types"]), args["account_id"],
        args.get("grouped_types"), grouped=grouped,
    )  # fmt: skip
    return jsonify({"count": count})


# /api/v2: grouped ---------------------------------------------------------------------------
def _group_key(raw: str) -> str:
    """A group key as a path names it: a bad one is no group (404), as an unknown one."""
    if len(raw) > 80 or not raw.isascii():
        raise NotFound("Record not found")
    return raw


@grouped.get("")
@documented(
    "The caller's notifications grouped as Mastodon 4.3 groups them: favourites and boosts "
    "of one status, and follows, within 12 hours; mentions apart. Groups are ordered and "
    "paged by their newest notification (types[], exclude_types[], grouped_types[] and "
    "account_id filter them; expand_accounts=partial_avatars answers the accounts past each "
    "group's newest as partial_accounts)",
    "GroupedNotificationsResults",
    {**AUTHORIZED, **INVALID},
    GroupedArgs,
    scopes=READ,
    paged=True,
)
def grouped_index():
    user_id = authorized(*READ)
    args = params(GroupedArgs())
    if args["expand_accounts"] not in (None, "full", "partial_avatars"):
        raise Invalid(
            f"Invalid value for 'expand_accounts': '{args['expand_accounts']}', allowed "
            "values are 'full' and 'partial_avatars'"
        )
    showing = Showing(user_id)
    page = notifications.group_page(
        components().notifications, user_id, args["limit"], args["max_id"], args["since_id"],
        args["min_id"], notifications.wanted_types(args["types"], args["exclude_types"]),
        args["grouped_types"], args["account_id"], showing,
    )  # fmt: skip
    partial = args["expand_accounts"] == "partial_avatars"
    rendered = _grouped(showing.of(page.groups), partial=partial)
    if not page.groups:
        return jsonify(rendered)
    links = paging.link(next_max_id=page.older, prev_min_id=page.groups[0]["_id"])
    return jsonify(rendered), 200, links


@grouped.get("/unread_count")
@documented(
    "How many of the caller's notification groups have a notification newer than their "
    "notifications marker (all, without one), counted up to limit (default 100, at most 1000)",
    "{count}",
    {**AUTHORIZED, **INVALID},
    GroupedUnreadArgs,
    scopes=READ,
)
def grouped_unread_count():
    return _unread(GroupedUnreadArgs(), grouped=True)


@grouped.get("/<group_key>")
@documented("One of the caller's notification groups", "GroupedNotificationsResults",
            {**AUTHORIZED, **NOT_FOUND}, scopes=READ)  # fmt: skip
def grouped_show(group_key: str):
    user_id = authorized(*READ)
    found = notifications.group(components().notifications, user_id, _group_key(group_key))
    rendered = render_groups([found], user_id, paged=False)
    if not rendered["notification_groups"]:  # its account or its status is gone
        raise NotFound("Record not found")
    return jsonify(rendered)


@grouped.get("/<group_key>/accounts")
@documented(
    "The accounts of a group's notifications, newest first (at most 80)",
    "Array of Account",
    {**AUTHORIZED, **NOT_FOUND},
    scopes=READ,
)
def grouped_accounts(group_key: str):
    user_id = authorized(*READ)
    ids = notifications.group_accounts(components().notifications, user_id, _group_key(group_key))
    found = {u["_id"]: u for u in components().users.get_many(ids)}
    return jsonify([entities.account(found[i]) for i in ids if i in found])


@grouped.post("/<group_key>/dismiss")
@documented("Dismiss a group: every notification of it", "An empty object",
            {**AUTHORIZED, **NOT_FOUND, **LIMITED}, scopes=WRITE)  # fmt: skip
@limits.writes
def grouped_dismiss(group_key: str):
    user_id = authorized(*WRITE)
    notifications.dismiss_group(components().notifications, user_id, _group_key(group_key))
    return jsonify({})
