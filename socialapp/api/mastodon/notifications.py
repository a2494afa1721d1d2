"""Notifications as Mastodon serves them: the caller's, ``Link``-paged newest first, one by
id, dismissed or cleared. The /v1 service and store; a comment on the caller's post is a
``mention`` whose status is the comment, a reply to that post."""

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
from socialapp.errors import NotFound
from socialapp.services import notifications

blp = Blueprint("mastodon_notifications", __name__, url_prefix="/api/v1/notifications")
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


def render(items: list[dict], recipient_id: int) -> list[dict]:
    """Notifications as Mastodon's entities; those whose account or status is gone are left
    out."""
    c = components()
    rendered = []
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
        rendered.append(entities.notification(shown.notification, shown.actor, status))
    return rendered


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
    page = notifications.page(
        components().notifications, user_id, args["limit"], args["max_id"], args["since_id"],
        args["min_id"], types, args["account_id"],
    )  # fmt: skip
    if not page.items:
        return jsonify([])
    links = paging.link(next_max_id=page.older, prev_min_id=page.items[0]["_id"])
    return jsonify(render(page.items, user_id)), 200, links


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
