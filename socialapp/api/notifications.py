"""Your notifications: who followed you, and who liked, boosted or commented on your posts."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from marshmallow import fields, validate

from socialapp.api import limits
from socialapp.api.accounts import UserSchema
from socialapp.api.auth import BEARER, caller_id, components
from socialapp.api.base import Blueprint, authenticated
from socialapp.api.fields import id_from_path, page_limit
from socialapp.errors import NotFound
from socialapp.rendering import CommentSchema, Id, PostSchema, UtcDateTime
from socialapp.services import graph, notifications

blp = Blueprint("notifications", __name__, url_prefix="/v1", description="Notifications")

TYPE_NOTE = (
    "follow: followed you; favourite: liked your post; reblog: boosted your post; "
    "mention: commented on your post"
)


class NotificationSchema(ma.Schema):
    id = Id()
    type = fields.String(metadata={"enum": list(notifications.TYPES), "description": TYPE_NOTE})
    created_at = UtcDateTime()
    account = fields.Nested(UserSchema, metadata={"description": "Who did it"})
    post = fields.Nested(
        PostSchema,
        allow_none=True,
        metadata={"description": "Your post liked, boosted or commented on (follow: null)"},
    )
    comment = fields.Nested(
        CommentSchema, allow_none=True, metadata={"description": "The comment (mention only)"}
    )

    @ma.pre_dump
    def _flat(self, shown: notifications.Shown, **kwargs) -> dict:
        notification = shown.notification
        return {
            "id": notification["_id"],
            "type": notification["type"],
            "created_at": notification["created_at"],
            "account": shown.actor,
            "post": shown.reply_to or shown.status,
            "comment": shown.status if shown.reply_to is not None else None,
        }


class NotificationPageSchema(ma.Schema):
    items = fields.List(fields.Nested(NotificationSchema))
    next_cursor = fields.String(allow_none=True)


class NotificationPageArgs(ma.Schema):
    limit = page_limit()
    cursor = fields.String(load_default=None, validate=validate.Length(max=200))
    types = fields.List(
        fields.String(validate=validate.OneOf(notifications.TYPES)),
        load_default=None,
        metadata={"description": "Only these types (repeat the parameter)"},
    )
    exclude_types = fields.List(
        fields.String(validate=validate.OneOf(notifications.TYPES)),
        load_default=(),
        metadata={"description": "Not these types (repeat the parameter)"},
    )
    account_id = Id(load_default=None, metadata={"description": "Only from this account"})


def _shown(items: list[dict], recipient_id: int) -> list[notifications.Shown]:
    c = components()
    return notifications.shown(c.users, c.posts, c.likes, items, recipient_id)


@blp.route("/me/notifications")
class Notifications(MethodView):
    @authenticated
    @blp.doc(**BEARER)
    @blp.arguments(NotificationPageArgs, location="query")
    @blp.response(200, NotificationPageSchema)
    @blp.errors(401, 422, 503)
    def get(self, args):
        """Your notifications, newest first, page by page"""
        me = caller_id()
        types = notifications.wanted_types(args["types"], args["exclude_types"])
        max_id = graph.decode_cursor(args["cursor"])
        page = notifications.page(
            components().notifications, me, args["limit"], max_id, types=types,
            account_id=args["account_id"],
        )  # fmt: skip
        next_cursor = None if page.older is None else str(page.older)
        return {"items": _shown(page.items, me), "next_cursor": next_cursor}

    @limits.writes
    @blp.doc(**BEARER)
    @blp.response(204)
    @blp.errors(401, 429, 503)
    def delete(self):
        """Clear all your notifications"""
        components().notifications.clear(caller_id())


@blp.route("/me/notifications/<notification_id>")
class Notification(MethodView):
    @authenticated
    @blp.doc(**BEARER)
    @blp.response(200, NotificationSchema)
    @blp.errors(401, 404, 503)
    def get(self, notification_id):
        """One of your notifications (404 for anyone else's)"""
        me = caller_id()
        found = notifications.get(components().notifications, me, _id(notification_id))
        shown = _shown([found], me)
        if not shown:  # its post or its author is gone
            raise NotFound("notification not found")
        return shown[0]

    @limits.writes
    @blp.doc(**BEARER)
    @blp.response(204)
    @blp.errors(401, 404, 429, 503)
    def delete(self, notification_id):
        """Dismiss one of your notifications (404 for anyone else's)"""
        notifications.dismiss(components().notifications, caller_id(), _id(notification_id))


def _id(raw: str) -> int:
    return id_from_path(raw, "notification")
