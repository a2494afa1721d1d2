"""Blocks and mutes: whom your home timeline leaves out."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest.error_handler import ErrorSchema
from marshmallow import fields, validate

from socialapp.api import limits
from socialapp.api.accounts import UserSchema, user_id_from_path
from socialapp.api.auth import BEARER, caller_id, components
from socialapp.api.base import Blueprint
from socialapp.api.fields import PageArgs
from socialapp.api.graph import UserPageSchema
from socialapp.rendering import UtcDateTime
from socialapp.services import filters

blp = Blueprint("filters", __name__, url_prefix="/v1", description="Blocks and mutes")

UNKNOWN = {"description": "Unknown user"}
YOURSELF = {"description": "Blocking or muting yourself"}


class MuteSchema(ma.Schema):
    duration = fields.Integer(
        strict=True,
        load_default=0,
        validate=validate.Range(min=0, max=filters.MAX_MUTE_SECONDS),
        metadata={"description": "Seconds until the mute ends by itself; 0: until unmuted."},
    )
    notifications = fields.Boolean(
        load_default=True, metadata={"description": "Mute their notifications too."}
    )


class MutedUserSchema(UserSchema):
    mute_expires_at = UtcDateTime(allow_none=True)


class MutedPageSchema(ma.Schema):
    items = fields.List(fields.Nested(MutedUserSchema))
    next_cursor = fields.String(allow_none=True)


def _changes_filter(*errors: int):
    """The responses of a block's or mute's change: 204, 404 for an unknown user, 422 for
    yourself, and ``errors`` (one stack for the four routes)."""

    def decorate(view):
        view = blp.errors(*errors)(view)
        view = blp.alt_response(422, schema=ErrorSchema, **YOURSELF)(view)
        view = blp.alt_response(404, schema=ErrorSchema, **UNKNOWN)(view)
        return blp.response(204)(view)

    return decorate


@blp.route("/me/blocks/<user_id>")
class Block(MethodView):
    @limits.writes
    @blp.doc(**BEARER)
    @_changes_filter(401, 429, 503)
    def put(self, user_id):
        """Block a user (idempotent): each of you leaves the other's home, and the follows
        between you end"""
        c = components()
        filters.block(c.uow, c.fanout, caller_id(), user_id_from_path(user_id), c.notifier)

    @limits.writes
    @blp.doc(**BEARER)
    @_changes_filter(401, 429, 503)
    def delete(self, user_id):
        """Unblock a user (idempotent; restores no follow)"""
        c = components()
        filters.unblock(c.uow, c.fanout, caller_id(), user_id_from_path(user_id))


@blp.route("/me/mutes/<user_id>")
class Mute(MethodView):
    @limits.writes
    @blp.doc(**BEARER)
    @blp.arguments(MuteSchema)
    @_changes_filter(400, 401, 413, 429, 503)
    def put(self, body, user_id):
        """Mute a user (again: the new duration replaces the old); you keep following them"""
        c = components()
        filters.mute(c.uow, c.fanout, caller_id(), user_id_from_path(user_id), **body)

    @limits.writes
    @blp.doc(**BEARER)
    @_changes_filter(401, 429, 503)
    def delete(self, user_id):
        """Unmute a user (idempotent): their posts are back in your home"""
        c = components()
        filters.unmute(c.uow, c.fanout, caller_id(), user_id_from_path(user_id))


@blp.route("/me/blocks")
class Blocks(MethodView):
    @blp.doc(**BEARER)
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, UserPageSchema)
    @blp.errors(401, 503)
    def get(self, args):
        """Whom you block, page by page"""
        c = components()
        items, next_cursor = filters.blocked_page(c.users, c.filters, caller_id(), **args)
        return {"items": items, "next_cursor": next_cursor}


@blp.route("/me/mutes")
class Mutes(MethodView):
    @blp.doc(**BEARER)
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, MutedPageSchema)
    @blp.errors(401, 503)
    def get(self, args):
        """Whom you mute now, with when each mute ends, page by page"""
        c = components()
        items, next_cursor = filters.muted_page(c.users, c.filters, caller_id(), **args)
        return {"items": items, "next_cursor": next_cursor}
