"""Hashtags: a tag, following it, and the tags you follow."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest.error_handler import ErrorSchema
from marshmallow import fields

from socialapp.api import limits
from socialapp.api.auth import BEARER, SIGNED_IN_OPTIONAL, authorized, components, viewer
from socialapp.api.base import Blueprint, authenticated
from socialapp.api.fields import PageArgs
from socialapp.services import tags

blp = Blueprint("tags", __name__, url_prefix="/v1", description="Hashtags")
NAME = "the name is looked up in its normal form (NFKC, case-folded): `Café` is `café`"
NO_TAG = {"description": "Not a tag name (empty, over 100 characters, no letter, ...)"}


class TagSchema(ma.Schema):
    name = fields.String(metadata={"description": "The normal form"})
    following = fields.Boolean(
        allow_none=True, metadata={"description": "You follow it (null: nobody signed in)"}
    )


class TagPageSchema(ma.Schema):
    items = fields.List(fields.Nested(TagSchema))
    next_cursor = fields.String(allow_none=True)


@blp.route("/tags/<name>")
class Tag(MethodView):
    @blp.doc(**SIGNED_IN_OPTIONAL, description=f"Any tag name is a tag, used or not; {NAME}.")
    @blp.response(200, TagSchema)
    @blp.alt_response(404, schema=ErrorSchema, **NO_TAG)
    @blp.errors(401, 403, 503)
    def get(self, name):
        """A hashtag, and whether you follow it"""
        return tags.show(components().tag_follows, name, viewer("read:follows", "read:statuses"))


@blp.route("/me/tags/<name>")
class FollowedTag(MethodView):
    @limits.writes
    @blp.doc(**BEARER, description=f"At most {tags.MAX_FOLLOWED} tags; {NAME}.")
    @blp.response(204)
    @blp.alt_response(404, schema=ErrorSchema, **NO_TAG)
    @blp.alt_response(422, schema=ErrorSchema, description="Following too many tags")
    @blp.errors(401, 403, 429, 503)
    def put(self, name):
        """Follow a hashtag (idempotent): posts with it will reach your home"""
        c = components()
        tags.follow(
            c.tag_follows, authorized("write:follows"), name, c.fanout.on_tag_follow_changed
        )

    @limits.writes
    @blp.doc(**BEARER)
    @blp.response(204)
    @blp.alt_response(404, schema=ErrorSchema, **NO_TAG)
    @blp.errors(401, 403, 429, 503)
    def delete(self, name):
        """Unfollow a hashtag (idempotent)"""
        c = components()
        me = authorized("write:follows")
        tags.unfollow(c.tag_follows, me, name, c.fanout.on_tag_follow_changed)


@blp.route("/me/tags")
class FollowedTags(MethodView):
    @authenticated
    @blp.doc(**BEARER)
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, TagPageSchema)
    @blp.errors(401, 403, 422, 503)
    def get(self, args):
        """The hashtags you follow, newest follow first, page by page"""
        me = authorized("read:follows")
        page = tags.followed_below(components().tag_follows, me, args["limit"], args["cursor"])
        return {"items": page.tags, "next_cursor": page.older}
