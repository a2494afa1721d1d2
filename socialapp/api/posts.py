"""Posts, likes and comments."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest.error_handler import ErrorSchema
from marshmallow import fields, validate

from socialapp.api import limits
from socialapp.api.accounts import user_id_from_path
from socialapp.api.auth import BEARER, SIGNED_IN_OPTIONAL, caller_id, components, viewer
from socialapp.api.base import Blueprint, authenticated
from socialapp.api.fields import FullMatch, Text, id_from_path, page_limit
from socialapp.rendering import CommentSchema, Id, PostSchema, with_original, without_comments_by
from socialapp.services import boosts, filters, posts

blp = Blueprint("posts", __name__, url_prefix="/v1", description="Posts, likes and comments")


def _not_blank(text: str) -> None:
    if not text.strip():
        raise ma.ValidationError("Text must not be blank.")


class NewTextSchema(ma.Schema):
    text = Text(required=True, validate=[validate.Length(min=1, max=500), _not_blank])


class IdempotencyHeaders(ma.Schema):
    idempotency_key = fields.String(
        data_key="Idempotency-Key",
        load_default=None,
        validate=FullMatch(r"[!-~]{1,100}", error="1 to 100 visible ASCII characters."),
        metadata={
            "description": "Any unique string per create. Repeating a request with the same "
            "key within 24 h returns what the first one made instead of making another."
        },
    )


class PostPageSchema(ma.Schema):
    items = fields.List(fields.Nested(PostSchema))
    next_max_id = Id(allow_none=True)


class CommentPageSchema(ma.Schema):
    items = fields.List(fields.Nested(CommentSchema))
    next_cursor = fields.String(allow_none=True)


class PostPageArgs(ma.Schema):
    limit = page_limit()
    max_id = Id(load_default=None)


class Cursor(fields.String):
    """A comment cursor: an opaque string on the wire, the last position seen inside."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if not text.isascii() or not text.isdigit() or len(text) > 15:
            raise ma.ValidationError("Not a valid cursor.")
        return int(text)


class CommentPageArgs(ma.Schema):
    limit = page_limit()
    cursor = Cursor(attribute="after_seq", load_default=0)


# A public read with a user's token is that user's view: nothing by whom they block, who
# blocks them or whom they mute (the home's rules), and 404 for a post of an account that
# blocks them, as the Mastodon API answers.
VIEWER_DOC = {
    **SIGNED_IN_OPTIONAL,
    "description": "Signed in, you see no post of an account that blocks you (404), no "
    "comment by an account you block, that blocks you or that you mute, and no boost of "
    "their posts on an account's page.",
}
POST_NOT_FOUND = "post not found"


def post_id_from_path(raw: str) -> int:
    return id_from_path(raw, "post")


def viewer_id() -> int | None:
    """The reader of a public page: the caller with a user's token (a bad one is 401),
    None without a token or with an app's."""
    return viewer("read:statuses")


@blp.route("/posts")
class Posts(MethodView):
    @limits.writes
    @authenticated
    @blp.arguments(NewTextSchema)
    @blp.arguments(IdempotencyHeaders, location="headers")
    @blp.response(201, PostSchema)
    @blp.errors(400, 401, 413, 422, 429, 503)
    @blp.doc(**BEARER)
    def post(self, body, headers):
        """Publish a post"""
        c = components()
        key = headers["idempotency_key"]
        return posts.create_post(
            c.uow, c.fanout, c.ids, caller_id(), body["text"], key, trends=c.trends
        )


@blp.route("/posts/<post_id>")
class Post(MethodView):
    @blp.response(200, PostSchema)
    @blp.errors(401, 403, 404, 503)
    @blp.doc(**VIEWER_DOC)
    def get(self, post_id):
        """Get a post with its first comments (a boost with the post it boosts)"""
        c = components()
        reader = viewer_id()
        post = posts.get_post(c.posts, post_id_from_path(post_id))
        filters.refuse_blocked(c.filters, reader, [post], POST_NOT_FOUND)
        if post.get("boost_of"):
            post = with_original(post, boosts.boosted_post(c.uow, post["_id"]), rendered=False)
        return without_comments_by(post, filters.hidden_from(c.filters, reader))

    @limits.writes
    @blp.response(204)
    @blp.alt_response(403, schema=ErrorSchema, description="Not the author")
    @blp.errors(401, 404, 429, 503)
    @blp.doc(**BEARER)
    def delete(self, post_id):
        """Delete your own post"""
        c = components()
        user_id = caller_id()
        post_id = post_id_from_path(post_id)
        posts.delete_post(
            c.uow, c.fanout, c.post_cache, c.queue, post_id, user_id, c.notifier, c.trends
        )


@blp.route("/users/<user_id>/posts")
class UserPosts(MethodView):
    @blp.arguments(PostPageArgs, location="query")
    @blp.response(200, PostPageSchema)
    @blp.errors(401, 403, 404, 503)
    @blp.doc(**VIEWER_DOC)
    def get(self, args, user_id):
        """A user's posts, newest first"""
        c = components()
        author, reader = user_id_from_path(user_id), viewer_id()
        page, hidden = filters.account_posts(c.users, c.posts, c.filters, author, reader, **args)
        return {**page, "items": [without_comments_by(p, hidden) for p in page["items"]]}


@blp.route("/posts/<post_id>/like")
class Like(MethodView):
    @limits.writes
    @blp.response(204)
    @blp.alt_response(403, schema=ErrorSchema, description="A block stands between you")
    @blp.errors(401, 404, 429, 503)
    @blp.doc(**BEARER)
    def put(self, post_id):
        """Like a post (idempotent)"""
        c = components()
        user_id = caller_id()
        post_id = post_id_from_path(post_id)
        posts.like(c.uow, c.post_cache, post_id, user_id, c.notifier, c.trends)

    @limits.writes
    @blp.response(204)
    @blp.errors(401, 404, 429, 503)
    @blp.doc(**BEARER)
    def delete(self, post_id):
        """Take back a like (idempotent)"""
        c = components()
        user_id = caller_id()
        posts.unlike(c.uow, c.post_cache, post_id_from_path(post_id), user_id, c.notifier)


@blp.route("/posts/<post_id>/boost")
class Boost(MethodView):
    @limits.writes
    @blp.response(200, PostSchema)
    @blp.alt_response(403, schema=ErrorSchema, description="A block stands between you")
    @blp.errors(401, 404, 429, 503)
    @blp.doc(**BEARER)
    def put(self, post_id):
        """Boost a post to your followers (idempotent: the existing boost is returned)"""
        c = components()
        user_id = caller_id()
        post_id = post_id_from_path(post_id)
        made = boosts.boost(
            c.uow, c.fanout, c.post_cache, c.ids, post_id, user_id, c.notifier, c.trends
        )
        return with_original(made, boosts.boosted_post(c.uow, made["boost_of"]), rendered=False)

    @limits.writes
    @blp.response(204)
    @blp.errors(401, 404, 429, 503)
    @blp.doc(**BEARER)
    def delete(self, post_id):
        """Take back your boost (idempotent)"""
        c = components()
        user_id = caller_id()
        boosts.unboost(
            c.uow, c.fanout, c.post_cache, c.queue, post_id_from_path(post_id), user_id, c.notifier
        )


@blp.route("/posts/<post_id>/comments")
class Comments(MethodView):
    @limits.writes
    @authenticated
    @blp.arguments(NewTextSchema)
    @blp.arguments(IdempotencyHeaders, location="headers")
    @blp.response(201, CommentSchema)
    @blp.alt_response(403, schema=ErrorSchema, description="A block stands between you")
    @blp.errors(400, 401, 404, 413, 422, 429, 503)
    @blp.doc(**BEARER)
    def post(self, body, headers, post_id):
        """Comment on a post"""
        c = components()
        user_id = caller_id()
        key = headers["idempotency_key"]
        post = post_id_from_path(post_id)
        return posts.add_comment(
            c.uow, c.post_cache, c.ids, post, user_id, body["text"], key, c.notifier
        )

    @blp.arguments(CommentPageArgs, location="query")
    @blp.response(200, CommentPageSchema)
    @blp.errors(401, 403, 404, 503)
    @blp.doc(**VIEWER_DOC)
    def get(self, args, post_id):
        """Every comment of a post, oldest first, page by page"""
        c = components()
        reader, post_id = viewer_id(), post_id_from_path(post_id)
        if reader is not None:  # the post's author may block the reader
            filters.refuse_blocked(
                c.filters, reader, [posts.get_post(c.posts, post_id)], POST_NOT_FOUND
            )
        page = posts.comments_page(c.posts, post_id, args["after_seq"], args["limit"])
        return {**page, "items": filters.without_hidden(c.filters, reader, page["items"])}
