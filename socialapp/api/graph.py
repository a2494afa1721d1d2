"""The follow graph: follow, unfollow, followers and following."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest.error_handler import ErrorSchema
from marshmallow import fields

from socialapp.api import limits
from socialapp.api.accounts import UserSchema, user_id_from_path
from socialapp.api.auth import BEARER, SIGNED_IN_OPTIONAL, caller_id, components, viewer
from socialapp.api.base import Blueprint
from socialapp.api.fields import PageArgs
from socialapp.services import filters, graph

blp = Blueprint("graph", __name__, url_prefix="/v1", description="Follow graph")


class UserPageSchema(ma.Schema):
    items = fields.List(fields.Nested(UserSchema))
    next_cursor = fields.String(allow_none=True)


@blp.route("/me/following/<user_id>")
class Following(MethodView):
    @limits.writes
    @blp.doc(**BEARER)
    @blp.response(204)
    @blp.alt_response(404, schema=ErrorSchema, description="Unknown user")
    @blp.alt_response(422, schema=ErrorSchema, description="Following yourself")
    @blp.errors(401, 429, 503)
    def put(self, user_id):
        """Follow a user (idempotent)"""
        follower_id = caller_id()
        c = components()
        followee_id = user_id_from_path(user_id)
        graph.follow(c.uow, c.fanout, follower_id, followee_id, c.notifier)

    @limits.writes
    @blp.doc(**BEARER)
    @blp.response(204)
    @blp.errors(401, 404, 429, 503)
    def delete(self, user_id):
        """Unfollow a user (idempotent)"""
        follower_id = caller_id()
        c = components()
        followee_id = user_id_from_path(user_id)
        graph.unfollow(c.uow, c.fanout, follower_id, followee_id)


LISTS_DOC = {
    **SIGNED_IN_OPTIONAL,
    "description": "Signed in, an account that blocks you shows you an empty list, as on Mastodon.",
}


@blp.route("/users/<user_id>/followers")
class Followers(MethodView):
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, UserPageSchema)
    @blp.errors(401, 403, 404, 503)
    @blp.doc(**LISTS_DOC)
    def get(self, args, user_id):
        """Who follows a user"""
        c = components()
        return _page(c.follows.follower_ids, user_id_from_path(user_id), args)


@blp.route("/users/<user_id>/following")
class Followees(MethodView):
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, UserPageSchema)
    @blp.errors(401, 403, 404, 503)
    @blp.doc(**LISTS_DOC)
    def get(self, args, user_id):
        """Whom a user follows"""
        c = components()
        return _page(c.follows.followee_ids, user_id_from_path(user_id), args)


def _page(edges, user_id: int, args: dict) -> dict:
    """A page of the user's followers or followees (``edges``), as the reader sees it."""
    c, reader = components(), viewer("read:accounts")
    if filters.blocked_by_any(c.filters, reader, [user_id]):  # not read at all
        return {"items": [], "next_cursor": None}
    items, next_cursor = graph.edges_page(c.users, edges, user_id, **args)
    return {"items": items, "next_cursor": next_cursor}
